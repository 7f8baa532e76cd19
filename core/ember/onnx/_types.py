"""ONNX element types and ember dtypes.

Ember has no int16, unsigned types wider than 8 bits, bfloat16 or 8/4/2-bit types: those ONNX
types run widened (int16/uint16 -> int32, uint32/uint64 -> int64, bfloat16 and float8/float4
-> float32, int4/int2 -> int8, uint4/uint2 -> uint8). Values keep their meaning; only the
storage is wider (the integer types' wrap-around: :mod:`._intwrap`).
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError
from ._lowbit import LOW_BIT, WIDE

# TensorProto.DataType numbers
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, BFLOAT16 = 10, 11, 12, 13, 16

ONNX_TO_EMBER = {
    FLOAT: dt.float32, UINT8: dt.uint8, INT8: dt.int8, UINT16: dt.int32, INT16: dt.int32,
    INT32: dt.int32, INT64: dt.int64, BOOL: dt.bool_, FLOAT16: dt.float16, DOUBLE: dt.float64,
    UINT32: dt.int64, UINT64: dt.int64, BFLOAT16: dt.float32,
    # the 8/4/2-bit types (see _lowbit)
    **{k: getattr(dt, WIDE[v]) for k, v in LOW_BIT.items()},
}
# numpy dtype names that ember stores natively, and the widenings for the rest
_NUMPY_WIDEN = {"int16": "int32", "uint16": "int32", "uint32": "int64", "uint64": "int64",
                "bfloat16": "float32", **WIDE}

_NAMES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 8: "string", 14: "complex64",
          15: "complex128", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
          20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1", 24: "float8e8m0",
          25: "uint2", 26: "int2"}


def onnx_dtype(elem_type: int, op: str = "onnx") -> dt.DType:
    """The ember dtype that holds ONNX element type ``elem_type``."""
    try:
        return ONNX_TO_EMBER[int(elem_type)]
    except KeyError:
        name = _NAMES.get(int(elem_type), str(elem_type))
        raise DTypeError(
            f"{op}: ONNX element type {name} has no ember dtype; supported: float32, float64, "
            "float16, bfloat16 (as float32), int8/16/32/64, uint8/16/32/64 (widened), bool"
        ) from None


def numpy_to_tensor(array, backend, op: str = "onnx"):
    """An ember tensor holding a numpy array (widened where ember lacks the dtype)."""
    import numpy as np

    from .. import from_numpy

    a = np.asarray(array)
    name = a.dtype.name
    if name == "uint64" and a.size and int(a.max()) >= 1 << 63:
        raise DTypeError(f"{op}: uint64 value {int(a.max())} is 2**63 or more; ember holds "
                         "uint64 as int64, whose values stop below 2**63")
    if name in _NUMPY_WIDEN:
        a = a.astype(_NUMPY_WIDEN[name])
    elif a.dtype.kind in "OSU":
        raise DTypeError(f"{op}: string tensors are not supported by ember")
    elif a.dtype.kind == "c":
        raise DTypeError(f"{op}: complex tensors are not supported by ember")
    elif name not in ("float32", "float64", "float16", "int8", "uint8", "int32", "int64", "bool"):
        raise DTypeError(f"{op}: numpy dtype {name} has no ember dtype")
    return from_numpy(a if a.flags.c_contiguous else a.copy(order="C"), backend=backend)


def constant_to_tensor(array, backend, op: str = "onnx"):
    """A graph constant (initializer, Constant node) as :func:`numpy_to_tensor` makes it; but
    integers the backend can't store (wgpu holds int64 in 32 bits, and exporters write
    ``Slice(ends=INT64_MAX)``) stay on the host: the shape ops read them as Python ints, and an
    op that computes with them on the device refuses (the value never reaches it wrapped)."""
    try:
        return numpy_to_tensor(array, backend, op)
    except DTypeError:
        import numpy as np

        if np.asarray(array).dtype.kind not in "iu":
            raise
        return numpy_to_tensor(array, "numpy", op)


def constant_onto(value, backend):
    """A graph constant (a Tensor) moved to ``backend`` by :func:`constant_to_tensor`'s rule:
    integers the backend can't store stay where they are (on the host)."""
    from ..nn.parameter import _onto

    try:
        return _onto(value, backend)
    except DTypeError:
        if not value.dtype.is_int:
            raise
        return value
