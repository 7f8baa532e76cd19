"""DLPack: the capsules through which arrays cross libraries (numpy, PyTorch, JAX, CuPy).

Two directions, both for the DLPack 1.0 versioned capsules (``"dltensor_versioned"``) and
the older unversioned ones (``"dltensor"``):

- **export** (``Tensor.__dlpack__``): a backend whose primitives speak DLPack themselves (the
  numpy backend's ``ndarray``) hands out its own capsule, so the consumer sees the same memory.
  Every other backend (python, wasm, wgpu) exports a host *copy* it owns, through a capsule
  built here with ctypes. ``copy=False`` shares the python backend's ``array.array`` storage
  read-only in a versioned capsule (all dtypes but float16, stored as float32) and is refused
  elsewhere with ``BufferError``, as the standard asks. The exported memory lives until the
  consumer calls the deleter (or, if nobody consumes the capsule, until the capsule itself is
  collected).
- **import** (:func:`read_capsule`): a capsule's bytes copied into ``TensorData``, the deleter
  called and the capsule renamed ``used_*`` as the protocol requires.

Device codes: a backend whose memory is on the host reports ``(kDLCPU, 0)``; wgpu reports
``(kDLWebGPU, 0)`` and exports host copies (a GPU buffer has no address another library could
use).

>>> import ember
>>> t = ember.tensor([1.0, 2.0], backend="python")
>>> t.__dlpack_device__()
(1, 0)
>>> read_capsule(t.__dlpack__(max_version=(1, 0))).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

import ctypes
import functools
import math
from types import SimpleNamespace

from . import dtype as dt
from .errors import DTypeError
from .tensordata import TensorData

KDL_CPU = 1
KDL_WEBGPU = 15
VERSION = (1, 0)
FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2

# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
_FROM_CODE = {(_CODES[d.kind], d.bits): d for d in dt.ALL}
_FROM_CODE[(1, 1)] = dt.bool_  # some producers write bool as a 1-bit unsigned int
_FROM_CODE[(1, 8)] = dt.uint8


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# the names must outlive every capsule: module constants do
LEGACY, VERSIONED = b"dltensor", b"dltensor_versioned"
USED_LEGACY, USED_VERSIONED = b"used_dltensor", b"used_dltensor_versioned"

# exports alive in a consumer: address of the managed struct -> what its pointers point into
_LIVE: dict[int, tuple] = {}


def live_exports() -> int:
    """How many host copies exported here a consumer still holds (for tests and leaks)."""
    return len(_LIVE)


def _release_export(address) -> None:
    # called by the consumer (any thread; ctypes takes the GIL) exactly once
    _LIVE.pop(address, None)


@functools.cache
def _capi() -> SimpleNamespace:
    """The C API calls and callbacks, made on first use (``import ember`` stays cheap, and
    needs no C API where DLPack is never used, as in a browser)."""
    # our own handles, so no other module's argtypes on ctypes.pythonapi interfere
    api = ctypes.PyDLL(ctypes.pythonapi._name, handle=ctypes.pythonapi._handle)
    destructor_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    def fn(name, restype, *argtypes):
        f = getattr(api, name)
        f.restype, f.argtypes = restype, argtypes
        return f

    c = SimpleNamespace(
        new=fn("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
               destructor_type),
        is_valid=fn("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p),
        get_pointer=fn("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_char_p),
        set_name=fn("PyCapsule_SetName", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p),
        release=_Deleter(_release_export),
    )

    def capsule_destructor(capsule):
        # an unconsumed capsule still owns its tensor; a consumed one was renamed "used_*"
        try:
            for name in (VERSIONED, LEGACY):
                if c.is_valid(capsule, name):
                    _release_export(c.get_pointer(capsule, name))
        except Exception:  # noqa: BLE001 - a destructor must not raise into the interpreter
            pass

    c.destructor = destructor_type(capsule_destructor)
    return c


def device_of(backend) -> tuple[int, int]:
    """``__dlpack_device__`` of a backend's arrays."""
    return (KDL_CPU, 0) if backend.device.startswith("cpu") else (KDL_WEBGPU, 0)


