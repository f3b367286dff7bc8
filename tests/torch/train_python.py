#!/usr/bin/env python3
"""train_python.py - a PyTorch module imported, compiled at a budget and trained
from Python with the generated library, step for step against PyTorch.

    python3 tests/torch/train_python.py ACC MODEL.py[:FUNC] [--target T] [--budget-below BYTES] [--steps K]

1. `acc import` of the module (in-process, as roundtrip.py does);
2. `ACC compile NAME.acdsl --shared --budget B --target T` (default cpu;
   cuda-emu runs the CUDA schedule's kernels in the emulator and hands out
   its tensors through DLPack), B being BYTES below the save-all plan's peak
   on that target (a first compile without a budget);
3. the `acc` package: `acc.load`, the imported parameters loaded from their
   file, then K training steps from Python, each on a new random batch:
   `step` (forward and backward), `clip_grad_norm`, `adamw` with the learning
   rate of a warmup schedule set per step.
The reference is the module itself trained the same way in float64 from the
same float32 values (torch.nn.utils.clip_grad_norm_, torch.optim.AdamW with the
same hyperparameters). Asserted: every step's loss (rtol 1e-4), every
parameter gradient of the first step (|acc - torch| <= 1e-6 + 1e-4 |torch|),
the first step's gradient norm, every parameter after the last step
(rtol 1e-3 against the float64 run, but those whose gradient is zero in exact
arithmetic), the plan recomputes (the budget is below
the save-all peak) and the measured peak equals the planned one, within the
budget. Exit 0 on success, 1 on a mismatch, 77 (skipped) without PyTorch or
NumPy.
"""
import copy
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
try:
    import numpy as np
    import torch
