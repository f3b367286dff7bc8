"""python_api.py ACC TARGET DIR - the acc Python package (python/acc) against
the C path, on one target (cpu or cuda-emu).

Compiles a tiny GPT-2 and a tiny MLP with `acc compile --shared` into DIR and,
through `import acc`:
  - the first two steps' losses (around an AdamW update) and the first step's
    gradients equal, bit for bit, those of `acc run` (the C runtime driven
    from C: a library of its own, the same parameters and inputs given as
    tensor files written by the package);
  - parameters and gradients are the library's memory: on cpu NumPy views
    (a weight written through one changes the loss exactly as an
    independent NumPy forward of the MLP says, and acc_read sees it), on
    cuda-emu DLPack tensors (numpy.from_dlpack writes into the arena);
  - save/load round trip (bit for bit, and the loss after it), forward's loss
    equals step's, accumulation doubles the gradients, clip_grad_norm's norm
    equals NumPy's, the counters (measured peak = planned peak, steps);
  - bad input: a wrong dtype, shape, name, an out-of-range token, a
    truncated parameter file, a step before parameters, a negative lr each
    raise acc.AccError with its status and message (the library's own where
    the library finds it).
Exits non-zero with a message on the first failure.
"""
import os
import subprocess
import sys

import numpy as np

import acc

ACC, TARGET, DIR = sys.argv[1], sys.argv[2], sys.argv[3]
GPT2 = ["-D", "V=256", "-D", "L=2", "-D", "C=32", "-D", "H=2", "-D", "T=16", "-D", "B=2"]
B, T = 2, 16
MLP = ["-D", "B=4", "-D", "D_in=6", "-D", "hidden=5", "-D", "classes=3"]


def check(cond, what):
    if not cond:
        print(f"python_api ({TARGET}): FAIL: {what}")
        sys.exit(1)


def compile_model(src, defs, out):
    subprocess.run([ACC, "compile", src, "--target", TARGET, *defs, "--budget", "256M", "--shared", "-o", out],
                   check=True, stderr=subprocess.DEVNULL)
    check(os.path.isfile(os.path.join(out, f"lib{os.path.basename(src)[:-6]}.so")), f"no .so in {out}")


def raises(fn, status, text):
    try:
        fn()
    except acc.AccError as e:
        check(e.status == status, f"status {e.status} ({e}), expected {status}")
        check(text in str(e), f"message '{e}' lacks '{text}'")
        print(f"  AccError as expected: {e}")
        return
    check(False, f"no AccError (expected '{text}')")


def same_bits(a, b):
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def grads_copy(m):
    if TARGET == "cpu":
        return {n: g.copy() for n, g in m.grads().items()}
    return {n: np.from_dlpack(g).copy() for n, g in m.grads().items()}


# ---- GPT-2 against acc run (the C path) ----
gdir = os.path.join(DIR, "gpt2")
compile_model("models/gpt2.acdsl", GPT2, gdir)
m = acc.load(gdir)
check(m.name == "gpt2" and m.target == TARGET, f"loaded {m!r}")
check(m.inputs == {"idx": ("i32", (B, T)), "targets": ("i32", (B, T))}, f"inputs {m.inputs}")
raises(lambda: m.step(), acc._lib.ERR_STATE, "was never given a value")  # the library refuses
m.init_params(7)
rng = np.random.default_rng(5)
idx = rng.integers(0, 256, (B, T))  # int64: converted to the input's i32
tgt = rng.integers(0, 256, (B, T)).astype(np.int32)
params_file, inputs_file = os.path.join(DIR, "p.bin"), os.path.join(DIR, "in.bin")
m.save(params_file)
acc.write_tensors(inputs_file, {"idx": idx.astype(np.int32), "targets": tgt})
loss0 = m.step(idx=idx, targets=tgt)
g0 = grads_copy(m)
m.adamw(1e-3, 0.9, 0.999, 1e-8, 0.0)  # acc run's update
loss1 = m.step()  # the inputs are still set
grads_file = os.path.join(DIR, "g.bin")
run = subprocess.run([ACC, "run", "models/gpt2.acdsl", "--target", TARGET, *GPT2, "--steps", "2", "--lr", "0.001",
                      "--params", params_file, "--inputs", inputs_file, "--dump-grads", grads_file],
                     check=True, capture_output=True, text=True).stdout.splitlines()