def export(prim, backend, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The capsule ``Tensor.__dlpack__`` returns (see the module docstring for the rules)."""
    own = device_of(backend)
    if dl_device is not None and tuple(dl_device) not in (own, (KDL_CPU, 0)):
        raise BufferError(f"__dlpack__: can't export to device {tuple(dl_device)}; valid: "
                          f"{own} (the array's) or (1, 0) (a host copy)")
    if stream is not None and own == (KDL_CPU, 0):
        raise BufferError("__dlpack__: stream must be None for host memory")
    shares = own == (KDL_CPU, 0) and hasattr(prim, "__dlpack__")
    if shares:
        return _export_shared(prim, max_version, copy)
    versioned = max_version is not None and tuple(max_version) >= VERSION
    if copy is False:
        return _export_storage(prim, backend, versioned)
    data = backend.to_data(prim)
    buf = (ctypes.c_char * max(len(data.buffer), 1)).from_buffer_copy(data.buffer or b"\0")
    return _capsule(ctypes.addressof(buf), buf, data.shape, data.dtype, versioned,
                    FLAG_IS_COPIED)


def _export_storage(prim, backend, versioned: bool):
    """``copy=False`` off the numpy backend: the primitive's own storage, read-only (primitives
    are never written), where the backend lays it out as DLPack reads it
    (``backend.host_buffer``: the python backend's ``array.array``) and the capsule is
    versioned, so it can say read-only."""
    storage = getattr(backend, "host_buffer", lambda p: None)(prim)
    if storage is None or not versioned:
        why = ("its arrays are not in host memory laid out as DLPack reads them"
               if storage is None else "an unversioned capsule can't say read-only; pass "
               "max_version=(1, 0)")
        raise BufferError(f"__dlpack__: backend {backend.name} can't share its memory "
                          f"(copy=False): {why}; or pass copy=None or copy=True for a host copy")
    return _capsule(storage.buffer_info()[0], storage, tuple(backend.shape(prim)),
                    backend.dtype(prim), True, FLAG_READ_ONLY)


def _export_shared(prim, max_version, copy):
    kwargs = {"copy": copy}
    if max_version is not None:
        kwargs["max_version"] = tuple(max_version)
    try:
        return prim.__dlpack__(**kwargs)
    except BufferError:
        # a read-only array (a broadcast scalar) can't go out in an unversioned capsule
        if copy is False:
            raise
        import numpy as np

        return np.array(prim).__dlpack__(**kwargs)


def _capsule(address: int, owner, shape: tuple[int, ...], dtype: dt.DType, versioned: bool,
             flags: int):
    """A capsule of the compact row-major tensor at ``address``, keeping ``owner`` (its memory)
    alive until the consumer's deleter call."""
    ndim = len(shape)
    dims = (ctypes.c_int64 * max(ndim, 1))(*shape)
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = address
    t.device = DLDevice(KDL_CPU, 0)
    t.ndim = ndim
    t.dtype = DLDataType(_CODES[dtype.kind], dtype.bits, 1)
    t.shape = dims
    t.strides = None  # row-major, compact
    t.byte_offset = 0
    c = _capi()
    managed.deleter = c.release
    if versioned:
        managed.version = DLPackVersion(*VERSION)
        managed.flags = flags
    address = ctypes.addressof(managed)
    _LIVE[address] = (managed, owner, dims)
    return c.new(address, VERSIONED if versioned else LEGACY, c.destructor)


def capsule_of(obj, copy=None):
    """A capsule from a DLPack exporter: versioned when the producer knows the keyword."""
    try:
        return obj.__dlpack__(max_version=VERSION, copy=copy)
    except TypeError:  # a producer older than DLPack 1.0 takes no max_version/copy
        if copy:
            raise BufferError("the producer predates DLPack 1.0 and can't be asked to copy")
        return obj.__dlpack__()


def read_capsule(capsule) -> TensorData:
    """Copy a capsule's tensor into TensorData, then release it as the protocol asks."""
    c = _capi()
    ref = ctypes.c_void_p(id(capsule))
    if c.is_valid(ref, VERSIONED):
        name, used, kind = VERSIONED, USED_VERSIONED, DLManagedTensorVersioned
    elif c.is_valid(ref, LEGACY):
        name, used, kind = LEGACY, USED_LEGACY, DLManagedTensor
    else:
        raise BufferError("from_dlpack: not an unconsumed DLPack capsule (each one is read once)")
    address = c.get_pointer(ref, name)
    managed = kind.from_address(address)
    if kind is DLManagedTensorVersioned and managed.version.major > VERSION[0]:
        raise BufferError(f"from_dlpack: DLPack {managed.version.major}.x is newer than 1.0")
    t = managed.dl_tensor
    try:
        data = _copy_out(t)
    finally:
        # renamed first, so the capsule's own destructor won't release it a second time
        c.set_name(ref, used)
        if managed.deleter:
            managed.deleter(address)
    return data


def _copy_out(t: DLTensor) -> TensorData:
    if t.device.device_type != KDL_CPU:
        raise BufferError(f"from_dlpack: device type {t.device.device_type} is not the host "
                          f"(1); ask the producer for a host copy first")
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _FROM_CODE:
        raise DTypeError(f"from_dlpack: DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, "
                         f"{t.dtype.lanes} lanes has no Ember dtype; valid: "
                         + ", ".join(d.name for d in dt.ALL))
    d = _FROM_CODE[key]
    shape = tuple(t.shape[i] for i in range(t.ndim))
    n = math.prod(shape)
    base = (t.data or 0) + t.byte_offset
    compact = _compact_strides(shape)
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else compact
    if n == 0:
        return TensorData(b"", shape, d)
    if all(s == c or dim == 1 for s, c, dim in zip(strides, compact, shape)):
        return TensorData(ctypes.string_at(base, n * d.itemsize), shape, d)
    # strided: gather element by element (offsets in elements, possibly negative)
    offsets = [0]
    for dim, stride in zip(shape, strides):
        offsets = [o + i * stride for o in offsets for i in range(dim)]
    lo = min(offsets)
    span = ctypes.string_at(base + lo * d.itemsize, (max(offsets) - lo + 1) * d.itemsize)
    size = d.itemsize
    out = b"".join(span[(o - lo) * size:(o - lo + 1) * size] for o in offsets)
    return TensorData(out, shape, d)


def _compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))
