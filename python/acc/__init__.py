"""acc - train a model compiled by acc from Python.

``acc compile model.acdsl --budget 8G --shared -o out/gpt2`` writes
out/gpt2/libgpt2.so (the model's schedule and the whole runtime in one shared
library); ``acc.load("out/gpt2")`` opens it with ctypes and gives a Model:

    import acc, numpy as np
    m = acc.load("out/gpt2")
    m.init_params(seed=42)
    loss = m.step(idx=idx, targets=targets)     # forward + backward
    m.adamw(lr=3e-4)
    w = m.parameters()["wte"]                   # a NumPy view of the arena (cpu)

Parameters and gradients are the library's own memory, not copies: NumPy
arrays on the cpu target, DLPack tensors (``Tensor``; torch.from_dlpack and
numpy.from_dlpack read them in place) on the cuda and cuda-emu targets. Every
failure of the library raises AccError with acc's status and message. No
compiled extension: plain ctypes over the library's C API (accrt.h).

``python3 -m acc import --module FILE.py:FUNC -o DIR`` (or ``acc import``)
imports a PyTorch module into acc's DSL (acc/torch_import.py); importing this
package does not import torch.
"""
import json
import os
import struct

import numpy as np

from . import _dlpack, _lib

__version__ = "0.1.0"
__all__ = ["AccError", "Model", "Tensor", "load", "read_tensors", "write_tensors"]


class AccError(RuntimeError):
    """A failed call: ``status`` is acc's status code (accrt.h's acc_status),
    ``status_string`` its text, ``detail`` the library's message."""

    def __init__(self, status, status_string, detail, what=""):
        self.status, self.status_string, self.detail = status, status_string, detail
        text = f"{status_string}: {detail}" if detail else status_string
        super().__init__(f"{what}: {text}" if what else text)


_NP_DTYPE = {_lib.DT_F32: np.dtype(np.float32), _lib.DT_I32: np.dtype(np.int32), _lib.DT_BF16: np.dtype(np.uint16)}
_DT_NAME = {_lib.DT_F32: "f32", _lib.DT_I32: "i32", _lib.DT_BF16: "bf16"}


class _Instance:
    """One acc_model of one library: destroyed when the last Model, array
    view or DLPack tensor that points into its arena is gone."""

    def __init__(self, lib, handle):
        self.lib, self.handle = lib, handle

    def __del__(self):
        if self.handle:
            self.lib.acc_destroy(self.handle)
            self.handle = None