want = [f'{{"step": 0, "loss": {loss0:.6f}}}', f'{{"step": 1, "loss": {loss1:.6f}}}']
check(run[:2] == want, f"acc run printed {run[:2]}, Python's losses are {want}")
c_grads = acc.read_tensors(grads_file)
check(list(c_grads) == list(m.param_shapes), "gradient names differ")
for n, g in c_grads.items():
    check(same_bits(g, g0[n]), f"gradient of {n} differs from acc run's")
print(f"  gpt2 ({TARGET}): losses {loss0:.6f}, {loss1:.6f} and {len(c_grads)} gradients equal to acc run's")

# forward: the step's loss, the same bits; nothing else changes
before = m.read("wte")
m.step()
g_step = grads_copy(m)
l_step = m.step()
check(m.forward() == l_step, "forward's loss differs from step's")
check(same_bits(m.read("wte"), before), "forward or step changed a parameter")

# accumulation over two micro-batches on one batch: twice the gradients
m.forward_backward(accumulate=False)
m.forward_backward(accumulate=True)
g2 = grads_copy(m)
for n in g2:
    check(np.allclose(g2[n], 2 * g_step[n], rtol=1e-5, atol=1e-7), f"accumulated gradient of {n} is not twice")
m.zero_grads()
check(all(not g.any() for g in grads_copy(m).values()), "zero_grads left a gradient")

# clipping: the norm NumPy computes, the gradients scaled to the limit
m.step()
g = grads_copy(m)
want_norm = np.sqrt(sum(float(np.sum(x.astype(np.float64) ** 2)) for x in g.values()))
norm = m.clip_grad_norm(want_norm / 2)
check(abs(norm - want_norm) <= 1e-5 * want_norm, f"clip_grad_norm {norm}, NumPy {want_norm}")
after = np.sqrt(sum(float(np.sum(x.astype(np.float64) ** 2)) for x in grads_copy(m).values()))
check(abs(after - want_norm / 2) <= 1e-4 * want_norm, f"clipped norm {after}, wanted {want_norm / 2}")

# save/load: bit for bit, and the same loss
saved = os.path.join(DIR, "saved.bin")
m.save(saved)
ref = {n: m.read(n) for n in m.param_shapes}
l_saved = m.forward()
m.init_params(99)
check(m.forward() != l_saved, "other parameters gave the same loss")
m.load(saved)
check(all(same_bits(m.read(n), ref[n]) for n in ref), "load did not restore every parameter")
check(m.forward() == l_saved, "the loss after load differs")
check(all(same_bits(t, ref[n]) for n, t in acc.read_tensors(saved).items()), "read_tensors differs from read")

# counters
c = m.counters()
check(c["peak_bytes_measured"] == c["planned_peak_bytes"] == c["arena_bytes"] or TARGET != "cpu",
      f"measured peak {c['peak_bytes_measured']} != planned {c['planned_peak_bytes']}")
check(c["arena_bytes"] == m.arena_bytes and c["steps"] >= 7, f"counters {c}")
check(c["total_ms"]["forward"] > 0 and c["total_ms"]["backward"] > 0, f"counters {c}")

# bad input: clear errors, nothing changed
raises(lambda: m.set_input("idx", idx.astype(np.float32)), acc._lib.ERR_ARG, f"input 'idx' is i32[{B}, {T}]")
raises(lambda: m.step(idx=idx[:1]), acc._lib.ERR_SIZE, f"got an array of shape [1, {T}]")
raises(lambda: m.step(tokens=idx), acc._lib.ERR_NAME, "no input 'tokens'")
raises(lambda: m.step(idx=idx + 256), acc._lib.ERR_DATA, "is outside [0, 256)")  # the library's check
raises(lambda: m.adamw(-1.0), acc._lib.ERR_ARG, "lr")
raises(lambda: m.parameter("nope"), acc._lib.ERR_NAME, "no parameter 'nope'")
with open(saved, "rb") as f:
    data = f.read()
