#!/usr/bin/env python3
"""run.py - GPT-2 training steps on one GPU: acc's generated CUDA library at
several memory budgets against PyTorch eager with its checkpointing policies.

    bench/gpu/run.sh [options]          (the same, with the acc binary found for you)

What runs, on both sides (see gpt2_torch.py for the PyTorch model):

* the same model: models/gpt2.acdsl for acc (GPT-2 small by default: L=12,
  C=768, H=12, V=50257, T=1024, B=8; dropout P=0); for PyTorch the same math
  written with torch.nn.functional: pre-LN, GELU tanh form, layernorm eps 1e-5,
  causal attention scaled by 1/sqrt(C/H), wte tied to the output projection,
  mean cross-entropy. float32 parameters and activations on both sides.
  TF32 GEMMs only with --tf32 (torch: allow_tf32; acc: its --tf32 flag, which
  sets cuBLAS's TF32 tensor-op math mode in the generated library).
  --precision bf16: mixed precision on both sides: acc's --precision bf16
  (bf16 activations and GEMMs, f32 master weights, AdamW state, statistics
  and loss) against torch.autocast("cuda", dtype=torch.bfloat16) around the
  forward (float32 parameters and AdamW); MFU against the bf16 peak.
* the same data (run_main.c's token chain), the same batch every step, and the
  same step: forward, backward and AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8,
  weight decay 0) over every parameter; the optimizer is inside the step
  time on both sides (torch's AdamW: fused, --torch-adamw to change).
* acc: `acc run MODEL -D ... --target cuda [--hw PROFILE] --budget SIZE
  --policy optimal --steps W+N` for each budget of --budgets. The budgets come
  from acc's own plans: `acc explain --policy none` gives the save-all peak and
  its memory by category; "P%" is the persistent memory (parameters,
  gradients, optimizer state, inputs, loss, workspace) plus P% of the rest
  (activations, their gradients, statistics, fragmentation), as
  bench/planner/speed.sh computes it; "min" is the smallest budget acc can
  plan, from `acc explain --budget 1`'s error message; "none" is the
  save-all plan; a size (8G, 5.5GiB) is used as is; a policy name (full,
  every:2, selective, sqrt, uniform:N) runs that fixed policy, for a
  like-for-like comparison with torch's.
* PyTorch: one child process per policy of --torch-policies (none, full,
  every:K, compile:F; see gpt2_torch.py), so each starts with a fresh caching
  allocator and fresh peak counters.

Timing: W warm-up steps, then N timed steps; the figure is the median of the
timed steps. acc's steps are timed by this script from the arrival of
run_main's per-step JSON lines (each is printed after the step's loss has been
copied to the host, i.e. after a device synchronization), torch's with
time.perf_counter around a step that ends in loss.item() and
torch.cuda.synchronize(); the phases (forward, backward, optimizer) are acc's
own counters and, for torch, CUDA events.

Memory: for torch, torch.cuda.max_memory_allocated() (what its tensors
occupied at the peak; max_memory_reserved(), what the caching allocator held,
is shown too); for acc, peak_bytes_measured (the runtime's measured peak) and
peak_bytes_planned (the arena the plan promised) from run_main's summary.
Neither counts the CUDA context. On the CPU (--device cpu, a smoke test of
the harness) torch's figure is the process's RSS high-water mark, not
comparable with acc's arena.

Ratios: acc/torch for the same policy on both sides (none/none, full/full,
every:2/every:2 where both ran), and for each torch run the fastest acc run
that used no more memory ("at comparable memory").

MFU (model FLOPs utilisation): see model_flops() for the formula; the peak
comes from the GPU's name (table PEAKS) or --peak-fp32/--peak-tf32.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, "models", "gpt2.acdsl")

# Dense peak rates in TFLOP/s from NVIDIA's data sheets (the sheets print
# TF32 and BF16 "with sparsity"; these are half of that): (substring of the
# device name, FP32 on CUDA cores, TF32 tensor cores, BF16 tensor cores, hw
# profile of acc's cost model). First match wins, so the variants come first.
# NVL parts have other clocks and are left out: pass --peak-fp32/--peak-tf32.
PEAKS = [
    ("H100 PCIe", 51.0, 378.0, 756.0, None),
    ("NVL", None, None, None, None),
    ("H200", 67.0, 494.5, 989.0, "h200"),        # H200 SXM: H100 SXM's compute (GH200 matches too: same rates)
    ("H100", 67.0, 494.5, 989.0, "h100-sxm"),    # "NVIDIA H100 80GB HBM3" is the SXM5 part
    ("A100", 19.5, 156.0, 312.0, "a100-80gb"),   # SXM and PCIe alike
]

PERSISTENT = ("parameters", "gradients", "optimizer", "inputs", "loss", "workspace")


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return float("nan")
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def mib(b):
    return b / 2**20


def fmt_mib(b, width=10):
    """MiB with as many decimals as a small (smoke-test) figure needs."""
    x = mib(b)
    return "%*.*f" % (width, 0 if x >= 100 else 1 if x >= 10 else 3, x)


def model_flops(cfg, nparams):
    """Model FLOPs of one training step (forward + backward), the numerator of
    MFU (PaLM, Chowdhery et al. 2022, appendix B; nanoGPT's estimate_mfu):

        flops = B * (6 * N * T  +  12 * L * T * T * C)

    N = the parameters without the position embedding wpe (an addition, no
    matmul); the tied wte counts once, as the output projection's weight.
    6 N per token: 2 N in the forward matmuls, 4 N in the backward ones.
    12 L T C per token (12 L T^2 C per sequence): q k^T and p v, 2 T C FLOPs
    each per token and layer in the forward pass, times 3 with the backward
    pass, counted over the whole T x T square although causal attention needs
    only half (PaLM's convention). Recomputation is NOT counted: MFU credits
    the model's FLOPs, not the extra work a checkpointing plan does (that
    would be hardware FLOPs utilisation), so recomputing shows up as lower MFU.
    Layernorm, GELU, softmax, cross-entropy and AdamW are not counted either."""
    B, T, C, L = cfg["B"], cfg["T"], cfg["C"], cfg["L"]
    n = nparams - T * C
    return B * (6 * n * T + 12 * L * T * T * C)


def gpt2_params(cfg):
    """models/gpt2.acdsl's parameter count: per layer 12 C^2 + 13 C, plus
    V C (wte, tied) + T C (wpe) + 2 C (final layernorm)."""
    C, L, V, T = cfg["C"], cfg["L"], cfg["V"], cfg["T"]
    return L * (12 * C * C + 13 * C) + V * C + T * C + 2 * C


# ---- machine ---------------------------------------------------------------------


def sh(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, "", str(e)


def nvidia_smi():
    """The first GPU as nvidia-smi sees it, or None (no nvidia-smi, no GPU)."""
    if not shutil.which("nvidia-smi"):
        return None
    rc, out, _ = sh(["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit",
                     "--format=csv,noheader"])
    line = out.strip().splitlines()[0] if rc == 0 and out.strip() else ""
    if not line:
        return None
    f = [x.strip() for x in line.split(",")]
    return {"name": f[0], "memory": f[1] if len(f) > 1 else "?", "driver": f[2] if len(f) > 2 else "?",
            "max_sm_clock": f[3] if len(f) > 3 else "?", "power_limit": f[4] if len(f) > 4 else "?"}


def torch_probe(device):
    """torch's version and whether it sees the GPU, from a child process (the
    parent never initializes CUDA, so it holds no GPU memory)."""
    code = ("import json, warnings; warnings.filterwarnings('ignore')\n"
            "try:\n import torch\nexcept Exception as e:\n print(json.dumps({'error': str(e)})); raise SystemExit\n"
            "r = {'torch': torch.__version__, 'cuda': torch.version.cuda, 'cuda_available': False}\n"
            "if %r == 'cuda' and torch.cuda.is_available():\n"
            " r.update(cuda_available=True, name=torch.cuda.get_device_name(0),\n"
            "          memory=torch.cuda.get_device_properties(0).total_memory)\n"
            "try:\n import torch._functorch.config as c; r['memory_budget_knob'] = hasattr(c, 'activation_memory_budget')\n"
            "except Exception:\n r['memory_budget_knob'] = False\n"
            "print(json.dumps(r))\n" % device)
    rc, out, err = sh([sys.executable, "-c", code])
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (err.strip().splitlines() or ["python failed"])[-1]}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def peaks_for(name):
    for key, fp32, tf32, bf16, hw in PEAKS:
        if key.lower() in name.lower():
            return fp32, tf32, bf16, hw
    return None, None, None, None


# ---- acc -------------------------------------------------------------------------


def acc_defs(cfg):
    out = []
    for k in "BTVCLH":
        out += ["-D", "%s=%d" % (k, cfg[k])]
    return out + ["-D", "P=0.0"]


def acc_common(cfg, run=True):
    """acc's target arguments; run=False for acc explain, which plans and so takes no --tf32."""
    args = ["--target", cfg["acc_target"]]
    if run and cfg["tf32"] and cfg["acc_target"] == "cuda":
        args += ["--tf32"]
    if cfg.get("precision") == "bf16":
        args += ["--precision", "bf16"]
    if cfg.get("hw"):
        args += ["--hw", cfg["hw"]]
    return args


