#!/usr/bin/env python3
"""make_ref.py - whole-model reference gradients for acc, computed with PyTorch.

Run from the repository root:

    python3 tests/ref/make_ref.py            # (re)write every reference
    python3 tests/ref/make_ref.py gpt2 mlp   # only these references

For each reference <ref> (mlp, gpt2, llama, llama_long, unet; see MODELS)
this builds the same network as models/<model>.acdsl, written independently
from the op semantics of docs/dsl.md and runtime/cpu_kernels.h with
torch.nn.functional, at small shapes, and writes into tests/ref/:

    <ref>.params.bin    the parameters, in the model's order (the order of the
                        `param` nodes of `acc compile --emit=ir`), float32
    <ref>.inputs.bin    the inputs (int32 token ids / class labels, float32)
    <ref>.grads.bin     d loss / d parameter for every parameter, same names,
                        shapes and order as the parameters, rounded to float32
    <ref>.loss          the loss, "%.9g"
    <ref>.args          the model file and the -D arguments of acc that give
                        the same model and shapes

(tensor files in libaccrt's format: "ACCPARAM", u32 version 1, u32 count, then
per tensor u32 name length, name, u32 ndim, i64 dims[ndim], 4-byte elements,
all little-endian). tests/numeric/ref_test.sh runs `acc run --steps 1` on them
and compares; the tests never need torch.

Values: the parameters and inputs are float32 numbers (so acc sees exactly the
same model), but the reference forward and backward run in float64, so the
reference is accurate to ~1e-15 and the comparison measures acc's float32
error alone. The random numbers come from a small splitmix64 generator and
use only IEEE basic arithmetic (no libm, no torch RNG), and torch runs on one
thread, so the files regenerate byte for byte.

Initialization (not the models' own: larger, so gradients are not tiny, and
nothing is zero or one, so every term of every gradient is exercised):
matrices and embeddings normal(0, 0.2) (the MLP: 0.3), biases normal(0, 0.1),
norm weights 1 + normal(0, 0.1).
"""
import math
import os
import struct
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch without numpy is fine here
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DT = torch.float64

# ---- deterministic random numbers ------------------------------------------


class Rng:
    """splitmix64; uniform() in [0, 1) with 53 bits; normal() is the sum of
    four uniforms, centred and scaled to variance 1 (Irwin-Hall): only exact
    IEEE operations, so identical on every platform."""

    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.u64() >> 11) * (1.0 / 9007199254740992.0)

    def normal(self):
        s = self.uniform() + self.uniform() + self.uniform() + self.uniform()
        return (s - 2.0) * math.sqrt(3.0)

    def below(self, n):
        return self.u64() % n