truncated = os.path.join(DIR, "truncated.bin")
with open(truncated, "wb") as f:
    f.write(data[:len(data) // 2])
raises(lambda: m.load(truncated), acc._lib.ERR_FORMAT, "truncated")
check(m.forward(idx=idx, targets=tgt) == m.forward(), "a failed load changed the model")
raises(lambda: acc.load(DIR), acc._lib.ERR_IO, "compile with `acc compile ... --shared")

# ---- the MLP: parameters in place, against an independent NumPy forward ----
mdir = os.path.join(DIR, "mlp")
compile_model("models/mlp.acdsl", MLP, mdir)
mlp = acc.load(mdir)
mlp.init_params(3)
x = rng.standard_normal((4, 6)).astype(np.float32)
labels = np.array([0, 2, 1, 2], dtype=np.int32)


def numpy_loss(p):
    h = np.maximum(x @ p["fc1.w"] + p["fc1.b"], 0)
    h = np.maximum(h @ p["fc2.w"] + p["fc2.b"], 0)
    z = (h @ p["out.w"] + p["out.b"]).astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(4), labels].mean()


params = mlp.parameters() if TARGET == "cpu" else {n: np.from_dlpack(t) for n, t in mlp.parameters().items()}
check(set(params) == {"fc1.w", "fc1.b", "fc2.w", "fc2.b", "out.w", "out.b"}, f"mlp parameters {list(params)}")
l_a = mlp.step(x=x, labels=labels)
check(abs(l_a - numpy_loss(params)) < 1e-5, f"mlp loss {l_a}, NumPy {numpy_loss(params)}")
# write through the arrays: the library sees it (acc_read, the loss), NumPy agrees
params["out.b"][:] = [3.0, -1.0, 0.5]
params["fc1.w"] *= 2
check(np.array_equal(mlp.read("out.b"), [3.0, -1.0, 0.5]), "a write through the view did not reach the arena")
l_b = mlp.step()
check(abs(l_b - l_a) > 1e-3, "the loss did not change after writing parameters")
check(abs(l_b - numpy_loss(params)) < 1e-5, f"mlp loss {l_b} after the write, NumPy {numpy_loss(params)}")
# gradients in place: out.b's is softmax - onehot, averaged
grads = mlp.grads() if TARGET == "cpu" else {n: np.from_dlpack(t) for n, t in mlp.grads().items()}
h = np.maximum(np.maximum(x @ params["fc1.w"] + params["fc1.b"], 0) @ params["fc2.w"] + params["fc2.b"], 0)
z = h @ params["out.w"] + params["out.b"]
p = np.exp(z - z.max(axis=1, keepdims=True))
p /= p.sum(axis=1, keepdims=True)
p[np.arange(4), labels] -= 1
check(np.allclose(grads["out.b"], p.mean(axis=0), atol=1e-6), f"out.b gradient {grads['out.b']}")
check(same_bits(grads["fc2.w"], mlp.read("fc2.w", grad=True)), "gradient view differs from acc_read")
if TARGET == "cpu":
    check(all(isinstance(a, np.ndarray) for a in params.values()), "cpu parameters are not NumPy arrays")
else:
    t = mlp.parameter("fc1.w")
    check(isinstance(t, acc.Tensor) and t.__dlpack_device__() == (1, 0), f"cuda-emu parameter {t!r}")
    check(np.from_dlpack(t).ctypes.data == t.data_ptr, "numpy.from_dlpack copied")
# the arrays keep the instance alive after the model is closed
mlp.close()
raises(lambda: mlp.step(), acc._lib.ERR_STATE, "the model is closed")
check(np.array_equal(params["out.b"], [3.0, -1.0, 0.5]), "a view outlived its arena")
print(f"python_api ({TARGET}): ok")
