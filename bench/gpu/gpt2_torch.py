#!/usr/bin/env python3
"""gpt2_torch.py - the PyTorch side of bench/gpu: models/gpt2.acdsl written in
PyTorch, trained step by step in a child process of run.py.

    python3 bench/gpu/gpt2_torch.py CONFIG_JSON     (run.py does this)

The model is the same math as models/gpt2.acdsl (and as tests/ref/make_ref.py's
gpt2, which tests acc's gradients): pre-LN GPT-2; x = wte[idx] + wpe (dropout
with p = 0 is the identity and is left out); per layer
x += attn(layernorm(x)), x += mlp(layernorm(x)); attention: qkv = x W + b split
into q, k, v, causal softmax(q k^T / sqrt(C/H)) v per head, then a projection;
mlp: gelu_tanh(x W_fc + b) W_proj + b; a final layernorm (eps 1e-5 everywhere);
logits = lnf wte^T (the token embedding is TIED to the output projection, as
in the DSL); mean cross-entropy. Weights are stored as the DSL stores them,
(in, out), and applied with torch.addmm (one GEMM with the bias, as nn.Linear
does). float32 parameters and activations.

The initialization follows the DSL's scheme (matrices normal(0.02), the two
residual projections normal(0.02 / sqrt(2L)), wpe normal(0.01), biases 0,
norm weights 1) with torch's generator: the same shapes, not the same numbers,
which timing does not care about. The data is run_main.c's token chain
(c[k+1] = (5 c[k] + 3) mod V from c = 1; targets one position later), the same
batch every step. The optimizer is acc run's: AdamW, lr 1e-3, betas 0.9/0.999,
eps 1e-8, weight decay 0, over every parameter.

Checkpointing policies (cfg["policy"]):
  none       plain eager autograd: every activation is kept
  full       torch.utils.checkpoint (non-reentrant) around every transformer block
  every:K    the same around blocks 0, K, 2K, ... (K = 2: every other block)
  compile:F  torch.compile of the loss function with
             torch._functorch.config.activation_memory_budget = F (the
             min-cut partitioner's knapsack; 1.0 = its default partition).
             Reported as skipped if this torch has no such knob or the
             compilation fails.

The child prints one JSON line: per-step times, losses, peak memory
(torch.cuda.max_memory_allocated / max_memory_reserved on a GPU; on the CPU
the process's RSS high-water mark, which is not comparable with acc's arena),
or {"skipped": reason} / {"error": reason}.
"""
import ctypes
import json
import math
import os
import struct
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def token_chain(n, start, bound):
    """run_main.c's synthetic tokens: input number `start` begins `start` links in."""
    c = 1 % bound
    for _ in range(start):
        c = (5 * c + 3) % bound
    out = []
    for _ in range(n):
        out.append(c)
        c = (5 * c + 3) % bound
    return out


