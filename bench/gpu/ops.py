#!/usr/bin/env python3
"""ops.py - the kernel benchmark's PyTorch side and its table.

Runs acc's harness (bench/gpu/ops.c, built by ops.sh), then for each of its
rows the PyTorch op doing the same math in the same dtype on the same shapes
and GPU, and prints one table: time per call, achieved GB/s (memory-bound
ops, against the GPU's HBM bandwidth) or TFLOP/s (GEMMs, attention), and the
ratio acc/torch (below 1: acc faster). Both sides time the median over
--iters runs of --reps calls; acc's runs are replayed CUDA graphs, torch's
are eager calls between CUDA events (for the large shapes here the launch
overhead is a few microseconds against milliseconds).

Usage: ops.py --acc-ops PATH [--tf32] [--only NAME] [--iters N] [--reps N]
              [--json FILE] [--hbm-gbps X]
"""
import argparse
import json
import subprocess
import sys


def hbm_gbps(name):
    """The data-sheet HBM bandwidth of the GPU, GB/s (0: unknown)."""
    for key, bw in (("H200", 4800), ("H100 SXM", 3350), ("H100 PCIe", 2000), ("H100", 3350),
                    ("A100-SXM4-80GB", 2039), ("A100", 1555)):
        if key in name:
            return bw
    return 0


