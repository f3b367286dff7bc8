"""train.py - examples/train.c in Python: trains a small byte-level GPT
through the acc package (python/acc) over a library from `acc compile
--shared`, printing the loss, tokens/s and the memory the step holds.

It shows the calls of a training loop: byte-level data from a text file (or
a corpus generated reproducibly: lines of arithmetic, "417+38=455\\n"), a
train/held-out split, gradient accumulation over micro-batches
(forward_backward with accumulate), global-norm gradient clipping
(clip_grad_norm), a learning rate set per update (linear warmup, cosine
decay; adamw takes it per call), an evaluation loss on a held-out batch
(forward: the forward alone, dropout off) and a checkpoint of the parameters
saved and resumed (acc's tensor format, the file <model>_save_params writes;
the AdamW moments are not in it and restart from zero on resume).

Usage:
  python3 examples/train.py [--lib DIR] [--steps N] [--lr LR] [--accum N]
      [--clip X] [--warmup W] [--eval K] [--data FILE] [--save PATH]
      [--resume PATH] [--compile ACC] [--defines "-D V=256 ..."]
DIR (default out/tiny-py) holds lib<model>.so; when it does not, the model
models/gpt2.acdsl is compiled there for the cpu target with --shared by ACC
(default build/acc, else acc on the PATH) with --defines (a small
byte-level GPT). The model must
have byte-level tokens (V = 256) and inputs idx and targets of shape (B, T).
"""
import argparse
import math
import os
import subprocess
import sys
import time

import numpy as np

# the package and the model beside this file: python/ and models/ of the
# repository (examples/..) or of an installed share/acc
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = next((r for r in (os.path.join(HERE, ".."), HERE) if os.path.isdir(os.path.join(r, "python", "acc"))), None)
if ROOT:
    sys.path.insert(0, os.path.join(ROOT, "python"))
import acc  # noqa: E402  (else an installed one: pip install ./python)

DEFINES = "-D V=256 -D L=4 -D C=128 -D H=4 -D T=64 -D B=8"