def acc_env(cfg):
    return dict(os.environ, TMPDIR=cfg["tmp"])


class AccError(Exception):
    pass


def last_lines(text, n=3):
    return " | ".join([l.strip() for l in text.strip().splitlines() if l.strip()][-n:]) or "(no message)"


def acc_budgets(cfg, specs):
    """Resolve --budgets into acc runs: [(label, [acc plan arguments], budget bytes or None)]."""
    saveall = pers = minimum = None
    if any(s.endswith("%") for s in specs):
        cmd = [cfg["acc"], "explain", MODEL] + acc_defs(cfg) + acc_common(cfg, run=False) + ["--budget", "1T", "--policy", "none"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=acc_env(cfg))
        m = re.search(r"planned peak .*\((\d+) bytes\)", p.stdout)
        if p.returncode or not m:
            raise AccError("%s failed (exit %d): %s" % (" ".join(cmd), p.returncode, last_lines(p.stderr + p.stdout)))
        saveall = int(m.group(1))
        pers = 0
        on = False
        for line in p.stdout.splitlines():
            if line.startswith("memory at the peak"):
                on = True
            elif on and line.strip().startswith("total"):
                break
            elif on and line.strip():
                cat, n = line.split()[:2]
                if "activation" not in cat and any(cat.startswith(k) for k in PERSISTENT):
                    pers += int(n)
        cfg["saveall_planned"], cfg["persistent_bytes"] = saveall, pers
    if "min" in specs or any(s.endswith("%") for s in specs):
        cmd = [cfg["acc"], "explain", MODEL] + acc_defs(cfg) + acc_common(cfg, run=False) + ["--budget", "1"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=acc_env(cfg))
        m = re.search(r"below the minimum of (\d+) bytes", p.stderr + p.stdout)
        if not m:
            raise AccError("no minimum budget in the output of %s: %s" % (" ".join(cmd), last_lines(p.stderr + p.stdout)))
        minimum = int(m.group(1))
        cfg["min_budget"] = minimum
    runs, seen = [], set()
    for s in specs:
        if s == "none":
            runs.append(("none", ["--policy", "none"], None))
        elif s == "min":
            runs.append(("min", ["--budget", str(minimum), "--policy", "optimal"], minimum))
        elif s.endswith("%"):
            b = int(pers + float(s[:-1]) / 100 * (saveall - pers))
            if b <= minimum:  # below what any plan reaches: that is the minimum's run
                print("acc budgets: %s is %d bytes, at or below the minimum %d: runs as min" % (s, b, minimum))
                runs.append(("min", ["--budget", str(minimum), "--policy", "optimal"], minimum))
            else:
                runs.append((s, ["--budget", str(b), "--policy", "optimal"], b))
        elif re.match(r"^[0-9.]+[A-Za-z]*$", s):
            runs.append((s, ["--budget", s, "--policy", "optimal"], None))
        else:  # a fixed policy
            runs.append((s, ["--policy", s], None))
    out = []
    for r in runs:  # one run per distinct plan request
        key = tuple(r[1])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def run_acc(cfg, plan_args, steps, extra=()):
    """acc run; returns per-step times from the arrival of the JSON lines, the
    losses, run_main's summary and the planner's line, or {"error": ...}."""
    cmd = ([cfg["acc"], "run", MODEL] + acc_defs(cfg) + acc_common(cfg) + plan_args +
           ["--steps", str(steps)] + list(extra) + cfg["acc_args"])
    errf = tempfile.TemporaryFile(mode="w+", dir=cfg["tmp"])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=acc_env(cfg), text=True, bufsize=1)
    arrivals, losses, summary = [], [], None
    for line in p.stdout:
        t = time.perf_counter()
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "step" in d:
            arrivals.append(t)
            losses.append(d["loss"])
        elif "peak_bytes_measured" in d:
            summary = d
    rc = p.wait()
    errf.seek(0)
    err = errf.read()
    errf.close()
    r = {"cmd": " ".join(cmd), "losses": losses}
    m = re.search(r"(\d+) tensors recomputed, \+([0-9.]+)% step time \(est\.\)", err)
    if m:
        r["recomputed"], r["overhead_est"] = int(m.group(1)), float(m.group(2))
    if rc or summary is None:
        r["error"] = "exit %d: %s" % (rc, last_lines(err))
        return r
    # step k (k >= 1) took arrivals[k] - arrivals[k-1]; step 0 also holds the start-up
    steps_ms = [(b - a) * 1e3 for a, b in zip(arrivals, arrivals[1:])]
    w = max(cfg["warmup"] - 1, 0)
    r.update(times_ms=steps_ms[w:], warmup_ms=steps_ms[:w], summary=summary,
             peak_bytes=summary["peak_bytes_measured"], planned_bytes=summary["peak_bytes_planned"])
    return r