def torch_case(torch, F, row, dev):
    """A function running the PyTorch counterpart of one acc row once."""
    name = row["case"]
    B, T, C, H, KVH, D, V, Fw = (row[k] for k in ("B", "T", "C", "H", "KVH", "D", "V", "F"))
    N = B * T
    f32 = torch.float32
    r = lambda *s: torch.rand(*s, device=dev, dtype=f32) * 2 - 1
    if name == "bias_grad":
        x = r(N, Fw)
        return lambda: x.sum(0)
    if name in ("layernorm_fwd", "layernorm_bwd"):
        x, w, b, dy = r(N, C), r(C), r(C), r(N, C)
        if name == "layernorm_fwd":
            return lambda: F.layer_norm(x, (C,), w, b)
        _, mean, rstd = torch.ops.aten.native_layer_norm(x, (C,), w, b, 1e-5)
        return lambda: torch.ops.aten.native_layer_norm_backward(dy, x, (C,), mean, rstd, w, b, [True, True, True])
    if name in ("rmsnorm_fwd", "rmsnorm_bwd"):
        x, w, dy = r(N, C), r(C), r(N, C)
        rms = (lambda a, ww: F.rms_norm(a, (C,), ww, 1e-5)) if hasattr(F, "rms_norm") else \
            (lambda a, ww: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-5) * ww)
        if name == "rmsnorm_fwd":
            return lambda: rms(x, w)
        x.requires_grad_(True), w.requires_grad_(True)
        y = rms(x, w)
        return lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True)
    if name == "softmax_fwd":
        x = r(N, T)
        return lambda: torch.softmax(x, -1)
    if name == "softmax_bwd":
        x, dy = r(N, T), r(N, T)
        y = torch.softmax(x, -1)
        return lambda: torch.ops.aten._softmax_backward_data(dy, y, -1, f32)
    if name in ("xent_fwd", "xent_bwd"):
        logits, tg = r(N, V), torch.randint(0, V, (N,), device=dev)
        if name == "xent_fwd":
            return lambda: F.cross_entropy(logits, tg)
        logits.requires_grad_(True)
        loss = F.cross_entropy(logits, tg)
        return lambda: torch.autograd.grad(loss, logits, retain_graph=True)
    if name == "adamw":
        p = torch.nn.Parameter(r(124439808))
        p.grad = r(124439808)
        opt = torch.optim.AdamW([p], lr=1e-4, weight_decay=0.0, fused=True)
        return opt.step
    if name in ("embedding_fwd", "embedding_bwd"):
        idx, table, dout = torch.randint(0, V, (N,), device=dev), r(V, C), r(N, C)
        if name == "embedding_fwd":
            return lambda: F.embedding(idx, table)
        return lambda: torch.ops.aten.embedding_dense_backward(dout, idx, V, -1, False)
    if name == "gelu_fwd":
        x = r(N, Fw)
        return lambda: F.gelu(x, approximate="tanh")
    if name == "gelu_bwd":
        x, dy = r(N, Fw), r(N, Fw)
        return lambda: torch.ops.aten.gelu_backward(dy, x, approximate="tanh")
    if name == "bias_residual":
        x, b, res = r(N, C), r(C), r(N, C)
        return lambda: x + b + res
    if name == "dropout_fwd":
        x = r(N, C)
        return lambda: F.dropout(x, 0.1, training=True)
    if name in ("attention_fwd", "attention_bwd"):
        q, k, v, do = r(B, H, T, D), r(B, KVH, T, D), r(B, KVH, T, D), r(B, H, T, D)
        gqa = KVH != H
        try:
            F.scaled_dot_product_attention(q[:, :, :2], k[:, :, :2], v[:, :, :2], is_causal=True, enable_gqa=gqa)
            sdpa = lambda a, b_, c: F.scaled_dot_product_attention(a, b_, c, is_causal=True, enable_gqa=gqa)
        except TypeError:  # a torch without enable_gqa: heads repeated outside the timed call
            k, v = k.repeat_interleave(H // KVH, 1), v.repeat_interleave(H // KVH, 1)
            sdpa = lambda a, b_, c: F.scaled_dot_product_attention(a, b_, c, is_causal=True)
        if name == "attention_fwd":
            return lambda: sdpa(q, k, v)
        for t in (q, k, v):
            t.requires_grad_(True)
        out = sdpa(q, k, v)
        return lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
    if name == "matmul_fwd":
        x, w = r(N, C), r(C, Fw)
        return lambda: x @ w
    if name == "matmul_bwd":
        x, w, dout = r(N, C), r(C, Fw), r(N, Fw)
        return lambda: (dout @ w.t(), x.t() @ dout)
    if name == "linear_fwd":
        x, w, b = r(N, C), r(C, Fw), r(Fw)
        return lambda: torch.addmm(b, x, w)
    if name == "linear_bwd":
        x, w, dout = r(N, C), r(C, Fw), r(N, Fw)
        return lambda: (dout @ w.t(), x.t() @ dout, dout.sum(0))
    if name == "rope_fwd":
        x = r(B, T, H, D)
        half = D // 2
        freq = 10000.0 ** (-2.0 * torch.arange(half, device=dev, dtype=torch.float64) / D)
        ang = torch.arange(T, device=dev, dtype=torch.float64)[:, None] * freq[None, :]
        cs, sn = ang.cos().float()[None, :, None, :], ang.sin().float()[None, :, None, :]

        def rope():
            x1, x2 = x[..., :half], x[..., half:]
            return torch.cat((x1 * cs - x2 * sn, x2 * cs + x1 * sn), -1)
        return rope
    raise SystemExit(f"ops.py: no PyTorch counterpart for case {name!r}")


def time_torch(torch, fn, iters, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / reps)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--acc-ops", required=True)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json")
    ap.add_argument("--hbm-gbps", type=float, default=0)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("no GPU: skipped (PyTorch is not installed)")
        return 0
    if not torch.cuda.is_available():
        print("no GPU: skipped (PyTorch sees no CUDA device)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    gpu = torch.cuda.get_device_name(0)
    bw = a.hbm_gbps or hbm_gbps(gpu)
    print(f"GPU {gpu}, HBM {bw or 'unknown'} GB/s; torch {torch.__version__}; float32{' (TF32 GEMMs)' if a.tf32 else ''}")
    cmd = [a.acc_ops, "--iters", str(a.iters), "--reps", str(a.reps)] + (["--tf32"] if a.tf32 else []) + \
        (["--only", a.only] if a.only else [])
    res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode:
        print(f"ops.py: the acc harness failed (exit {res.returncode})", file=sys.stderr)
    hdr = f"{'case':<15} {'model':<6} {'acc ms':>9} {'torch ms':>9} {'acc/torch':>9} {'acc':>13} {'torch':>13} {'acc %HBM':>8}"
    print(hdr)
    print("-" * len(hdr))
    worst = 0.0
    for row in rows:
        fn = torch_case(torch, F, row, "cuda")
        t = time_torch(torch, fn, a.iters, a.reps)
        del fn
        torch.cuda.empty_cache()
        row["torch_ms"], row["ratio"] = t, row["ms"] / t
        worst = max(worst, row["ratio"])
        if row["flops"]:
            unit, acc_rate, torch_rate = "TFLOP/s", row["flops"] / row["ms"] * 1e-9, row["flops"] / t * 1e-9
        else:
            unit, acc_rate, torch_rate = "GB/s", row["bytes"] / row["ms"] * 1e-6, row["bytes"] / t * 1e-6
        hbm = f"{100 * row['bytes'] / row['ms'] * 1e-6 / bw:.0f}%" if bw and not row["flops"] else ""
        print(f"{row['case']:<15} {row['model']:<6} {row['ms']:9.4f} {t:9.4f} {row['ratio']:9.2f} "
              f"{acc_rate:7.1f} {unit:<5} {torch_rate:7.1f} {unit:<5} {hbm:>8}")
    print(f"worst acc/torch ratio {worst:.2f} (target: every kernel within 1.5x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "tf32": a.tf32, "rows": rows}, f, indent=1)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