class GPT2(torch.nn.Module):
    def __init__(self, B, T, V, C, L, H, policy="none", attention="sdpa"):
        super().__init__()
        self.B, self.T, self.V, self.C, self.L, self.H = B, T, V, C, L, H
        self.attention = attention
        self.ckpt = [False] * L
        if policy == "full":
            self.ckpt = [True] * L
        elif policy.startswith("every:"):
            k = int(policy.split(":", 1)[1])
            self.ckpt = [l % k == 0 for l in range(L)]
        P = torch.nn.Parameter

        def normal(shape, std):
            return P(torch.randn(shape) * std)

        self.wte = normal((V, C), 0.02)
        self.wpe = normal((T, C), 0.01)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.ln1_w, b.ln1_b = P(torch.ones(C)), P(torch.zeros(C))
            b.ln2_w, b.ln2_b = P(torch.ones(C)), P(torch.zeros(C))
            b.qkv_w, b.qkv_b = normal((C, 3 * C), 0.02), P(torch.zeros(3 * C))
            b.aproj_w, b.aproj_b = normal((C, C), 0.02 / math.sqrt(2 * L)), P(torch.zeros(C))
            b.fc_w, b.fc_b = normal((C, 4 * C), 0.02), P(torch.zeros(4 * C))
            b.mproj_w, b.mproj_b = normal((4 * C, C), 0.02 / math.sqrt(2 * L)), P(torch.zeros(C))
            self.blocks.append(b)
        self.lnf_w, self.lnf_b = P(torch.ones(C)), P(torch.zeros(C))

    def acc_params(self):
        """(name, tensor) in models/gpt2.acdsl's parameter order and names."""
        out = [("wte", self.wte), ("wpe", self.wpe)]
        for l, b in enumerate(self.blocks):
            s = "layers.%d." % l
            out += [(s + "ln1_w", b.ln1_w), (s + "ln1_b", b.ln1_b), (s + "ln2_w", b.ln2_w), (s + "ln2_b", b.ln2_b),
                    (s + "attn.qkv_w", b.qkv_w), (s + "attn.qkv_b", b.qkv_b),
                    (s + "attn.proj_w", b.aproj_w), (s + "attn.proj_b", b.aproj_b),
                    (s + "mlp.fc_w", b.fc_w), (s + "mlp.fc_b", b.fc_b),
                    (s + "mlp.proj_w", b.mproj_w), (s + "mlp.proj_b", b.mproj_b)]
        return out + [("lnf_w", self.lnf_w), ("lnf_b", self.lnf_b)]

    @staticmethod
    def linear(x, w, b):
        # x (..., in) @ w (in, out) + b: one GEMM with the bias (addmm)
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])

    def attend(self, q, k, v):
        B, T, C = q.shape
        H, D = self.H, C // self.H
        qh, kh, vh = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        if self.attention == "sdpa":   # fused kernel (flash / memory-efficient): no T x T matrix kept
            o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
        else:                          # plain eager: the (B, H, T, T) scores are materialized
            s = (qh @ kh.transpose(-1, -2)) / math.sqrt(D)
            mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
            o = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ vh
        return o.transpose(1, 2).reshape(B, T, C)

    def block(self, x, b):
        C = self.C
        qkv = self.linear(F.layer_norm(x, (C,), b.ln1_w, b.ln1_b, 1e-5), b.qkv_w, b.qkv_b)
        q, k, v = qkv.split(C, dim=-1)
        x = x + self.linear(self.attend(q, k, v), b.aproj_w, b.aproj_b)
        h = F.gelu(self.linear(F.layer_norm(x, (C,), b.ln2_w, b.ln2_b, 1e-5), b.fc_w, b.fc_b), approximate="tanh")
        return x + self.linear(h, b.mproj_w, b.mproj_b)

    def forward(self, idx, targets):
        x = self.wte[idx] + self.wpe
        for l, b in enumerate(self.blocks):
            if self.ckpt[l]:
                x = torch.utils.checkpoint.checkpoint(self.block, x, b, use_reentrant=False)
            else:
                x = self.block(x, b)
        lnf = F.layer_norm(x, (self.C,), self.lnf_w, self.lnf_b, 1e-5)
        logits = lnf.view(-1, self.C) @ self.wte.t()    # tied output projection
        return F.cross_entropy(logits, targets.view(-1), reduction="mean")


def write_acc_tensors(path, named):
    """libaccrt's tensor file: "ACCPARAM", u32 version 1, u32 count, then per
    tensor u32 name length, name, u32 ndim, i64 dims, 4-byte elements
    (float32, or int32 for token ids; little-endian, as on every machine this
    runs on)."""
    with open(path, "wb") as f:
        f.write(b"ACCPARAM" + struct.pack("<II", 1, len(named)))
        for name, t in named:
            t = t.detach().to("cpu", torch.int32 if not t.is_floating_point() else torch.float32).contiguous()
            f.write(struct.pack("<I", len(name)) + name.encode() + struct.pack("<I", t.dim()))
            f.write(struct.pack("<%dq" % t.dim(), *t.shape))
            f.write(ctypes.string_at(t.data_ptr(), t.numel() * 4))  # no numpy needed


