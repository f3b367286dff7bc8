#!/usr/bin/env python3
"""cpu_step.py - one GPT-2 training step on the CPU: acc's generated library
against PyTorch eager, side by side.

    python3 bench/cpu_step.py [--acc PATH] [--threads N] [--steps N] [--warmup W]
                              [--repeats R] [-B 4] [-T 256] [-C 768] [-L 4] [-H 12]
                              [-V 50257] [--torch-attention math|sdpa|both]
                              [--torch-adamw fused|foreach|for-loop]
                              [--precision fp32|bf16|both] [--only acc|torch] [--json FILE]

(bench/cpu_step.sh is the same with the acc binary found for you.)

What runs, on both sides:

* the same model: models/gpt2.acdsl for acc; for PyTorch the GPT-2 of
  tests/ref/make_ref.py (imported, not copied): GELU tanh form, layernorm
  eps 1e-5, causal attention scaled by 1/sqrt(D), tied embeddings,
  mean cross-entropy. Dropout p = 0. float32.
* the same initialization scheme (the acc model's: matrices normal(0.02),
  the residual projections normal(0.02/sqrt(2L)), wpe normal(0.01), biases 0,
  norm weights 1), not the same numbers (acc draws from philox).
* the same data: run_main.c's token chain (c[k+1] = (5 c[k] + 3) mod V,
  targets one position later), the same batch every step.
* the same step: zero the gradients, forward, backward, then one AdamW step
  (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0) over every parameter.
  The optimizer is INCLUDED in the step time on both sides. torch's AdamW is
  the fused CPU implementation by default (--torch-adamw; torch's own CPU
  default is the slower for-loop one).
* the same thread count: OMP_NUM_THREADS=N for the acc process (OpenMP
  kernels and OpenMP OpenBLAS), torch.set_num_threads(N) (and
  OMP_NUM_THREADS=N, MKL_NUM_THREADS=N) for torch. Default N = nproc.

Timing: each side runs in its own child process, W warm-up steps then N
timed steps; the figure is the median of the timed steps. acc's steps are
timed by this script from the arrival of run_main's per-step JSON lines
(each is printed and flushed right after the step's AdamW), torch's with
time.perf_counter around the step. With --repeats R the two sides alternate
R times (acc, torch, acc, torch, ...) and the medians are over all R*N
timed steps, so a burst of load from elsewhere hits both.

Also reported: the CPU time of each step (user + system, all threads; for
acc from /proc/PID/stat at each JSON line, 10 ms ticks; for torch
time.process_time()), median over the same steps. On a machine shared with
other work it is steadier than the wall time; with OpenMP's default active
waiting it includes spinning threads, so compare it under
OMP_WAIT_POLICY=passive.

Memory: each side's peak resident set size, the kernel's RSS high-water
mark of the process that trains: for acc ru_maxrss of the training binary
(run_main) from os.wait4, for torch getrusage(RUSAGE_SELF).ru_maxrss inside
its child (the same figure as VmHWM in /proc/self/status; os.wait4 on the
torch child would also count processes it forks). Also shown: acc's planned
arena bytes and, for torch, the RSS right after `import torch`, before any
tensor was made (the libraries' share of its peak).

--precision: fp32 (the default) or bf16 or both. bf16 is acc's
`--precision bf16` (bf16 activations and gradients, f32 master weights and
AdamW state, fp32 arithmetic) against PyTorch's CPU autocast
(torch.autocast("cpu", dtype=torch.bfloat16) around the forward; the
backward follows it; float32 parameters and AdamW). Each side's name ends in
-bf16; with `both`, acc-bf16 is also compared with acc's fp32 step.

--torch-attention: `math` is make_ref.py's attention (q k^T, causal mask,
softmax, @ v: the (B, H, T, T) score matrix is materialized, as plain eager
code does); `sdpa` replaces it with F.scaled_dot_product_attention
(is_causal=True), PyTorch's fused CPU flash attention, the faster and
leaner eager choice. `both` (the default) measures both.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def wait_rusage(proc):
    """wait for a Popen child with os.wait4; returns (returncode, ru_maxrss bytes)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_maxrss * 1024


# ---- the PyTorch side (a child process: `cpu_step.py --torch-child JSON`) -------


