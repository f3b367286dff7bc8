#!/usr/bin/env python3
"""roundtrip.py - `acc import` round trip: one training step of an imported
PyTorch module in acc equals the module's own step in PyTorch.

    python3 tests/torch/roundtrip.py ACC MODEL.py[:FUNC]... [--rtol R] [--atol A] [--also "ARGS"]...

Runs acc import (`python3 -m acc import --module MODEL.py:FUNC -o TMP`, FUNC
`build` by default; here
in-process, so that torch loads once), then `ACC run TMP/NAME.acdsl --steps 1 --params
TMP/NAME.params.bin --inputs TMP/NAME.inputs.bin --dump-grads TMP/grads.bin`
(acc's CPU target in float32), and compares the loss and every parameter
gradient with the module's loss.backward() in PyTorch, computed in float64
from the same float32 weights and inputs (so the reference's own rounding is
negligible): |acc - torch| <= atol + rtol |torch| for every element
(default rtol 1e-4, atol 1e-6; the loss rtol 1e-5, atol 2e-6 as acc prints
six decimals). Each --also "ARGS" runs and checks the step once more with
ARGS added to acc run (a policy or a budget: recomputation must not change
the result). The imported model must also elaborate at another batch size
(acc check -D B=3). Parameters are matched through TMP/NAME.names, and every
module parameter must be there exactly once (a tied weight once). Exit 0 on
success, 1 on a mismatch or a failed step, 77 (skipped) without PyTorch.
"""
import copy
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
try:
    import torch
except ImportError:
    print("roundtrip.py: PyTorch is not installed: skipped")
    sys.exit(77)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from acc import torch_import  # noqa: E402


def read_tensors(path):
    with open(path, "rb") as f:
        b = f.read()
    assert b[:8] == b"ACCPARAM", path
    _, count = struct.unpack_from("<II", b, 8)
    at, out = 16, {}
    for _ in range(count):
        (ln,) = struct.unpack_from("<I", b, at)
        name = b[at + 4:at + 4 + ln].decode()
        at += 4 + ln
        (nd,) = struct.unpack_from("<I", b, at)
        dims = struct.unpack_from("<%dq" % nd, b, at + 4)
        at += 4 + 8 * nd
        n = 1
        for d in dims:
            n *= d
        out[name] = torch.tensor(struct.unpack_from("<%df" % n, b, at), dtype=torch.float64).reshape(dims)
        at += 4 * n
    return out


def main():
    acc = sys.argv[1]
    rtol, atol = 1e-4, 1e-6
    models, alsos = [], []
    args = sys.argv[2:]
    while args:
        if args[0] == "--also" and len(args) > 1:
            alsos.append(args[1].split())
            args = args[2:]
        elif args[0] in ("--rtol", "--atol") and len(args) > 1:
            rtol, atol = (float(args[1]), atol) if args[0] == "--rtol" else (rtol, float(args[1]))
            args = args[2:]
        else:
            models.append(args[0])
            args = args[1:]
    status = 0
    for m in models:
        status |= roundtrip(acc, m, rtol, atol, alsos)
    return status


def compare(acc, base, tmp, extra, env, ref_loss, ref_grads, module, rtol, atol):
    """One `acc run` step (with extra arguments) against the reference."""
    cmd = [acc, "run", base + ".acdsl", "--steps", "1", "--params", base + ".params.bin", "--inputs",
           base + ".inputs.bin", "--dump-grads", os.path.join(tmp, "grads.bin")] + extra
    print("+ " + " ".join(cmd))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    if r.returncode != 0:
        print("roundtrip: acc run failed (exit %d)" % r.returncode)
        return False
    got_loss = json.loads(r.stdout.splitlines()[0])["loss"]
    grads = read_tensors(os.path.join(tmp, "grads.bin"))
    names = dict(line.split() for line in open(base + ".names"))
    ok = True
    if abs(got_loss - ref_loss) > 2e-6 + 1e-5 * abs(ref_loss):
        print("roundtrip: loss %.9g, PyTorch %.9g" % (got_loss, ref_loss))
        ok = False
    else:
        print("roundtrip: loss %.6f, PyTorch %.9g: equal" % (got_loss, ref_loss))
    seen = set()
    for acc_name, g in grads.items():
        tname = names[acc_name]
        seen.add(tname)
        want = ref_grads[tname]
        if tuple(g.shape) != tuple(want.shape):
            print("roundtrip: %s (%s): shape %s, PyTorch %s" % (acc_name, tname, list(g.shape), list(want.shape)))
            ok = False
            continue
        err = (g - want).abs()
        bad = err > atol + rtol * want.abs()
        worst = float((err / (atol + rtol * want.abs())).max())
        print("  %-36s %-36s max|err| %.2e  of tolerance %.3f%s" % (acc_name, tname, float(err.max()), worst,
                                                                   "  FAIL" if bad.any() else ""))
        ok = ok and not bool(bad.any())
    ids = {}
    for n, p in module.named_parameters(remove_duplicate=False):
        ids.setdefault(id(p), []).append(n)
    for group in ids.values():
        if sum(n in seen for n in group) != 1:
            print("roundtrip: parameter %s is in acc %d times" % ("/".join(group), sum(n in seen for n in group)))
            ok = False
    return ok


def roundtrip(acc, model_py, rtol, atol, alsos):
    model_py, func = (model_py, "build") if model_py.endswith(".py") else model_py.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location("m", model_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    module, inputs = getattr(mod, func)()

    # the reference: float64 forward and backward from the same float32 values
    ref = copy.deepcopy(module).double()
    loss = ref(*[t.double() if t.is_floating_point() else t for t in inputs])
    loss.backward()
    ref_loss = float(loss.detach())
    ref_grads = {n: p.grad for n, p in ref.named_parameters(remove_duplicate=False)}

    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    with tempfile.TemporaryDirectory(prefix="acc-import-") as tmp:
        # in this process, which has torch loaded already (`acc import` runs the
        # same main(); tests/torch/errors.py runs it through the driver)
        rc = torch_import.main(["--module", model_py + ":" + func, "-o", tmp])
        if rc != 0:
            print("roundtrip: acc import failed (exit %d)" % rc)
            return 1
        name = [f for f in os.listdir(tmp) if f.endswith(".acdsl")][0][:-6]
        base = os.path.join(tmp, name)
        print(open(base + ".acdsl").read())
        ok = True
        if "\nhparam B = " in open(base + ".acdsl").read():  # the recovered batch size is a real hparam
            r = subprocess.run([acc, "check", base + ".acdsl", "-D", "B=3"], capture_output=True, text=True)
            if r.returncode != 0 or "inputs: " not in r.stdout or "[3," not in r.stdout.split("inputs: ")[1]:
                print(r.stdout + r.stderr + "roundtrip: acc check -D B=3 failed")
                ok = False
        for extra in [[]] + alsos:
            ok = compare(acc, base, tmp, extra, env, ref_loss, ref_grads, module, rtol, atol) and ok
    print("roundtrip: %s: %s" % (name, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