class Tensor:
    """A parameter or gradient in a device target's arena (cuda: GPU memory;
    cuda-emu: host memory), shared through DLPack: ``torch.from_dlpack(t)``
    or ``numpy.from_dlpack(t)`` (cuda-emu) see the same memory, no copy."""

    def __init__(self, instance, name, data_ptr, shape, device_type):
        self._instance, self.name, self.data_ptr = instance, name, data_ptr
        self.shape, self.dtype, self._device_type = tuple(shape), np.dtype(np.float32), device_type

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this memory (DLPack 1.0's when the consumer
        takes it). stream is not used: every call of the library has
        finished its device work when it returns. copy=True is refused
        (the point is the shared memory), as is another device."""
        if copy or (dl_device is not None and tuple(dl_device) != self.__dlpack_device__()):
            raise BufferError("acc.Tensor shares the arena's memory: no copy, no other device")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return _dlpack.capsule(self.data_ptr, self.shape, 32, _dlpack.KDL_FLOAT, self._device_type, 0, self._instance,
                               versioned)

    def __dlpack_device__(self):
        return (self._device_type, 0)

    def __repr__(self):
        kind = "cuda" if self._device_type == _dlpack.KDL_CUDA else "cpu"
        return f"acc.Tensor({self.name!r}, shape={self.shape}, float32, device={kind}:0)"


class Model:
    """A compiled model's instance (acc_create). Obtain with acc.load()."""

    def __init__(self, lib_path, model, num_threads=0, seed=1234):
        self.path = lib_path
        self._lib = _lib.load_library(lib_path)
        desc_fn = _lib.bind(self._lib, model)
        self._desc_ptr = desc_fn()
        d = self._desc_ptr.contents
        if d.api_version != _lib.API_VERSION:
            raise AccError(
                _lib.ERR_VERSION, self._status_text(_lib.ERR_VERSION),
                f"{lib_path} has API version {d.api_version}, this package speaks {_lib.API_VERSION}", "load")
        self.name = d.model_name.decode()
        self.target = d.target.decode()
        self.arena_bytes = d.arena_bytes
        self.budget_bytes = d.budget_bytes
        self.planned_peak_bytes = d.planned_peak_bytes
        self.has_optimizer = bool(d.has_optimizer)
        self.micro_batches = max(1, d.micro_batches)  # the step runs its plan once per micro-batch
        self.plan_summary = d.plan_summary.decode() if d.plan_summary else ""
        self._params = {}
        for i in range(d.n_params):
            p = d.params[i]
            self._params[p.name.decode()] = tuple(p.dim[k] for k in range(p.ndim))
        self._inputs = {}
        for i in range(d.n_inputs):
            x = d.inputs[i]
            self._inputs[x.name.decode()] = (x.dtype, tuple(x.dim[k] for k in range(x.ndim)), x.index_bound)
        opt = _lib.Options(0, _lib.API_VERSION, int(num_threads), int(seed))
        opt.struct_size = _lib.ctypes.sizeof(opt)
        handle = _lib.c_void_p()
        rc = self._lib.acc_create(self._desc_ptr, _lib.ctypes.byref(opt), _lib.ctypes.byref(handle))
        self._instance = _Instance(self._lib, handle.value) if handle.value else None
        self._check(rc, "create")

    # ---- errors ----

    def _status_text(self, status):
        return self._lib.acc_status_string(status).decode()

    def _check(self, rc, what):
        if rc != _lib.OK:
            inst = getattr(self, "_instance", None)
            detail = self._lib.acc_last_error(inst.handle if inst else None) or b""
            raise AccError(rc, self._status_text(rc), detail.decode(errors="replace"), what)

    def _error(self, status, what, detail):
        raise AccError(status, self._status_text(status), detail, what)

    @property
    def _h(self):
        if self._instance is None:
            self._error(_lib.ERR_STATE, "model", "the model is closed")
        return self._instance.handle

    def close(self):
        """Drop this model's hold on its instance; the instance is destroyed
        once no array or tensor from parameters()/grads() points into it."""
        self._instance = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"acc.Model({self.name!r}, target={self.target!r}, {len(self._params)} parameters, "
                f"arena {self.arena_bytes} bytes)")

    # ---- what the model has ----

    @property
    def inputs(self):
        """{name: (dtype name, shape)} of the model's inputs."""
        return {n: (_DT_NAME[dt], shape) for n, (dt, shape, _) in self._inputs.items()}

    @property
    def param_shapes(self):
        """{name: shape} of every parameter, in the library's order."""
        return dict(self._params)

    # ---- parameters ----

    def init_params(self, seed=42):
        """Every parameter from its DSL initializer (deterministic in seed);
        gradients and optimizer state zeroed."""
        self._check(self._lib.acc_init_params(self._h, int(seed)), "init_params")

    def save(self, path):
        """Write every parameter to path in acc's tensor format (what
        <model>_save_params writes and `acc run --params` reads)."""
        self._check(self._lib.acc_save_params(self._h, os.fsencode(path)), "save")

    def load(self, path):
        """Read every parameter from path (acc's tensor format); the whole
        file is checked against the model before anything changes."""
        self._check(self._lib.acc_load_params(self._h, os.fsencode(path)), "load")

    def save_grads(self, path):
        """Write every parameter gradient to path (acc's tensor format)."""
        self._check(self._lib.acc_save_grads(self._h, os.fsencode(path)), "save_grads")

    def _view(self, name, grad):
        fn = self._lib.acc_grad if grad else self._lib.acc_param
        ptr, elems = _lib.c_void_p(), _lib.c_int64()
        self._check(fn(self._h, name.encode(), _lib.ctypes.byref(ptr), _lib.ctypes.byref(elems)),
                    "grad" if grad else "parameter")
        shape = self._params[name]
        if self.target == "cpu":
            buf = (_lib.c_float * elems.value).from_address(ptr.value)
            buf._acc_instance = self._instance  # the view keeps the arena alive
            return np.frombuffer(buf, dtype=np.float32).reshape(shape)
        device = _dlpack.KDL_CPU if self.target == "cuda-emu" else _dlpack.KDL_CUDA
        return Tensor(self._instance, name, ptr.value, shape, device)

    def parameter(self, name):
        """Parameter name in place: a NumPy array on the cpu target (writing
        to it changes the model), a DLPack Tensor on the device targets."""
        self._known_param(name)
        return self._view(name, False)

    def grad(self, name):
        """The gradient of parameter name in place (as parameter())."""
        self._known_param(name)
        return self._view(name, True)

    def parameters(self):
        """{name: parameter(name)} for every parameter, in the library's order."""
        return {n: self._view(n, False) for n in self._params}

    def grads(self):
        """{name: grad(name)} for every parameter."""
        return {n: self._view(n, True) for n in self._params}

    def read(self, name, grad=False):
        """A NumPy copy of a parameter (or its gradient) on any target."""
        self._known_param(name)
        out = np.empty(self._params[name], dtype=np.float32)
        self._check(self._lib.acc_read(self._h, name.encode(), int(grad), out.ctypes.data, out.nbytes), "read")
        return out

    def write(self, name, value):
        """Copy value (float32, the parameter's shape) into parameter name."""
        self._known_param(name)
        arr = self._as_array(name, value, _lib.DT_F32, self._params[name], "parameter")
        self._check(self._lib.acc_write(self._h, name.encode(), arr.ctypes.data, arr.nbytes), "write")

    def _known_param(self, name):
        if name not in self._params:
            self._error(_lib.ERR_NAME, "parameter",
                        f"no parameter '{name}' in model '{self.name}' (it has: {', '.join(self._params)})")

    # ---- inputs ----

    def _as_array(self, name, value, dtype, shape, kind):
        want = _NP_DTYPE[dtype]
        arr = np.asarray(value)
        if arr.dtype != want:
            ok_int = dtype == _lib.DT_I32 and np.issubdtype(arr.dtype, np.integer)
            if not ok_int:
                hint = " (bf16 data as np.uint16 bit patterns)" if dtype == _lib.DT_BF16 else ""
                self._error(_lib.ERR_ARG, "set_input" if kind == "input" else "write",
                            f"{kind} '{name}' is {_DT_NAME[dtype]}{list(shape)}; got an array of {arr.dtype}"
                            f" (convert it with .astype(np.{want.name})){hint}")
            if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
                self._error(_lib.ERR_DATA, "set_input", f"{kind} '{name}' has values outside int32")
            arr = arr.astype(np.int32)
        if arr.shape != tuple(shape):
            self._error(_lib.ERR_SIZE, "set_input" if kind == "input" else "write",
                        f"{kind} '{name}' has shape {list(shape)}; got an array of shape {list(arr.shape)}")
        return np.ascontiguousarray(arr)

    def set_input(self, name, value):
        """Copy value into input name: its dtype (any integer array for an
        i32 input) and exact shape are checked, it is made contiguous."""
        if name not in self._inputs:
            self._error(_lib.ERR_NAME, "set_input",
                        f"no input '{name}' in model '{self.name}' (its inputs: {', '.join(self._inputs)})")
        dtype, shape, _ = self._inputs[name]
        arr = self._as_array(name, value, dtype, shape, "input")
        self._check(self._lib.acc_set_input(self._h, name.encode(), arr.ctypes.data, arr.nbytes), "set_input")

    def set_inputs(self, inputs=None, **named):
        """Set several inputs: a dict and/or keyword arguments."""
        for name, value in {**(inputs or {}), **named}.items():
            self.set_input(name, value)

    def load_inputs(self, path):
        """Set inputs from a tensor file (acc's format, by name)."""
        self._check(self._lib.acc_load_inputs(self._h, os.fsencode(path)), "load_inputs")

    # ---- the training step ----

    def step(self, inputs=None, **named):
        """Set the given inputs, run forward and backward; the loss. Every
        parameter gradient is overwritten."""
        return self.forward_backward(inputs, accumulate=False, **named)

    def forward_backward(self, inputs=None, accumulate=False, **named):
        """As step(); with accumulate=True this step's gradients are added
        to those held (gradient accumulation over micro-batches)."""
        self.set_inputs(inputs, **named)
        loss = _lib.c_float()
        self._check(self._lib.acc_forward_backward(self._h, _lib.ctypes.byref(loss), int(bool(accumulate))),
                    "forward_backward" if accumulate else "step")
        return loss.value

    def forward(self, inputs=None, **named):
        """The forward alone (evaluation, dropout off): the loss. Parameters,
        gradients and optimizer state are untouched."""
        self.set_inputs(inputs, **named)
        loss = _lib.c_float()
        self._check(self._lib.acc_forward(self._h, _lib.ctypes.byref(loss)), "forward")
        return loss.value

    def zero_grads(self):
        """Every parameter gradient to zero."""
        self._check(self._lib.acc_zero_grads(self._h), "zero_grads")

    def clip_grad_norm(self, max_norm):
        """Global 2-norm of the gradients; scales them to max_norm when above
        (PyTorch's clip_grad_norm_). Returns the norm before clipping."""
        norm = _lib.c_float()
        self._check(self._lib.acc_clip_grad_norm(self._h, float(max_norm), _lib.ctypes.byref(norm)),
                    "clip_grad_norm")
        return norm.value

    def adamw(self, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        """One fused AdamW update of every parameter, with this call's lr."""
        self._check(self._lib.acc_adamw(self._h, lr, beta1, beta2, eps, weight_decay), "adamw")

    # ---- counters ----

    def counters(self):
        """The instance's counters: arena_bytes (the planned peak, allocated),
        peak_bytes_measured (every byte the runtime holds), phase_ms and
        total_ms ({forward, backward, optimizer}: the last step's time and
        the sum over all steps), steps, and host_bytes (host memory for the
        step: offloaded activations, the optimizer state with
        --optimizer-state host) with its planned value."""
        c = _lib.Counters()
        self._check(self._lib.acc_get_counters(self._h, _lib.ctypes.byref(c)), "counters")
        d = self._desc_ptr.contents
        return {
            "arena_bytes": c.arena_bytes,
            "peak_bytes_measured": c.peak_bytes_measured,
            "planned_peak_bytes": self.planned_peak_bytes,
            "phase_ms": dict(zip(_lib.PHASES, c.phase_ms)),
            "total_ms": dict(zip(_lib.PHASES, c.total_ms)),
            "steps": c.steps,
            "host_bytes": c.host_bytes,
            "planned_host_bytes": d.host_bytes + d.optimizer_host_bytes,
        }


def _find_library(path, model):
    """The shared library of a directory written by `acc compile --shared`
    (or the path of the library itself) and the model's name."""
    if os.path.isfile(path):
        base = os.path.basename(path)
        if not (base.startswith("lib") and base.endswith(".so")):
            raise AccError(_lib.ERR_IO, "file error", f"{path} is not a model library lib<model>.so", "load")
        return path, model or base[3:-3]
    if not os.path.isdir(path):
        raise AccError(_lib.ERR_IO, "file error", f"no such directory: {path}", "load")
    if model is None:
        try:
            with open(os.path.join(path, "plan.json")) as f:
                model = json.load(f).get("model")
        except (OSError, ValueError):
            libs = sorted(n[3:-3] for n in os.listdir(path) if n.startswith("lib") and n.endswith(".so"))
            model = libs[0] if len(libs) == 1 else None
    so = os.path.join(path, f"lib{model}.so") if model else None
    if not so or not os.path.isfile(so):
        raise AccError(
            _lib.ERR_IO, "file error",
            f"{path} has no lib{model or '<model>'}.so: compile with `acc compile ... --shared -o {path}`", "load")
    return so, model


def load(path, model=None, num_threads=0, seed=1234):
    """Open a compiled model: path is the directory of `acc compile --shared
    -o DIR` (or its lib<model>.so); model names it when the directory has
    no plan.json. num_threads 0 is the OpenMP default; seed keys dropout.
    The parameters are not initialised: call init_params() or load()."""
    so, name = _find_library(os.fspath(path), model)
    return Model(os.path.abspath(so), name, num_threads, seed)


# ---- acc's tensor file format (runtime/accrt.c): "ACCPARAM", u32 version
# 1, u32 count, then per tensor: u32 name length, the name, u32 ndim, i64
# dims[ndim], 4-byte elements (float32; i32 inputs as raw int32). Native
# byte order. ----

_MAGIC = b"ACCPARAM"


def write_tensors(path, tensors):
    """Write {name: array} (float32 or int32, any shape up to 6 dims) to
    path in acc's tensor format (parameters or inputs files)."""
    with open(path, "wb") as f:
        f.write(_MAGIC + struct.pack("=II", 1, len(tensors)))
        for name, value in tensors.items():
            arr = np.ascontiguousarray(value)
            if arr.dtype not in (np.float32, np.int32) or arr.ndim > 6:
                raise AccError(_lib.ERR_ARG, "argument out of range",
                               f"tensor '{name}' is {arr.dtype} with {arr.ndim} dims; the format holds float32 "
                               "or int32 with at most 6", "write_tensors")
            key = name.encode()
            f.write(struct.pack("=I", len(key)) + key + struct.pack("=I", arr.ndim))
            f.write(struct.pack(f"={arr.ndim}q", *arr.shape))
            f.write(arr.tobytes())


def read_tensors(path, dtype=np.float32):
    """{name: array} from a file in acc's tensor format (every tensor read as
    dtype: float32, or np.int32 for an inputs file)."""
    with open(path, "rb") as f:
        data = f.read()
    bad = AccError(_lib.ERR_FORMAT, "file does not match the model", f"{path} is not an acc tensor file (version 1)",
                   "read_tensors")
    if data[:8] != _MAGIC or len(data) < 16:
        raise bad
    version, count = struct.unpack_from("=II", data, 8)
    if version != 1:
        raise bad
    at, out = 16, {}
    try:
        for _ in range(count):
            (n,) = struct.unpack_from("=I", data, at)
            name = data[at + 4:at + 4 + n].decode()
            at += 4 + n
            (nd,) = struct.unpack_from("=I", data, at)
            if nd > 6:
                raise bad
            dims = struct.unpack_from(f"={nd}q", data, at + 4)
            at += 4 + 8 * nd
            elems = int(np.prod(dims, dtype=np.int64))
            if at + 4 * elems > len(data):
                raise bad
            out[name] = np.frombuffer(data, dtype=dtype, count=elems, offset=at).reshape(dims).copy()
            at += 4 * elems
    except struct.error:
        raise bad from None
    if at != len(data):
        raise bad
    return out