def torch_child(cfg):
    def vm_rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    import warnings
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    import torch.nn.functional as F
    rss_import = vm_rss()
    sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
    import make_ref  # the reference GPT-2, reused as is

    torch.set_num_threads(cfg["threads"])
    torch.manual_seed(1)
    B, T, V, C, L, H = (cfg[k] for k in "BTVCLH")
    dt = torch.float32

    if cfg["attention"] == "sdpa":
        def sdpa(q, k, v, heads, kv_heads, causal=True):
            Bq, Tq, HD = q.shape
            D = HD // heads
            qh = q.reshape(Bq, Tq, heads, D).transpose(1, 2)
            kh = k.reshape(Bq, k.shape[1], kv_heads, D).transpose(1, 2)
            vh = v.reshape(Bq, v.shape[1], kv_heads, D).transpose(1, 2)
            o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal)
            return o.transpose(1, 2).reshape(Bq, Tq, HD)
        make_ref.attention = sdpa

    class Params:
        """make_ref's Builder interface; the first forward creates the
        parameters (float32, acc's initialization for GPT-2), later ones get
        the same tensors back by name."""

        def __init__(self):
            self.t = {}
            self.inputs = {}

        def _make(self, name, shape):
            base = name.rsplit(".", 1)[-1]
            if base.endswith("_b"):
                t = torch.zeros(shape, dtype=dt)
            elif base in ("ln1_w", "ln2_w", "lnf_w"):
                t = torch.ones(shape, dtype=dt)
            else:
                std = 0.01 if base == "wpe" else 0.02
                if name.endswith("proj_w"):
                    std = 0.02 / math.sqrt(2 * L)
                t = torch.randn(shape, dtype=dt) * std
            return t.requires_grad_(True)

        def param(self, name, shape, *_):
            if name not in self.t:
                self.t[name] = self._make(name, shape)
            return self.t[name]

        matrix = bias = norm_w = param

        def input_i32(self, name, shape, bound):
            if name not in self.inputs:  # run_main.c's chain; input i starts i links later
                i = len(self.inputs)
                c = 1 % bound
                for _ in range(i):
                    c = (5 * c + 3) % bound
                vals = []
                for _ in range(math.prod(shape)):
                    vals.append(c)
                    c = (5 * c + 3) % bound
                self.inputs[name] = torch.tensor(vals, dtype=torch.int32).reshape(shape)
            return self.inputs[name]

    hp = {"B": B, "T": T, "V": V, "C": C, "L": L, "H": H, "P": 0.0}
    bld = Params()
    with torch.no_grad():
        make_ref.gpt2(bld, hp)  # creates the parameters and inputs
    params = list(bld.t.values())
    nparam = sum(p.numel() for p in params)
    kind = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[cfg["adamw"]]
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, **kind)
    times, cpus, losses, phases = [], [], [], []
    for s in range(cfg["warmup"] + cfg["steps"]):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        if cfg["precision"] == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = make_ref.gpt2(bld, hp)
        else:
            loss = make_ref.gpt2(bld, hp)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        losses.append(loss.item())
        times.append((time.perf_counter() - t0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
        phases.append([(t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3])
    with open("/proc/self/status") as f:
        hwm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
    import resource
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"times_ms": times[cfg["warmup"]:], "warmup_ms": times[:cfg["warmup"]],
                      "cpu_ms": cpus[cfg["warmup"]:], "phases_ms": phases[cfg["warmup"]:],
                      "losses": losses, "rss_after_import": rss_import, "vmhwm": hwm, "maxrss": maxrss,
                      "params": nparam, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}))


def run_torch(cfg, attention, precision):
    c = dict(cfg, attention=attention, precision=precision)
    env = dict(os.environ, OMP_NUM_THREADS=str(cfg["threads"]), MKL_NUM_THREADS=str(cfg["threads"]))
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--torch-child", json.dumps(c)],
                         stdout=subprocess.PIPE, env=env, text=True)
    out = p.stdout.read()
    rc, maxrss = wait_rusage(p)
    if rc:
        sys.exit("cpu_step: the torch child failed (%d)" % rc)
    r = json.loads(out.strip().splitlines()[-1])
    r["wait4_maxrss"] = maxrss  # also counts the child's own children (torch forks at import)
    return r


# ---- the acc side -------------------------------------------------------------------


def acc_defs(cfg):
    out = []
    for k in "BTVCLH":
        out += ["-D", "%s=%d" % (k, cfg[k])]
    return out + ["-D", "P=0.0"]


