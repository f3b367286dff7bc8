"""_lib.py - the C side of the package: the runtime's structures (accrt.h)
as ctypes declarations and the signatures of the acc_* calls that a shared
model library (``acc compile ... --shared``) exports.

This file mirrors accrt.h and nothing else; keep the two in step (the
API version is checked when a library is loaded).
"""
import ctypes
from ctypes import (
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int64,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)

API_VERSION = 3  # ACC_API_VERSION

# acc_dtype
DT_F32, DT_I32, DT_BF16 = 0, 1, 2
# phases of the counters
PHASES = ("forward", "backward", "optimizer")

# acc_status, for AccError.status
OK = 0
ERR_NULL, ERR_SIZE, ERR_NAME, ERR_NOMEM, ERR_STATE, ERR_IO, ERR_FORMAT = 1, 2, 3, 4, 5, 6, 7
ERR_DATA, ERR_VERSION, ERR_NO_DEVICE, ERR_ARG, ERR_FAILED, ERR_DEVICE = 8, 9, 10, 11, 12, 13


class Options(Structure):  # acc_options
    _fields_ = [
        ("struct_size", c_uint32),
        ("api_version", c_uint32),
        ("num_threads", c_int),
        ("seed", c_uint64),
    ]


class ParamDesc(Structure):  # acc_param_desc
    _fields_ = [
        ("name", c_char_p),
        ("ndim", c_int),
        ("dim", c_int64 * 6),
        ("elems", c_int64),
        ("offset", c_int64),
        ("grad_offset", c_int64),
        ("m_offset", c_int64),
        ("v_offset", c_int64),
        ("init", c_int),
        ("init_scale", c_float),
    ]


class InputDesc(Structure):  # acc_input_desc
    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int),
        ("ndim", c_int),
        ("dim", c_int64 * 6),
        ("elems", c_int64),
        ("offset", c_int64),
        ("index_bound", c_int64),
        ("stage_offset", c_int64),
    ]


class ModelDesc(Structure):  # acc_model_desc
    _fields_ = [
        ("api_version", c_uint32),
        ("model_name", c_char_p),
        ("target", c_char_p),
        ("device", c_void_p),
        ("images", c_void_p),
        ("n_images", c_int),
        ("workspace_offset", c_int64),
        ("workspace_bytes", c_int64),
        ("tf32", c_int),
        ("arena_bytes", c_int64),
        ("n_params", c_int),
        ("params", POINTER(ParamDesc)),
        ("n_inputs", c_int),
        ("inputs", POINTER(InputDesc)),
        ("loss_offset", c_int64),
        ("has_optimizer", c_int),
        ("optimizer_dtype", c_int),
        ("run", c_void_p),
        ("run_forward", c_void_p),
        ("budget_bytes", c_int64),
        ("planned_peak_bytes", c_int64),
        ("plan_summary", c_char_p),
        ("micro_batches", c_int),
        ("loss_scale", c_float),
        ("host_bytes", c_int64),
        ("optimizer_host_bytes", c_int64),
        ("copy_ids", c_int),
        ("ranks", c_int),
        ("zero", c_int),
        ("rank_scale", c_float),
        ("n_buckets", c_int),
        ("buckets", c_void_p),
        ("shard_m_offset", c_int64),
        ("shard_v_offset", c_int64),
        ("shard_elems", c_int64),
        ("shard_g_offset", c_int64),
        ("plan_hash", c_uint64),
    ]


class Counters(Structure):  # acc_counters
    _fields_ = [
        ("arena_bytes", c_int64),
        ("peak_bytes_measured", c_int64),
        ("phase_ms", c_double * 3),
        ("total_ms", c_double * 3),
        ("steps", c_int64),
        ("host_bytes", c_int64),
    ]


def bind(lib, model):
    """Declare the signatures of lib's acc_* calls and <model>_desc."""
    m = c_void_p  # acc_model *
    sigs = {
        "acc_status_string": (c_char_p, [c_int]),
        "acc_create": (c_int, [POINTER(ModelDesc), POINTER(Options), POINTER(c_void_p)]),
        "acc_destroy": (None, [m]),
        "acc_last_error": (c_char_p, [m]),
        "acc_init_params": (c_int, [m, c_uint64]),
        "acc_save_params": (c_int, [m, c_char_p]),
        "acc_load_params": (c_int, [m, c_char_p]),
        "acc_save_grads": (c_int, [m, c_char_p]),
        "acc_load_inputs": (c_int, [m, c_char_p]),
        "acc_set_input": (c_int, [m, c_char_p, c_void_p, c_size_t]),
        "acc_step": (c_int, [m, POINTER(c_float)]),
        "acc_forward_backward": (c_int, [m, POINTER(c_float), c_int]),
        "acc_zero_grads": (c_int, [m]),
        "acc_forward": (c_int, [m, POINTER(c_float)]),
        "acc_clip_grad_norm": (c_int, [m, c_float, POINTER(c_float)]),
        "acc_adamw": (c_int, [m, c_float, c_float, c_float, c_float, c_float]),
        "acc_param": (c_int, [m, c_char_p, POINTER(c_void_p), POINTER(c_int64)]),
        "acc_grad": (c_int, [m, c_char_p, POINTER(c_void_p), POINTER(c_int64)]),
        "acc_read": (c_int, [m, c_char_p, c_int, c_void_p, c_size_t]),
        "acc_write": (c_int, [m, c_char_p, c_void_p, c_size_t]),
        "acc_get_counters": (c_int, [m, POINTER(Counters)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    desc = getattr(lib, model + "_desc")
    desc.restype, desc.argtypes = POINTER(ModelDesc), []
    return desc


def load_library(path):
    """dlopen a model's shared library, each its own copy of the runtime."""
    return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