def make_corpus(n, rng):
    """n bytes of "a+b=c" lines with a, b < 1000."""
    a, b = rng.integers(0, 1000, (2, n // 6 + 1))  # a line is at least 6 bytes
    text = "".join(f"{x}+{y}={x + y}\n" for x, y in zip(a.tolist(), b.tolist()))
    return np.frombuffer(text.encode(), dtype=np.uint8)[:n]


def sample(data, lo, hi, B, T, rng):
    """B windows of T + 1 bytes from data[lo:hi]: inputs and next-byte targets."""
    starts = rng.integers(lo, hi - T - 1, B)
    windows = np.stack([data[s:s + T + 1] for s in starts]).astype(np.int32)
    return windows[:, :-1], windows[:, 1:]


def lr_at(s, n, warmup, lr):
    """Linear warmup over `warmup` updates to lr, then a cosine decay to lr / 10
    at the last update (train.c's schedule)."""
    if s < warmup:
        return lr * (s + 1) / warmup
    done = (s - warmup) / (n - warmup - 1) if n - warmup > 1 else 1.0
    return 0.1 * lr + 0.45 * lr * (1.0 + math.cos(math.pi * done))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default="out/tiny-py", help="directory of `acc compile --shared`")
    ap.add_argument("--steps", type=int, default=300, help="optimizer updates")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per update")
    ap.add_argument("--clip", type=float, default=0.0, help="gradient norm limit (0: none)")
    ap.add_argument("--warmup", type=int, default=-1, help="warmup updates (default steps / 10)")
    ap.add_argument("--eval", type=int, default=25, help="updates between evaluations (0: none)")
    ap.add_argument("--data", help="a text file to train on (default: generated arithmetic)")
    ap.add_argument("--save", help="write the parameters there at the end (and at each evaluation)")
    ap.add_argument("--resume", help="start from these parameters instead of the initializers")
    ap.add_argument("--seed", type=int, default=1234, help="data and parameter seed")
    ap.add_argument("--compile", default="build/acc" if os.path.isfile("build/acc") else "acc",
                    help="the acc that compiles the model when --lib has none (default build/acc, else acc)")
    ap.add_argument("--defines", default=DEFINES, help="its -D hyperparameters")
    a = ap.parse_args()
    if a.steps < 1 or a.accum < 1 or a.clip < 0:
        ap.error("--steps and --accum must be >= 1 and --clip >= 0")
    warmup = a.warmup if a.warmup >= 0 else a.steps // 10

    have = os.listdir(a.lib) if os.path.isdir(a.lib) else []
    if not any(f.startswith("lib") and f.endswith(".so") for f in have):
        model = os.path.join(ROOT or ".", "models", "gpt2.acdsl")
        cmd = [a.compile, "compile", os.path.relpath(model), "--target", "cpu", *a.defines.split(), "--budget", "1G",
               "--shared", "-o", a.lib]
        print("train: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    m = acc.load(a.lib)
    if len(m.inputs.get("idx", ("", ()))[1]) != 2 or "targets" not in m.inputs:
        sys.exit("train: the library has no inputs idx and targets of shape (B, T)")
    B, T = m.inputs["idx"][1]
    if a.resume:
        m.load(a.resume)
        print(f"train: resumed from {a.resume}")
    else:
        m.init_params(42)

    rng = np.random.default_rng(a.seed)
    if a.data:
        with open(a.data, "rb") as f:
            data = np.frombuffer(f.read(), dtype=np.uint8)
    else:
        data = make_corpus(1 << 20, rng)
    n = len(data)
    split = n // 10 * 9
    if split - T - 1 < 1 or n - split - T - 1 < 1:
        sys.exit(f"train: {n} bytes of data are too few for windows of {T + 1}")
    eval_idx, eval_tgt = sample(data, split, n, B, T, rng)  # the same held-out batch every evaluation
    print(f"train: model {m.name} ({m.target}), B={B} T={T}, {a.accum} micro-batch{'es' if a.accum > 1 else ''} "
          f"per update, arena {m.arena_bytes / 2**20:.1f} MiB, data {n} bytes")

    t0, first, last = time.perf_counter(), 0.0, 0.0
    for s in range(a.steps):
        # the gradients of `accum` micro-batches summed: the first overwrites
        # the last update's gradients, the others add to them
        loss = 0.0
        for k in range(a.accum):
            idx, tgt = sample(data, 0, split, B, T, rng)
            loss += m.forward_backward(idx=idx, targets=tgt, accumulate=k > 0) / a.accum
        # the sum of accum gradients is accum times their mean: its norm
        # limit is accum * clip (AdamW does not see the scale but for eps)
        norm = m.clip_grad_norm(a.clip * a.accum) if a.clip > 0 else 0.0
        lr = lr_at(s, a.steps, warmup, a.lr)
        m.adamw(lr, 0.9, 0.95, 1e-8, 0.0)
        first = loss if s == 0 else first
        last = loss
        if s % 25 == 0 or s == a.steps - 1:
            rate = (s + 1) * a.accum * B * T / (time.perf_counter() - t0)
            clip = f"  grad norm {norm / a.accum:.3f}" if a.clip > 0 else ""
            print(f"step {s:4d}  loss {loss:.4f}  lr {lr:.2e}{clip}  {rate:.0f} tokens/s")
        if a.eval > 0 and (s % a.eval == a.eval - 1 or s == a.steps - 1):
            print(f"step {s:4d}  eval loss {m.forward(idx=eval_idx, targets=eval_tgt):.4f} (held-out batch)")
            if a.save:
                m.save(a.save)
        sys.stdout.flush()
    if a.save:
        m.save(a.save)
        print(f"train: saved the parameters to {a.save}")
    c = m.counters()
    ms = sum(c["total_ms"].values()) / a.steps
    print(f"train: loss {first:.4f} -> {last:.4f} over {a.steps} steps; peak memory {c['peak_bytes_measured']} bytes "
          f"(planned {c['planned_peak_bytes']}); {ms:.1f} ms/step")


if __name__ == "__main__":
    main()