def acc_build(cfg, precision):
    """acc run --steps 0 --keep: compiles the model and links run_main; returns the kept dir."""
    model = os.path.join(ROOT, "models", "gpt2.acdsl")
    cmd = [cfg["acc"], "run", model] + acc_defs(cfg) + ["--policy", "none", "--precision", precision,
                                                        "--steps", "0", "--keep"]
    env = dict(os.environ, OMP_NUM_THREADS=str(cfg["threads"]), TMPDIR=cfg["tmp"])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"acc: kept (\S+)", p.stderr)
    if p.returncode or not m:
        sys.exit("cpu_step: %s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return " ".join(cmd).replace(" --steps 0 --keep", ""), m.group(1)


def run_acc(cfg, exe):
    env = dict(os.environ, OMP_NUM_THREADS=str(cfg["threads"]))
    n = cfg["warmup"] + cfg["steps"]
    p = subprocess.Popen([exe, "--steps", str(n)], stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
    arrivals, cpu, losses, summary = [], [], [], None
    tick = os.sysconf("SC_CLK_TCK")
    for line in p.stdout:
        t = time.perf_counter()
        d = json.loads(line)
        if "step" in d:
            arrivals.append(t)
            with open("/proc/%d/stat" % p.pid) as f:  # utime + stime of every thread so far
                fields = f.read().rsplit(")", 1)[1].split()
            cpu.append((int(fields[11]) + int(fields[12])) * 1e3 / tick)
            losses.append(d["loss"])
        else:
            summary = d
    rc, maxrss = wait_rusage(p)
    if rc or summary is None:
        sys.exit("cpu_step: %s failed (%d)" % (exe, rc))
    # step k (k >= 1) took arrivals[k] - arrivals[k-1]; step 0 also holds the start-up
    steps = [(b - a) * 1e3 for a, b in zip(arrivals, arrivals[1:])]
    cpus = [b - a for a, b in zip(cpu, cpu[1:])]
    w = max(cfg["warmup"] - 1, 0)
    return {"times_ms": steps[w:], "warmup_ms": steps[:w], "cpu_ms": cpus[w:], "losses": losses,
            "summary": summary, "maxrss": maxrss}


# ---- driver -------------------------------------------------------------------------


def mib(b):
    return b / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-child", help=argparse.SUPPRESS)
    ap.add_argument("--acc", default=os.environ.get("ACC", os.path.join(ROOT, "build", "acc")),
                    help="the acc binary (default $ACC, else build/acc)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())),
                    help="threads on both sides (default $OMP_NUM_THREADS, else nproc)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per run (default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2, at least 1)")
    ap.add_argument("--repeats", type=int, default=1, help="alternate the sides this many times")
    ap.add_argument("-B", type=int, default=4, help="batch (default 4)")
    ap.add_argument("-T", type=int, default=256, help="sequence length (default 256)")
    ap.add_argument("-C", type=int, default=768, help="width (default 768)")
    ap.add_argument("-L", type=int, default=4, help="layers (default 4)")
    ap.add_argument("-H", type=int, default=12, help="attention heads (default 12)")
    ap.add_argument("-V", type=int, default=50257, help="vocabulary (default 50257)")
    ap.add_argument("--torch-attention", choices=["math", "sdpa", "both"], default="both",
                    help="torch's attention: make_ref's (math), F.scaled_dot_product_attention (sdpa) "
                         "or both as separate sides (default)")
    ap.add_argument("--torch-adamw", choices=["for-loop", "foreach", "fused"], default="fused",
                    help="torch.optim.AdamW implementation (default fused: one kernel per parameter, "
                         "like acc's; for-loop is torch's CPU default)")
    ap.add_argument("--precision", choices=["fp32", "bf16", "both"], default="fp32",
                    help="fp32 (default), bf16 (acc --precision bf16 against torch CPU autocast) or both")
    ap.add_argument("--only", choices=["acc", "torch"], help="run one side only")
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()
    if a.torch_child:
        return torch_child(json.loads(a.torch_child))
    a.warmup = max(a.warmup, 1)
    cfg = {"acc": a.acc, "threads": a.threads, "steps": a.steps, "warmup": a.warmup, "adamw": a.torch_adamw,
           "B": a.B, "T": a.T, "C": a.C, "L": a.L, "H": a.H, "V": a.V}
    atts = ["math", "sdpa"] if a.torch_attention == "both" else [a.torch_attention]
    precs = ["fp32", "bf16"] if a.precision == "both" else [a.precision]
    sides = []
    for pr in precs:
        sfx = "-bf16" if pr == "bf16" else ""
        sides += (["acc" + sfx] if a.only != "torch" else []) + \
            ([] if a.only == "acc" else ["torch-" + x + sfx for x in atts])
    print("config: B=%d T=%d C=%d L=%d H=%d V=%d, %s, %d threads, AdamW included; "
          "%d warm-up + %d timed steps x %d repeats" % (a.B, a.T, a.C, a.L, a.H, a.V, " and ".join(precs), a.threads,
                                                         a.warmup, a.steps, a.repeats))
    print("OMP_WAIT_POLICY=%s; load average before: %s" % (os.environ.get("OMP_WAIT_POLICY", "(unset)"),
                                                          loadavg()))
    res = {s: {"times_ms": [], "cpu_ms": [], "maxrss": [], "losses": None} for s in sides}
    tmp = tempfile.mkdtemp(prefix="cpu_step-")
    cfg["tmp"] = tmp
    try:
        exe = {}
        for s in sides:
            if s.startswith("acc"):
                cmd, d = acc_build(cfg, "bf16" if s.endswith("-bf16") else "fp32")
                print("%s: %s" % (s, cmd))
                exe[s] = os.path.join(d, "run")
        for r in range(a.repeats):
            for s in sides:
                pr = "bf16" if s.endswith("-bf16") else "fp32"
                out = run_acc(cfg, exe[s]) if s.startswith("acc") else run_torch(cfg, s.split("-")[1], pr)
                res[s]["times_ms"] += out["times_ms"]
                res[s]["cpu_ms"] += out["cpu_ms"]
                res[s]["maxrss"].append(out["maxrss"])
                res[s]["losses"] = out["losses"]
                res[s]["last"] = out
                print("  %-11s run %d: step ms %s  (peak RSS %.0f MiB; load %s)"
                      % (s, r + 1, " ".join("%.0f" % t for t in out["times_ms"]), mib(out["maxrss"]), loadavg()),
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("load average after: %s" % loadavg())
    print()
    print("%-11s %9s %9s %9s %13s  %s" % ("side", "step ms", "(min)", "CPU ms", "peak RSS MiB", "notes"))
    for s in sides:
        r = res[s]
        r["median_ms"] = median(r["times_ms"])
        r["median_cpu_ms"] = median(r["cpu_ms"])
        r["peak_rss"] = max(r["maxrss"])
        last = r["last"]
        if s.startswith("acc"):
            sm = last["summary"]
            note = "arena %.0f MiB planned; fwd %.0f bwd %.0f opt %.0f ms (mean, run_main)" % (
                mib(sm["peak_bytes_planned"]), sm["fwd_ms_mean"], sm["bwd_ms_mean"], sm["opt_ms_mean"])
            r["arena_bytes"] = sm["peak_bytes_planned"]
        else:
            ph = [sum(p[k] for p in last["phases_ms"]) / len(last["phases_ms"]) for k in range(3)]
            note = ("torch %s, %d threads, AdamW %s; fwd %.0f bwd %.0f opt %.0f ms (mean, last run); "
                    "RSS after import %.0f MiB; %d params" % (
                        last["torch"], last["threads"], a.torch_adamw, ph[0], ph[1], ph[2],
                        mib(last["rss_after_import"]), last["params"]))
            r["rss_after_import"] = last["rss_after_import"]
        print("%-11s %9.1f %9.1f %9.1f %13.0f  %s" % (s, r["median_ms"], min(r["times_ms"]), r["median_cpu_ms"],
                                                    mib(r["peak_rss"]), note))
        print("%-11s losses %s" % ("", " ".join("%.4f" % x for x in r["losses"])))
    pairs = []
    for acc_side in [s for s in sides if s.startswith("acc")]:
        bf = acc_side.endswith("-bf16")
        pairs += [(acc_side, s) for s in sides if not s.startswith("acc") and s.endswith("-bf16") == bf]
    if "acc" in sides and "acc-bf16" in sides:
        pairs.append(("acc-bf16", "acc"))
    for x, s in pairs:
        print("%s/%s: step time %.3f (min %.3f, CPU time %.3f), peak RSS %.3f" % (
            x, s, res[x]["median_ms"] / res[s]["median_ms"], min(res[x]["times_ms"]) / min(res[s]["times_ms"]),
            res[x]["median_cpu_ms"] / res[s]["median_cpu_ms"], res[x]["peak_rss"] / res[s]["peak_rss"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": cfg, "results": {s: {k: v for k, v in r.items() if k != "last"}
                                                  for s, r in res.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