def f32(x):
    """x rounded to the nearest float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


class Builder:
    """Collects parameters (float32-representable float64 leaf tensors with
    requires_grad, in declaration order) and inputs."""

    def __init__(self, seed):
        self.rng = Rng(seed)
        self.params = []  # (name, tensor)
        self.inputs = []  # (name, tensor)

    def _values(self, shape, mean, std):
        n = math.prod(shape)
        return torch.tensor([f32(mean + std * self.rng.normal()) for _ in range(n)], dtype=DT).reshape(shape)

    def param(self, name, shape, mean=0.0, std=0.2):
        t = self._values(shape, mean, std).requires_grad_(True)
        self.params.append((name, t))
        return t

    def matrix(self, name, shape, std=0.2):
        return self.param(name, shape, 0.0, std)

    def bias(self, name, shape):
        return self.param(name, shape, 0.0, 0.1)

    def norm_w(self, name, shape):
        return self.param(name, shape, 1.0, 0.1)

    def input_f32(self, name, shape):
        t = self._values(shape, 0.0, 1.0)
        self.inputs.append((name, t))
        return t

    def input_i32(self, name, shape, bound):
        t = torch.tensor([self.rng.below(bound) for _ in range(math.prod(shape))], dtype=torch.int32).reshape(shape)
        self.inputs.append((name, t))
        return t


# ---- ops, from the documented semantics --------------------------------------


def layernorm(x, w, b, eps=1e-5):
    # (x - mean) / sqrt(var + eps) * w + b over the last axis, biased variance
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def rmsnorm(x, w, eps):
    # x / sqrt(mean(x^2) + eps) * w over the last axis
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def gelu(x):
    # GPT-2's tanh approximation
    return F.gelu(x, approximate="tanh")


def attention(q, k, v, heads, kv_heads, causal=True):
    """softmax(q k^T / sqrt(D)) v per head; q (B, T, heads*D), k, v
    (B, S, kv_heads*D); query head h reads kv head h // (heads // kv_heads);
    causal: query t sees keys s <= t."""
    B, T, HD = q.shape
    S = k.shape[1]
    D = HD // heads
    group = heads // kv_heads
    qh = q.reshape(B, T, heads, D).transpose(1, 2)                   # B H T D
    kh = k.reshape(B, S, kv_heads, D).transpose(1, 2).repeat_interleave(group, dim=1)
    vh = v.reshape(B, S, kv_heads, D).transpose(1, 2).repeat_interleave(group, dim=1)
    s = qh @ kh.transpose(-1, -2) / math.sqrt(D)                     # B H T S
    if causal:
        mask = torch.ones(T, S, dtype=torch.bool).tril()
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return (p @ vh).transpose(1, 2).reshape(B, T, HD)


def rope(x, heads, theta):
    """Rotate-half RoPE: in each head of size D, the pair (x[i], x[i + D/2]) at
    position t (the T axis) is rotated by t * theta^(-2i/D)."""
    B, T, HD = x.shape
    D = HD // heads
    half = D // 2
    i = torch.arange(half, dtype=DT)
    freq = torch.tensor(theta, dtype=DT) ** (-2.0 * i / D)
    ang = torch.arange(T, dtype=DT)[:, None] * freq[None, :]          # T, D/2
    cos = ang.cos()[None, :, None, :]
    sin = ang.sin()[None, :, None, :]
    xh = x.reshape(B, T, heads, D)
    x1, x2 = xh[..., :half], xh[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).reshape(B, T, HD)


def cross_entropy(logits, targets):
    # mean over rows of logsumexp(row) - row[target]
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1).long(), reduction="mean")


# ---- the models ----------------------------------------------------------------
# Each builder declares the parameters in the order of models/<model>.acdsl's
# `param` nodes (acc_load_params checks every name and shape), then returns the
# loss. `hp` are the hyperparameters passed to acc with -D.


def mlp(bld, hp):
    B, D_in, hidden, classes = hp["B"], hp["D_in"], hp["hidden"], hp["classes"]
    x = bld.input_f32("x", [B, D_in])
    labels = bld.input_i32("labels", [B], classes)
    pre = []

    def dense(h, name, n_in, n_out):
        w = bld.matrix(name + ".w", [n_in, n_out], std=0.3)
        b = bld.bias(name + ".b", [n_out])
        return h @ w + b

    z1 = dense(x, "fc1", D_in, hidden)
    pre.append(z1)
    z2 = dense(F.relu(z1), "fc2", hidden, hidden)
    pre.append(z2)
    logits = dense(F.relu(z2), "out", hidden, classes)
    # relu has a kink at 0: a pre-activation within float32 noise of 0 could
    # take the other branch in acc. Keep them all clearly away from it.
    margin = min(float(z.detach().abs().min()) for z in pre)
    assert margin > 1e-3, "relu input %g too close to 0; change the seed" % margin
    return cross_entropy(logits, labels)


def gpt2(bld, hp):
    B, T, V, C, L, H = hp["B"], hp["T"], hp["V"], hp["C"], hp["L"], hp["H"]
    assert hp["P"] == 0.0
    idx = bld.input_i32("idx", [B, T], V)
    targets = bld.input_i32("targets", [B, T], V)
    wte = bld.matrix("wte", [V, C])
    wpe = bld.matrix("wpe", [T, C])
    x = wte[idx.long()] + wpe                     # dropout p=0: the identity
    for l in range(L):
        s = "layers.%d." % l
        ln1_w, ln1_b = bld.norm_w(s + "ln1_w", [C]), bld.bias(s + "ln1_b", [C])
        ln2_w, ln2_b = bld.norm_w(s + "ln2_w", [C]), bld.bias(s + "ln2_b", [C])
        # attn
        qkv_w, qkv_b = bld.matrix(s + "attn.qkv_w", [C, 3 * C]), bld.bias(s + "attn.qkv_b", [3 * C])
        aproj_w, aproj_b = bld.matrix(s + "attn.proj_w", [C, C]), bld.bias(s + "attn.proj_b", [C])
        qkv = layernorm(x, ln1_w, ln1_b) @ qkv_w + qkv_b
        q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        x = x + (attention(q, k, v, H, H) @ aproj_w + aproj_b)
        # mlp
        fc_w, fc_b = bld.matrix(s + "mlp.fc_w", [C, 4 * C]), bld.bias(s + "mlp.fc_b", [4 * C])
        mproj_w, mproj_b = bld.matrix(s + "mlp.proj_w", [4 * C, C]), bld.bias(s + "mlp.proj_b", [C])
        hdn = gelu(layernorm(x, ln2_w, ln2_b) @ fc_w + fc_b)
        x = x + (hdn @ mproj_w + mproj_b)
    lnf_w, lnf_b = bld.norm_w("lnf_w", [C]), bld.bias("lnf_b", [C])
    logits = layernorm(x, lnf_w, lnf_b) @ wte.t()  # tied head
    return cross_entropy(logits, targets)


def llama(bld, hp):
    B, T, V, C, L, H, KVH, Fw = hp["B"], hp["T"], hp["V"], hp["C"], hp["L"], hp["H"], hp["KVH"], hp["F"]
    eps, theta = hp["EPS"], hp["THETA"]
    D = C // H
    idx = bld.input_i32("idx", [B, T], V)
    targets = bld.input_i32("targets", [B, T], V)
    emb = bld.matrix("tok_embeddings", [V, C])
    x = emb[idx.long()]
    for l in range(L):
        s = "layers.%d." % l
        attn_norm = bld.norm_w(s + "attn_norm", [C])
        ffn_norm = bld.norm_w(s + "ffn_norm", [C])
        wq = bld.matrix(s + "attn.wq", [C, H * D])
        wk = bld.matrix(s + "attn.wk", [C, KVH * D])
        wv = bld.matrix(s + "attn.wv", [C, KVH * D])
        wo = bld.matrix(s + "attn.wo", [H * D, C])
        a_in = rmsnorm(x, attn_norm, eps)
        q = rope(a_in @ wq, H, theta)
        k = rope(a_in @ wk, KVH, theta)
        v = a_in @ wv
        x = x + attention(q, k, v, H, KVH) @ wo
        w_gate = bld.matrix(s + "mlp.w_gate", [C, Fw])
        w_up = bld.matrix(s + "mlp.w_up", [C, Fw])
        w_down = bld.matrix(s + "mlp.w_down", [Fw, C])
        m_in = rmsnorm(x, ffn_norm, eps)
        x = x + (F.silu(m_in @ w_gate) * (m_in @ w_up)) @ w_down
    norm = bld.norm_w("norm", [C])
    output = bld.matrix("output", [C, V])
    logits = rmsnorm(x, norm, eps) @ output
    return cross_entropy(logits, targets)


def unet(bld, hp):
    B, N, C0, E = hp["B"], hp["N"], hp["C0"], hp["E"]
    x = bld.input_f32("x", [B, N, C0])
    target = bld.input_f32("target", [B, N, C0])

    def res(h, name, c):
        ln_w, ln_b = bld.norm_w(name + ".ln_w", [c]), bld.bias(name + ".ln_b", [c])
        w1, b1 = bld.matrix(name + ".w1", [c, E * c]), bld.bias(name + ".b1", [E * c])
        w2, b2 = bld.matrix(name + ".w2", [E * c, c]), bld.bias(name + ".b2", [c])
        u = gelu(layernorm(h, ln_w, ln_b) @ w1 + b1)
        return h + u @ w2 + b2

    def down(h, name, n, c):
        w, b = bld.matrix(name + ".w", [2 * c, 2 * c]), bld.bias(name + ".b", [2 * c])
        return h.reshape(B, n // 2, 2 * c) @ w + b   # neighbouring positions side by side

    def up(h, skip, name, n, c):
        w, b = bld.matrix(name + ".w", [2 * c, 2 * c]), bld.bias(name + ".b", [2 * c])
        fuse_w, fuse_b = bld.matrix(name + ".fuse_w", [2 * c, c]), bld.bias(name + ".fuse_b", [c])
        unpaired = (h @ w + b).reshape(B, n, c)
        return torch.cat([unpaired, skip], dim=-1) @ fuse_w + fuse_b

    stem_w, stem_b = bld.matrix("stem_w", [C0, C0]), bld.bias("stem_b", [C0])
    h = x @ stem_w + stem_b
    s0 = res(h, "enc0", C0)
    h = down(s0, "down0", N, C0)
    s1 = res(h, "enc1", 2 * C0)
    h = down(s1, "down1", N // 2, 2 * C0)
    s2 = res(h, "enc2", 4 * C0)
    h = down(s2, "down2", N // 4, 4 * C0)
    h = res(h, "mid0", 8 * C0)
    h = res(h, "mid1", 8 * C0)
    h = up(h, s2, "up2", N // 4, 4 * C0)
    h = res(h, "dec2", 4 * C0)
    h = up(h, s1, "up1", N // 2, 2 * C0)
    h = res(h, "dec1", 2 * C0)
    h = up(h, s0, "up0", N, C0)
    h = res(h, "dec0", C0)
    head_ln_w, head_ln_b = bld.norm_w("head_ln_w", [C0]), bld.bias("head_ln_b", [C0])
    head_w, head_b = bld.matrix("head_w", [C0, C0]), bld.bias("head_b", [C0])
    y = layernorm(h, head_ln_w, head_ln_b) @ head_w + head_b
    err = y - target
    return (err * err).mean()


# reference name -> (builder, model file, hyperparameters (all passed to acc
# with -D), seed). The *_long variants exercise what the small shapes do not:
# attention over several key blocks of the flash kernel (64 keys each, the last
# one partial), grouped-query attention with one kv head, non-default RoPE
# theta and RMSNorm eps, and every row kernel above the size where it goes
# multithreaded (32768 elements of work).
MODELS = {
    "mlp": (mlp, "models/mlp.acdsl", {"B": 8, "D_in": 24, "hidden": 16, "classes": 5}, 101),
    "gpt2": (gpt2, "models/gpt2.acdsl", {"B": 2, "T": 16, "V": 64, "C": 32, "L": 2, "H": 4, "P": 0.0}, 202),
    "llama": (llama, "models/llama.acdsl", {"B": 2, "T": 16, "V": 64, "C": 32, "L": 2, "H": 4, "KVH": 2, "F": 64,
                                            "EPS": 1e-5, "THETA": 10000.0}, 303),
    "llama_long": (llama, "models/llama.acdsl", {"B": 8, "T": 160, "V": 64, "C": 32, "L": 2, "H": 4, "KVH": 1,
                                                 "F": 64, "EPS": 1e-6, "THETA": 500000.0}, 505),
    "unet": (unet, "models/unet.acdsl", {"B": 2, "N": 16, "C0": 4, "E": 2}, 404),
}

# ---- output ---------------------------------------------------------------------


def write_tensors(path, tensors):
    out = bytearray(b"ACCPARAM")
    out += struct.pack("<II", 1, len(tensors))
    for name, t in tensors:
        nb = name.encode("ascii")
        out += struct.pack("<I", len(nb)) + nb
        out += struct.pack("<I", t.dim()) + struct.pack("<%dq" % t.dim(), *t.shape)
        vals = t.detach().reshape(-1).tolist()
        fmt = "<%di" % len(vals) if t.dtype == torch.int32 else "<%df" % len(vals)
        out += struct.pack(fmt, *vals)
    with open(path, "wb") as f:
        f.write(out)
    return len(out)


def hp_value(v):
    return repr(v) if isinstance(v, float) else str(v)


def make(name):
    fn, src, hp, seed = MODELS[name]
    bld = Builder(seed)
    loss = fn(bld, hp)
    loss.backward()
    base = os.path.join(HERE, name)
    sizes = [
        write_tensors(base + ".params.bin", bld.params),
        write_tensors(base + ".inputs.bin", bld.inputs),
        write_tensors(base + ".grads.bin", [(n, p.grad) for n, p in bld.params]),
    ]
    with open(base + ".loss", "w") as f:
        f.write("%.9g\n" % loss.item())
    args = " ".join([src] + ["-D %s=%s" % (k, hp_value(v)) for k, v in hp.items()])
    with open(base + ".args", "w") as f:
        f.write(args + "\n")
    nparam = sum(p.numel() for _, p in bld.params)
    gmax = max(float(p.grad.abs().max()) for _, p in bld.params)
    print("%s: %s" % (name, args))
    print("  loss %.9g; %d parameters in %d tensors, max |grad| %.3g; files %s bytes"
          % (loss.item(), nparam, len(bld.params), gmax, "/".join(map(str, sizes))))


def main():
    torch.set_num_threads(1)
    names = sys.argv[1:] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit("make_ref.py: unknown model '%s' (known: %s)" % (n, ", ".join(MODELS)))
    for n in names:
        make(n)


if __name__ == "__main__":
    main()
