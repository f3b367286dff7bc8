"""_dlpack.py - DLPack capsules over memory of the model's arena, built
with ctypes (no compiled extension).

A capsule holds a DLManagedTensorVersioned (DLPack 1.0, writable: for a
consumer that asks with max_version >= (1, 0), as numpy 2 does) or the
unversioned DLManagedTensor (every other consumer: torch.from_dlpack, older
numpy, cupy, jax) pointing into the arena, without a copy. The consumer calls its deleter when it is
done; until then the tensor keeps the model's instance alive, so the
memory cannot be freed under it. A capsule nobody consumed is released by
its own destructor.
"""
import ctypes
from ctypes import POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p

KDL_CPU, KDL_CUDA = 1, 2  # DLDeviceType
KDL_INT, KDL_FLOAT = 0, 2  # DLDataTypeCode


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class DLPackVersion(Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(Structure):
    pass


DELETER_VERSIONED = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", c_void_p),
    ("deleter", DELETER_VERSIONED),
    ("flags", c_uint64),  # 0: writable, not a copy
    ("dl_tensor", DLTensor),
]

_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)
_NAME, _NAME_VERSIONED = b"dltensor", b"dltensor_versioned"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
# In the capsule's destructor the capsule is being freed: it is passed on
# as a plain address (a py_object would take a reference to a dying object).
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

# What each live DLManagedTensor needs kept: its struct, its shape and the
# owner of the memory; keyed by the struct's address, dropped by the deleter.
_live = {}


@DELETER
def _deleter(managed):
    _live.pop(ctypes.addressof(managed.contents), None)


@DELETER_VERSIONED
def _deleter_versioned(managed):
    _live.pop(ctypes.addressof(managed.contents), None)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule_ptr):
    # Called with the PyObject* of a capsule being destroyed: when nobody
    # consumed it (its name is still the unused one), its tensor is released
    # here; a consumer renames it and calls the deleter itself.
    for name in (_NAME, _NAME_VERSIONED):
        if _is_valid(capsule_ptr, name):
            _live.pop(_get_pointer(capsule_ptr, name), None)


def capsule(data_ptr, shape, bits, code, device_type, device_id, owner, versioned=False):
    """A capsule over data_ptr (row-major, shape), owned by owner: DLPack
    1.0's "dltensor_versioned" when versioned, else "dltensor"."""
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    dims = (c_int64 * max(len(shape), 1))(*shape)
    t = managed.dl_tensor
    t.data = data_ptr
    t.device = DLDevice(device_type, device_id)
    t.ndim = len(shape)
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(dims, POINTER(c_int64))
    t.strides = None  # compact row-major
    t.byte_offset = 0
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.flags = 0
        managed.deleter = _deleter_versioned
    else:
        managed.deleter = _deleter
    address = ctypes.addressof(managed)
    _live[address] = (managed, dims, owner)
    return _api.PyCapsule_New(address, _NAME_VERSIONED if versioned else _NAME, _capsule_destructor)