# ---- torch -----------------------------------------------------------------------


def run_torch(cfg, policy, steps=None, warmup=None, export=None):
    c = {k: cfg[k] for k in ("B", "T", "V", "C", "L", "H", "device", "tf32", "attention", "adamw", "precision")}
    c.update(policy=policy, steps=cfg["steps"] if steps is None else steps,
             warmup=cfg["warmup"] if warmup is None else warmup, export=export, threads=cfg.get("threads"))
    p = subprocess.run([sys.executable, os.path.join(HERE, "gpt2_torch.py"), json.dumps(c)],
                       capture_output=True, text=True)
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        r = {"error": "exit %d: %s" % (p.returncode, last_lines(p.stderr))}
    return r


# ---- driver ----------------------------------------------------------------------


def verify(cfg, k=3):
    """Same parameters and data on both sides: torch's initial parameters and
    inputs are written in libaccrt's format and handed to acc run (--params,
    --inputs); the first k losses (k-1 AdamW updates) must agree."""
    d = tempfile.mkdtemp(prefix="verify-", dir=cfg["tmp"])
    t = run_torch(cfg, "none", steps=k, warmup=0, export=d)
    a = run_acc(cfg, ["--policy", "none"], k, ["--params", os.path.join(d, "params.bin"),
                                               "--inputs", os.path.join(d, "inputs.bin")])
    if "error" in t or "error" in a:
        print("verify: could not run: %s" % (t.get("error") or a.get("error")))
        return False
    tol = 2e-2 if cfg["tf32"] or cfg["precision"] == "bf16" else 1e-3
    rel = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["losses"], t["losses"]))
    ok = rel <= tol and len(a["losses"]) == len(t["losses"]) == k
    print("verify: same parameters and data, %d steps: acc losses %s, torch losses %s; largest relative "
          "difference %.2e (tolerance %.0e): %s" % (k, " ".join("%.6f" % x for x in a["losses"]),
                                                   " ".join("%.6f" % x for x in t["losses"]), rel, tol,
                                                   "ok" if ok else "MISMATCH"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acc", default=os.environ.get("ACC", os.path.join(ROOT, "build", "acc")),
                    help="the acc binary (default $ACC, else build/acc)")
    ap.add_argument("-L", type=int, default=12, help="layers (default 12)")
    ap.add_argument("-C", type=int, default=768, help="width (default 768)")
    ap.add_argument("-H", type=int, default=12, help="attention heads (default 12)")
    ap.add_argument("-T", type=int, default=1024, help="sequence length (default 1024)")
    ap.add_argument("-B", type=int, default=8, help="batch (default 8)")
    ap.add_argument("-V", type=int, default=50257, help="vocabulary (default 50257)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per run (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3, at least 1)")
    ap.add_argument("--budgets", default="none,75%,50%,min",
                    help="acc's runs, comma-separated: none (save-all), P%% (persistent memory + P%% of the "
                         "save-all plan's activation memory), min (the smallest plannable budget), a size "
                         "(8G), or a fixed policy (full, every:2, ...) (default none,75%%,50%%,min)")
    ap.add_argument("--torch-policies", default="none,full,every:2,compile:1.0,compile:0.5",
                    help="PyTorch's runs: none, full, every:K, compile:F (torch.compile with "
                         "activation_memory_budget F) (default none,full,every:2,compile:1.0,compile:0.5)")
    ap.add_argument("--only", choices=["acc", "torch"], help="run one side only")
    ap.add_argument("--tf32", action="store_true", help="TF32 GEMMs on both sides (default: strict FP32)")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: acc --precision bf16 against torch bf16 autocast (default fp32)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="torch's device (cpu: a smoke test of the harness, with --acc-target cpu)")
    ap.add_argument("--acc-target", default="cuda", help="acc run --target (default cuda; cpu, cuda-emu for tests)")
    ap.add_argument("--hw", help="acc's hardware profile (default: from the GPU's name, see PEAKS)")
    ap.add_argument("--acc-arg", action="append", default=[], help="one more argument for acc run (repeatable)")
    ap.add_argument("--torch-attention", choices=["sdpa", "math"], default="sdpa",
                    help="torch's attention: F.scaled_dot_product_attention (default) or the plain "
                         "materialized softmax(q k^T) v")
    ap.add_argument("--torch-adamw", choices=["fused", "foreach", "for-loop"], default="fused",
                    help="torch.optim.AdamW implementation (default fused)")
    ap.add_argument("--peak-fp32", type=float, help="FP32 peak in TFLOP/s (default: from the GPU's name)")
    ap.add_argument("--peak-tf32", type=float, help="TF32 peak in TFLOP/s (default: from the GPU's name)")
    ap.add_argument("--verify", action="store_true",
                    help="first check that both sides compute the same losses from the same parameters")
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()
    a.warmup = max(a.warmup, 1)
    sides = [s for s in ("acc", "torch") if a.only in (None, s)]
    cfg = {"acc": a.acc, "B": a.B, "T": a.T, "C": a.C, "L": a.L, "H": a.H, "V": a.V, "steps": a.steps,
           "warmup": a.warmup, "tf32": a.tf32, "device": a.device, "acc_target": a.acc_target,
           "attention": a.torch_attention, "adamw": a.torch_adamw, "acc_args": a.acc_arg, "hw": a.hw,
           "precision": a.precision}
    if a.precision == "bf16" and a.tf32:
        sys.exit("gpu bench: --tf32 and --precision bf16 exclude each other")
    if a.C % a.H:
        sys.exit("gpu bench: C=%d is not a multiple of H=%d" % (a.C, a.H))

    # ---- is there a GPU? ----
    gpu = probe = None
    if a.device == "cuda":
        gpu = nvidia_smi()
        if gpu is None:
            print("no GPU: skipped (nvidia-smi %s)" % ("found no device" if shutil.which("nvidia-smi")
                                                       else "is not installed"))
            return 0
        if "torch" in sides:
            probe = torch_probe("cuda")
            if not probe.get("cuda_available"):
                print("no GPU: skipped (PyTorch cannot use it: %s)" % (
                    probe.get("error") or "torch %s, built for CUDA %s, torch.cuda.is_available() is False"
                    % (probe.get("torch"), probe.get("cuda"))))
                return 0
    elif "torch" in sides:
        probe = torch_probe("cpu")
        if "error" in probe:
            sys.exit("gpu bench: cannot import torch: %s" % probe["error"])
    if "acc" in sides and not (os.path.isfile(a.acc) and os.access(a.acc, os.X_OK)):
        sys.exit("gpu bench: no acc binary at %s; build one or pass --acc PATH (or set ACC)" % a.acc)

    # ---- machine and peaks ----
    name = gpu["name"] if gpu else "CPU: " + cpu_name()
    fp32, tf32, bf16, hw = peaks_for(gpu["name"]) if gpu else (None, None, None, None)
    fp32 = a.peak_fp32 or fp32
    tf32 = a.peak_tf32 or tf32
    if a.precision == "bf16":  # the second MFU column: against the bf16 peak
        tf32 = bf16
    if gpu and not cfg["hw"] and hw and os.path.exists(os.path.join(ROOT, "hw", hw + ".hw")):
        cfg["hw"] = hw
    if gpu:
        print("machine: %s, %s, driver %s, max SM clock %s, power limit %s; host %d cores, %s"
              % (gpu["name"], gpu["memory"], gpu["driver"], gpu["max_sm_clock"], gpu["power_limit"],
                 os.cpu_count(), cpu_name()))
    else:
        print("machine: no GPU used (--device cpu): %d cores, %s" % (os.cpu_count(), cpu_name()))
        cfg["threads"] = os.cpu_count()
    if probe:
        print("torch %s (CUDA %s)%s" % (probe.get("torch"), probe.get("cuda"),
                                        "" if probe.get("memory_budget_knob")
                                        else "; no torch._functorch.config.activation_memory_budget"))
    if "acc" in sides:
        rc, out, err = sh([a.acc, "--version"])
        print("acc: %s (%s), --target %s%s" % (a.acc, (out or err).strip().splitlines()[0] if (out or err).strip()
                                               else "?", a.acc_target,
                                               ", --hw %s" % cfg["hw"] if cfg["hw"] else ""))
    nparams = gpt2_params(cfg)
    flops = model_flops(cfg, nparams)
    print("config: GPT-2 B=%d T=%d C=%d L=%d H=%d V=%d (%d parameters), %s; AdamW in the step; "
          "%d warm-up + %d timed steps per run" % (a.B, a.T, a.C, a.L, a.H, a.V, nparams,
                                                   "bf16 mixed precision (float32 parameters)" if a.precision == "bf16"
                                                   else "float32, TF32 GEMMs" if a.tf32 else "float32, strict FP32 GEMMs",
                                                   a.warmup, a.steps))
    print("model FLOPs per step: %.4g (B * (6 N T + 12 L T^2 C), N = parameters without wpe)" % flops)
    second = "BF16" if a.precision == "bf16" else "TF32"
    print("MFU against: FP32 %s, %s %s TFLOP/s (dense; %s); the applicable one is %s" % (
        fp32 if fp32 else "unknown", second, tf32 if tf32 else "unknown",
        "from --peak-*" if (a.peak_fp32 or a.peak_tf32) else ("data sheet of %s" % name if fp32 else "no table entry"),
        "BF16 (--precision bf16)" if a.precision == "bf16" else "TF32 (--tf32)" if a.tf32
        else "FP32 (strict FP32 GEMMs)"))
    sys.stdout.flush()

    tmp = tempfile.mkdtemp(prefix="gpu-bench-")
    cfg["tmp"] = tmp
    results = []
    verified = None
    try:
        if a.verify and sides == ["acc", "torch"]:
            verified = verify(cfg)
        elif a.verify:
            print("verify: needs both sides; skipped")
        acc_runs = []
        if "acc" in sides:
            try:
                acc_runs = acc_budgets(cfg, [s.strip() for s in a.budgets.split(",") if s.strip()])
            except AccError as e:
                print("acc: cannot derive the budgets, no acc runs: %s" % e)
                results.append({"side": "acc", "label": "(all)", "error": str(e)})
            for label, plan_args, budget in acc_runs:
                r = run_acc(cfg, plan_args, a.warmup + a.steps)
                r.update(side="acc", label=label, budget=budget)
                results.append(r)
                report_progress(r)
                if "error" in r and re.search(r"no usable device|no CUDA-capable device|CUDA_ERROR_NO_DEVICE|"
                                              r"CUDA_ERROR_NOT_INITIALIZED|unknown --target", r["error"]):
                    print("acc: the CUDA target cannot run here; no more acc runs")
                    break
        if "torch" in sides:
            for pol in [s.strip() for s in a.torch_policies.split(",") if s.strip()]:
                r = run_torch(cfg, pol)
                r.update(side="torch", label=pol)
                results.append(r)
                report_progress(r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # ---- the table ----
    print()
    if cfg.get("saveall_planned"):
        print("acc budgets: save-all plan %d bytes (%s MiB), persistent %d bytes (%s MiB), minimum %d bytes "
              "(%s MiB)" % (cfg["saveall_planned"], fmt_mib(cfg["saveall_planned"], 0), cfg["persistent_bytes"],
                            fmt_mib(cfg["persistent_bytes"], 0), cfg["min_budget"], fmt_mib(cfg["min_budget"], 0)))
    tokens = a.B * a.T
    mem_name = "peak MiB" if a.device == "cuda" else "peak MiB*"
    print("%-5s %-12s %10s %9s %9s %10s %8s %8s %10s %10s  %s" % (
        "side", "plan", "budget MiB", "step ms", "(min)", "tokens/s", "MFU fp32",
        "MFU bf16" if a.precision == "bf16" else "MFU tf32", mem_name,
        "(planned)", "notes"))
    for r in results:
        if "times_ms" not in r:
            print("%-5s %-12s  %s" % (r["side"], r["label"], "skipped: " + r["skipped"] if "skipped" in r
                                     else "FAILED: " + r.get("error", "?")))
            continue
        r["median_ms"] = med = median(r["times_ms"])
        r["tokens_per_s"] = tokens / (med / 1e3)
        r["mfu_fp32"] = flops / (med / 1e3) / (fp32 * 1e12) if fp32 else None
        r["mfu_tf32"] = flops / (med / 1e3) / (tf32 * 1e12) if tf32 else None
        if r["side"] == "acc":
            sm = r["summary"]
            note = "fwd %.1f bwd %.1f opt %.1f ms (acc's counters, mean of all steps)" % (sm["fwd_ms_mean"], sm["bwd_ms_mean"],
                                                                      sm["opt_ms_mean"])
            if "recomputed" in r:
                note = "%d recomputed, +%.1f%% est.; " % (r["recomputed"], r["overhead_est"]) + note
            planned = fmt_mib(r["planned_bytes"])
        else:
            ph = [median([p[k] for p in r["phases_ms"]]) for k in range(3)]
            note = "fwd %.1f bwd %.1f opt %.1f ms (median)" % tuple(ph)
            if "peak_reserved_bytes" in r:
                note += "; reserved %.0f MiB" % mib(r["peak_reserved_bytes"])
            planned = "%10s" % "-"
        print("%-5s %-12s %10s %9.2f %9.2f %10.0f %8s %8s %s %s  %s" % (
            r["side"], r["label"], fmt_mib(r["budget"], 0) if r.get("budget") else "-", med, min(r["times_ms"]),
            r["tokens_per_s"], pct(r["mfu_fp32"]), pct(r["mfu_tf32"]), fmt_mib(r["peak_bytes"]), planned, note))
    for r in results:
        if "losses" in r and r["losses"] and "times_ms" in r:
            print("  %-5s %-12s losses %s" % (r["side"], r["label"], " ".join("%.4f" % x for x in r["losses"][:6]) +
                                           (" ..." if len(r["losses"]) > 6 else "")))
    if a.device != "cuda":
        print("* on the CPU torch's peak is its process's RSS high-water mark and acc's is its arena: "
              "the memory columns and ratios are not comparable there")

    # ---- ratios ----
    ok = [r for r in results if "times_ms" in r]
    accs = [r for r in ok if r["side"] == "acc"]
    torchs = [r for r in ok if r["side"] == "torch"]
    if accs and torchs:
        print()
        print("acc/torch, same policy (step time; memory):")
        any_pair = False
        for t in torchs:
            for x in accs:
                if x["label"] == t["label"]:
                    any_pair = True
                    print("  %-12s step time %.3f  memory %.3f  (acc %.2f ms, %s MiB; torch %.2f ms, %s MiB)" % (
                        t["label"], x["median_ms"] / t["median_ms"], x["peak_bytes"] / t["peak_bytes"],
                        x["median_ms"], fmt_mib(x["peak_bytes"], 0), t["median_ms"], fmt_mib(t["peak_bytes"], 0)))
        if not any_pair:
            print("  (no policy ran on both sides)")
        print("acc/torch at comparable memory (for each torch run, the fastest acc run with no more memory):")
        for t in torchs:
            fit = [x for x in accs if x["peak_bytes"] <= t["peak_bytes"]]
            if not fit:
                print("  torch %-12s %s MiB: no acc run at or below that memory" % (t["label"], fmt_mib(t["peak_bytes"], 0)))
                continue
            x = min(fit, key=lambda r: r["median_ms"])
            print("  torch %-12s vs acc %-10s step time %.3f  memory %.3f  tokens/s %.3f  (acc %.2f ms, %s MiB; "
                  "torch %.2f ms, %s MiB)" % (
                      t["label"], x["label"], x["median_ms"] / t["median_ms"], x["peak_bytes"] / t["peak_bytes"],
                      x["tokens_per_s"] / t["tokens_per_s"], x["median_ms"], fmt_mib(x["peak_bytes"], 0), t["median_ms"],
                      fmt_mib(t["peak_bytes"], 0)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": {k: v for k, v in cfg.items() if k != "tmp"}, "machine": gpu or {"cpu": cpu_name()},
                       "torch": probe, "model_flops": flops, "params": nparams,
                       "peak_tflops": {"fp32": fp32, "tf32": tf32, "bf16": bf16}, "verified": verified,
                       "results": results}, f, indent=1)
    failed = [s for s in sides if not any(r["side"] == s for r in ok)]
    if failed:
        print("no successful %s run" % " or ".join(failed))
    return 1 if verified is False or failed else 0


def pct(x):
    return "%.1f%%" % (100 * x) if x is not None else "-"


def report_progress(r):
    if "times_ms" in r:
        print("  %-5s %-12s step ms %s" % (r["side"], r["label"], " ".join("%.1f" % t for t in r["times_ms"][:10]) +
                                           (" ..." if len(r["times_ms"]) > 10 else "")), flush=True)
    else:
        print("  %-5s %-12s %s" % (r["side"], r["label"], ("skipped: " + r["skipped"]) if "skipped" in r
                                   else "FAILED: " + r.get("error", "?")), flush=True)


if __name__ == "__main__":
    sys.exit(main())
