"""Data type functions: ``astype``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``,
``result_type``.

Promotion is the standard's table (no complex dtypes): within a kind the wider type wins, an
unsigned with a signed integer gives the narrowest signed type holding both (uint8 with int8
is int16); uint64 with a signed integer, which the table leaves out, raises DTypeError. Mixed
integer/float pairs, which the standard leaves to the implementation, give the float type.
Operations on a backend without the table's result (int16 on wasm) compute in the narrowest
integer type it holds that has its range.

>>> import ember.array_api as xp
>>> xp.result_type(xp.int8, xp.int32, 1.5)
ember.float32
>>> xp.finfo(xp.float32).eps
1.1920928955078125e-07
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .. import dtype as dt
from ..errors import DTypeError
from ..tensor import Tensor
from ._common import check_array, is_scalar, resolve_device


def astype(x: Tensor, dtype, /, *, copy: bool = True, device=None) -> Tensor:
    """``x`` in ``dtype`` (and on ``device``); ``copy=True`` gives a new array object even
    when nothing changes, so writing into it (``y[i] = v``) leaves ``x`` as it was.

    >>> import ember.array_api as xp
    >>> xp.astype(xp.asarray([1.7, -1.7]), xp.int32).tolist()
    [1, -1]
    """
    x = check_array(x, "astype")
    out = x if device is None else x.to(resolve_device(device))
    out = out.astype(dt.as_dtype(dtype))
    return out.clone() if copy and out is x else out


def _dtype_of(obj, op: str) -> dt.DType:
    if isinstance(obj, Tensor):
        return obj.dtype
    if isinstance(obj, dt.DType):
        return obj
    raise TypeError(f"{op}: expected arrays, dtypes or Python scalars, got {type(obj).__name__}")


def result_type(*arrays_and_dtypes) -> dt.DType:
    """The dtype the standard's promotion gives its arguments (scalars are weak).

    >>> import ember.array_api as xp
    >>> xp.result_type(xp.int8, xp.asarray([1], dtype=xp.int32)), xp.result_type(xp.float32, 1.0)
    (ember.int32, ember.float32)
    """
    fixed = [_dtype_of(a, "result_type") for a in arrays_and_dtypes if not is_scalar(a)]
    scalars = [a for a in arrays_and_dtypes if is_scalar(a)]
    if not fixed:
        raise TypeError("result_type: at least one array or dtype is needed")
    out = fixed[0]
    for d in fixed[1:]:
        if d.is_bool != out.is_bool:
            raise TypeError(f"result_type: bool and {d if out.is_bool else out} don't promote")
        out = dt.promote_types(out, d)
    for s in scalars:
        out = dt.result_type_with_scalar(out, s)
    return out


def can_cast(from_, to, /) -> bool:
    """Whether promotion turns ``from_`` into ``to`` (the standard's casting rule).

    >>> import ember.array_api as xp
    >>> xp.can_cast(xp.int8, xp.int32), xp.can_cast(xp.float64, xp.float32)
    (True, False)
    """
    src = _dtype_of(from_, "can_cast")
    to = dt.as_dtype(to)
    if src == to:
        return True
    if src.is_bool or to.is_bool:
        return src.is_bool and to.is_bool
    if src.is_float and not to.is_float:
        return False
    if src.is_int and to.is_float:
        return True
    if {src.kind, to.kind} == {"i", "u"} and dt.uint64 in (src, to):
        return False  # no integer dtype holds both
    return dt.promote_types(src, to) == to


@dataclass(frozen=True)
class finfo_object:
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: dt.DType


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: dt.DType


_MANTISSA = {2: 10, 4: 23, 8: 52}
_EXP_BITS = {2: 5, 4: 8, 8: 11}


def _round_trip(value: float, d: dt.DType) -> float:
    return struct.unpack("<" + d.struct_format, struct.pack("<" + d.struct_format, value))[0]


def finfo(type, /) -> finfo_object:
    """Machine limits of a float dtype: ``bits``, ``eps``, ``max``, ``min``, ``smallest_normal``.

    >>> import ember.array_api as xp
    >>> info = xp.finfo(xp.float32)
    >>> info.bits, info.eps == 2.0 ** -23
    (32, True)
    """
    d = type.dtype if isinstance(type, Tensor) else dt.as_dtype(type)
    if not d.is_float:
        raise DTypeError(f"finfo: {d} is not a floating-point dtype; use iinfo for integers")
    m, e = _MANTISSA[d.itemsize], _EXP_BITS[d.itemsize]
    bias = (1 << (e - 1)) - 1
    largest = (2.0 - 2.0 ** -m) * 2.0 ** bias
    return finfo_object(d.bits, _round_trip(2.0 ** -m, d), largest, -largest,
                        2.0 ** (1 - bias), d)


def iinfo(type, /) -> iinfo_object:
    """Machine limits of an integer dtype: ``bits``, ``max``, ``min``.

    >>> import ember.array_api as xp
    >>> info = xp.iinfo(xp.int8)
    >>> info.bits, info.min, info.max
    (8, -128, 127)
    """
    d = type.dtype if isinstance(type, Tensor) else dt.as_dtype(type)
    if not d.is_int:
        raise DTypeError(f"iinfo: {d} is not an integer dtype; use finfo for floats")
    lo, hi = d.int_range
    return iinfo_object(d.bits, hi, lo, d)


_KINDS = {
    "bool": lambda d: d.is_bool,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.is_int,
    "real floating": lambda d: d.is_float,
    "complex floating": lambda d: False,
    "numeric": lambda d: d.is_int or d.is_float,
}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name or a tuple of either.

    >>> import ember.array_api as xp
    >>> xp.isdtype(xp.int32, "integral"), xp.isdtype(xp.float32, ("integral", "real floating"))
    (True, True)
    """
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"isdtype: expected a dtype, got {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, dt.DType):
        return dtype == kind
    if kind not in _KINDS:
        raise ValueError(f"isdtype: unknown kind {kind!r}; valid: {', '.join(_KINDS)}")
    return _KINDS[kind](dtype)