except ImportError:
    print("train_python.py: PyTorch or NumPy is not installed: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import acc  # noqa: E402
from acc import torch_import  # noqa: E402

LR, BETAS, EPS, WD, CLIP = 3e-3, (0.9, 0.95), 1e-8, 0.1, 1.0


def lr_at(k):
    """A warmup schedule, so that each step's rate differs."""
    return LR * min(1.0, (k + 1) / 3)


def as_numpy(t):
    """A parameter or gradient: a NumPy array (cpu) or a DLPack tensor (cuda-emu)."""
    return t if isinstance(t, np.ndarray) else np.from_dlpack(t)


def close(what, got, want, rtol, atol):
    err = np.abs(got - want)
    worst = float((err / (atol + rtol * np.abs(want))).max()) if err.size else 0.0
    ok = worst <= 1.0
    print("  %-44s max|err| %.2e  of tolerance %.3f%s" % (what, float(err.max()) if err.size else 0.0, worst,
                                                            "" if ok else "  FAIL"))
    return ok


def main():
    args = sys.argv[1:]
    acc_bin, model_py = args[0], args[1]
    target, below, steps = "cpu", None, 4
    rest = args[2:]
    while rest:
        if rest[0] == "--target" and len(rest) > 1:
            target = rest[1]
        elif rest[0] == "--budget-below" and len(rest) > 1:
            below = int(rest[1])
        elif rest[0] == "--steps" and len(rest) > 1:
            steps = int(rest[1])
        else:
            print("train_python.py: unknown argument %s" % rest[0])
            return 2
        rest = rest[2:]
    model_py, func = (model_py, "build") if model_py.endswith(".py") else model_py.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location("m", model_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    module, example = getattr(mod, func)()
    arg_names = list(inspect.signature(module.forward).parameters)
    assert len(arg_names) == len(example), "forward's arguments are the example inputs"

    # the batches: the example first, then random ones of its shapes and ranges
    gen = torch.Generator().manual_seed(1)
    batches = [example]
    for _ in range(steps - 1):
        batches.append(tuple(torch.randint(0, int(t.max()) + 1, t.shape, generator=gen, dtype=t.dtype)
                             if not t.is_floating_point() else torch.randn(t.shape, generator=gen) for t in example))

    # the reference: float64 from the same float32 values
    ref = copy.deepcopy(module).double()
    opt = torch.optim.AdamW(ref.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    ref_losses, ref_grads0, ref_norm0 = [], None, None
    for k, batch in enumerate(batches):
        opt.zero_grad()
        loss = ref(*[t.double() if t.is_floating_point() else t for t in batch])
        loss.backward()
        ref_losses.append(float(loss.detach()))
        if k == 0:
            ref_grads0 = {n: p.grad.detach().clone().numpy() for n, p in ref.named_parameters(remove_duplicate=False)}
        norm = float(torch.nn.utils.clip_grad_norm_(ref.parameters(), CLIP))
        ref_norm0 = norm if k == 0 else ref_norm0
        for g in opt.param_groups:
            g["lr"] = lr_at(k)
        opt.step()
    ref_final = {n: p.detach().numpy() for n, p in ref.named_parameters(remove_duplicate=False)}
    # Where a gradient is zero in exact arithmetic (the key part of a qkv bias:
    # softmax does not see a shift of a row's scores), each run's gradient is
    # its own rounding noise, which AdamW normalizes into a full step of
    # either sign: those elements are not compared after training.
    ref_rms = {n: np.sqrt(opt.state[p]["exp_avg_sq"].numpy() / (1 - BETAS[1] ** steps))
               for n, p in ref.named_parameters(remove_duplicate=False)}

    ok = True
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    with tempfile.TemporaryDirectory(prefix="acc-train-py-") as tmp:
        if torch_import.main(["--module", model_py + ":" + func, "-o", tmp]) != 0:
            print("train_python: acc import failed")
            return 1
        name = [f for f in os.listdir(tmp) if f.endswith(".acdsl")][0][:-6]
        base = os.path.join(tmp, name)
        out = os.path.join(tmp, "lib")
        budget = None
        for attempt in ("save-all", "budget") if below else ("save-all",):
            cmd = [acc_bin, "compile", base + ".acdsl", "--shared", "--target", target, "-o", out]
            cmd += ["--budget", str(budget)] if budget else ["--budget", "64G"]
            print("+ " + " ".join(cmd))
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            print(r.stdout + r.stderr, end="")
            if r.returncode != 0:
                print("train_python: acc compile failed (exit %d)" % r.returncode)
                return 1
            if attempt == "save-all" and below:
                budget = json.load(open(os.path.join(out, "plan.json")))["peak_bytes"] - below
        plan = json.load(open(os.path.join(out, "plan.json")))
        decisions = [t.get("decision") for t in plan.get("tensors", [])]
        if budget and "recompute" not in decisions:
            print("train_python: the plan at --budget %s recomputes nothing: the budget does not bind" % budget)
            ok = False
        names = dict(line.split() for line in open(base + ".names"))

        m = acc.load(out, num_threads=1)
        for n in arg_names:
            if n not in m.inputs:
                print("train_python: the library has no input %r (it has %s)" % (n, sorted(m.inputs)))
                return 1
        m.load(base + ".params.bin")
        print("train_python: %s on %s, %d steps from Python" % (name, m.target, steps))
        for k, batch in enumerate(batches):
            loss = m.step(**{n: t.numpy() for n, t in zip(arg_names, batch)})
            good = abs(loss - ref_losses[k]) <= 2e-6 + 1e-4 * abs(ref_losses[k])
            print("step %d: loss %.7f, PyTorch %.7f%s" % (k, loss, ref_losses[k], "" if good else "  FAIL"))
            ok = ok and good
            if k == 0:
                seen = set()
                for acc_name, g in m.grads().items():
                    seen.add(names[acc_name])
                    ok = close("grad " + acc_name, as_numpy(g), ref_grads0[names[acc_name]], 1e-4, 1e-6) and ok
                ids = {}
                for n, prm in module.named_parameters(remove_duplicate=False):
                    ids.setdefault(id(prm), []).append(n)
                for group in ids.values():  # each parameter once (a tied weight once)
                    if sum(n in seen for n in group) != 1:
                        print("train_python: parameter %s is in acc %d times" % ("/".join(group),
                                                                                sum(n in seen for n in group)))
                        ok = False
            norm = m.clip_grad_norm(CLIP)
            if k == 0:
                good = abs(norm - ref_norm0) <= 1e-4 * ref_norm0
                print("step 0: gradient norm %.7f, PyTorch %.7f%s" % (norm, ref_norm0, "" if good else "  FAIL"))
                ok = ok and good
            m.adamw(lr=lr_at(k), beta1=BETAS[0], beta2=BETAS[1], eps=EPS, weight_decay=WD)
        noise = 0
        for acc_name, p in m.parameters().items():
            real = ref_rms[names[acc_name]] > 1e-9
            noise += int((~real).sum())
            ok = close("param " + acc_name, as_numpy(p)[real], ref_final[names[acc_name]][real], 1e-3, 1e-5) and ok
        print("parameters after %d steps: equal but for %d elements whose gradient is 0 in exact arithmetic "
              "(PyTorch's RMS below 1e-9)" % (steps, noise))
        c = m.counters()
        good = c["peak_bytes_measured"] == c["planned_peak_bytes"]
        if budget:
            good = good and c["peak_bytes_measured"] <= budget
        print("peak: measured %d, planned %d, budget %s%s" % (c["peak_bytes_measured"], c["planned_peak_bytes"],
                                                             budget or "-", "" if good else "  FAIL"))
        ok = ok and good
        m.close()
    print("train_python: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