def peak_rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))


def child(cfg):
    dev = torch.device(cfg["device"])
    cuda = dev.type == "cuda"
    B, T, V, C, L, H = (cfg[k] for k in "BTVCLH")
    policy = cfg["policy"]
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = cfg["tf32"]
        torch.backends.cudnn.allow_tf32 = cfg["tf32"]
    torch.set_float32_matmul_precision("high" if cfg["tf32"] else "highest")
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    torch.manual_seed(1)
    try:
        model = GPT2(B, T, V, C, L, H, "none" if policy.startswith("compile:") else policy, cfg["attention"]).to(dev)
        n = B * T
        idx = torch.tensor(token_chain(n, 0, V), dtype=torch.long, device=dev).view(B, T)
        targets = torch.tensor(token_chain(n, 1, V), dtype=torch.long, device=dev).view(B, T)
        if cfg.get("export"):  # --verify: hand acc this exact model and data
            write_acc_tensors(os.path.join(cfg["export"], "params.bin"), model.acc_params())
            write_acc_tensors(os.path.join(cfg["export"], "inputs.bin"),
                              [("idx", idx.to(torch.int32)), ("targets", targets.to(torch.int32))])
        fn = model
        if policy.startswith("compile:"):
            import torch._functorch.config as fconfig
            if not hasattr(fconfig, "activation_memory_budget"):
                print(json.dumps({"skipped": "torch %s has no torch._functorch.config.activation_memory_budget"
                                  % torch.__version__}))
                return
            fconfig.activation_memory_budget = float(policy.split(":", 1)[1])
            fn = torch.compile(model)
        kind = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[cfg["adamw"]]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, **kind)
        nparam = sum(p.numel() for p in model.parameters())
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        times, losses, phases = [], [], []
        for s in range(cfg["warmup"] + cfg["steps"]):
            if cuda:
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
            t0 = time.perf_counter()
            ph = [t0]
            mark = (lambda k: ev[k].record()) if cuda else (lambda k: ph.append(time.perf_counter()))
            if cuda:
                mark(0)
            opt.zero_grad(set_to_none=True)
            if cfg.get("precision") == "bf16":
                with torch.autocast(dev.type, dtype=torch.bfloat16):
                    loss = fn(idx, targets)
            else:
                loss = fn(idx, targets)
            mark(1)
            loss.backward()
            mark(2)
            opt.step()
            mark(3)
            losses.append(loss.item())       # one host sync per step, as acc run reads its loss
            if cuda:
                torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
            if cuda:
                phases.append([ev[0].elapsed_time(ev[1]), ev[1].elapsed_time(ev[2]), ev[2].elapsed_time(ev[3])])
            else:
                phases.append([(ph[1] - ph[0]) * 1e3, (ph[2] - ph[1]) * 1e3, (ph[3] - ph[2]) * 1e3])
    except torch.cuda.OutOfMemoryError as e:
        print(json.dumps({"error": "out of memory: %s" % str(e).split("\n")[0][:200]}))
        return
    except Exception as e:  # torch.compile failures and the like: report, do not crash the benchmark
        if policy.startswith("compile:"):
            print(json.dumps({"skipped": "torch.compile failed: %s: %s" % (type(e).__name__, str(e).split("\n")[0][:300])}))
            return
        raise
    w = cfg["warmup"]
    r = {"times_ms": times[w:], "warmup_ms": times[:w], "losses": losses, "phases_ms": phases[w:],
         "params": nparam, "torch": torch.__version__}
    if cuda:
        r["peak_bytes"] = torch.cuda.max_memory_allocated()
        r["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        r["device_name"] = torch.cuda.get_device_name()
    else:
        r["peak_bytes"] = peak_rss()
        r["threads"] = torch.get_num_threads()
    print(json.dumps(r))


if __name__ == "__main__":
    child(json.loads(sys.argv[1]))
