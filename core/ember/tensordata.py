"""TensorData: the portable form of a tensor's values — bytes + shape + dtype, no numpy.

It is the only thing that crosses a backend boundary: every backend reads it in ``from_data``
and writes it in ``to_data``. Bytes are little-endian, row-major (C order).

>>> from ember.tensordata import TensorData
>>> d = TensorData.from_list([[1.0, 2.0], [3.0, 4.0]])
>>> d.shape, d.dtype.name, d.tolist()
((2, 2), 'float32', [[1.0, 2.0], [3.0, 4.0]])
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Sequence

from . import dtype as dt
from .errors import DTypeError, ShapeError
from .shape import Shape, numel

_LITTLE = sys.byteorder == "little"


class TensorData:
    """A tensor's values without a backend: little-endian row-major ``buffer``, ``shape``, ``dtype``.

    >>> from ember.tensordata import TensorData
    >>> d = TensorData.from_values([1, 2, 3, 4], (2, 2), "int32")
    >>> d.ndim, d.size, len(d.buffer), d.values()
    (2, 4, 16, [1, 2, 3, 4])
    >>> d.tolist(), d.astype("float32").tolist(), d.to_array().typecode
    ([[1, 2], [3, 4]], [[1.0, 2.0], [3.0, 4.0]], 'i')
    >>> TensorData.from_list([[1.5]]).dtype.name, TensorData.from_list([1, 2]).dtype.name
    ('float32', 'int64')
    >>> import numpy as np
    >>> TensorData.from_numpy(np.arange(3)).to_numpy().tolist()
    [0, 1, 2]
    """
    __slots__ = ("buffer", "shape", "dtype")

    def __init__(self, buffer: bytes | bytearray | memoryview, shape: Sequence[int], dtype: dt.DType):
        shape = tuple(int(s) for s in shape)
        dtype = dt.as_dtype(dtype)
        buffer = bytes(buffer)
        expected = numel(shape) * dtype.itemsize
        if len(buffer) != expected:
            raise ShapeError(
                f"TensorData: {len(buffer)} bytes don't fit shape {shape} of {dtype} "
                f"({expected} bytes expected)"
            )
        self.buffer = buffer
        self.shape: Shape = shape
        self.dtype = dtype

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_values(cls, values: Sequence, shape: Sequence[int], dtype: dt.DType) -> TensorData:
        """Flat Python values (row-major) → TensorData, converting each to ``dtype``."""
        dtype = dt.as_dtype(dtype)
        return cls._from_flat(values, shape, dtype, plain=False)

    @classmethod
    def _from_flat(cls, values: Sequence, shape, dtype: dt.DType, plain: bool,
                   users: bool = False) -> TensorData:
        fast = _pack_plain(values, dtype, plain)
        if fast is not None:
            return cls(fast, shape, dtype)
        if users and dtype.is_int:  # the user's values: wrapping one would be a wrong number
            _check_int_range(values, dtype)
        flat = [convert_scalar(v, dtype) for v in values]
        return cls(pack(flat, dtype), shape, dtype)

    @classmethod
    def from_list(cls, nested: object, dtype: dt.DType | str | None = None) -> TensorData:
        """A nested list/tuple of scalars (or one scalar) → TensorData; dtype inferred if None."""
        shape, flat = _flatten(nested)
        if dtype is None:
            dtype = _infer_dtype(flat)
        # _flatten hands a flat list of plain numbers back as is, already checked
        return cls._from_flat(flat, shape, dt.as_dtype(dtype), plain=flat is nested, users=True)

    @classmethod
    def from_numpy(cls, arr: object) -> TensorData:
        """A copy of a numpy array (its dtype kept; C order)."""
        import numpy as np

        arr = np.asarray(arr)
        dtype = dt.as_dtype(arr.dtype.name)
        shape = arr.shape  # ascontiguousarray turns 0-d arrays into 1-d ones
        arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        return cls(arr.tobytes(), shape, dtype)

    # ------------------------------------------------------------------ views
    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return numel(self.shape)

    def values(self) -> list:
        """The flat values as Python scalars (bool, int or float)."""
        return unpack(self.buffer, self.dtype, self.size)

    def tolist(self) -> object:
        """The values as nested Python lists (a scalar for a 0-d tensor)."""
        flat = self.values()
        if not self.shape:
            return flat[0]
        return _nest(flat, self.shape)

    def to_array(self) -> array:
        """An ``array.array`` of the values (float16 widens to float32)."""
        code = self.dtype.array_typecode or "f"
        if self.dtype.array_typecode is None:
            return array(code, self.values())
        out = array(code)
        out.frombytes(self.buffer)
        if not _LITTLE:
            out.byteswap()
        return out

    def to_numpy(self) -> object:
        """The values as a numpy array of the same dtype and shape (needs numpy)."""
        try:
            import numpy as np
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("TensorData.to_numpy needs numpy: pip install 'ember[numpy]'") from e
        return np.frombuffer(self.buffer, dtype=np.dtype(self.dtype.name).newbyteorder("<")).reshape(
            self.shape
        ).astype(self.dtype.name)

    def astype(self, dtype: dt.DType) -> TensorData:
        """A copy converted to ``dtype``."""
        dtype = dt.as_dtype(dtype)
        return TensorData.from_values(self.values(), self.shape, dtype)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TensorData)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.buffer == other.buffer
        )

    def __repr__(self) -> str:
        return f"TensorData(shape={self.shape}, dtype={self.dtype.name})"


# ---------------------------------------------------------------------- scalar conversion
def convert_scalar(value: object, dtype: dt.DType) -> bool | int | float:
    """One Python value → the Python scalar stored for ``dtype``.

    Floats to ints truncate toward zero; ints wrap around to the width of the dtype (numpy's
    ``astype``); NaN/inf to an int is an error rather than an arbitrary number.
    """
    if hasattr(value, "item") and not isinstance(value, (bool, int, float)):
        value = value.item()  # numpy scalars
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        v = float(value)
        if dtype is dt.float16 or dtype is dt.float32:
            return round_float(v, dtype)
        return v
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise DTypeError(f"cast: can't convert {value} to {dtype.name}")
        value = int(value)  # truncates toward zero
    return wrap_int(int(value), dtype)


def _check_int_range(values: Sequence, dtype: dt.DType) -> None:
    """A DTypeError for a Python int outside ``dtype``'s range (numpy 2 and PyTorch refuse
    ``tensor([300], dtype=int8)`` too; casting a tensor with ``astype`` wraps)."""
    lo, hi = dtype.int_range
    for v in values:
        if type(v) is int and not lo <= v <= hi:
            raise DTypeError(f"tensor: the Python int {v} is out of range for {dtype.name} "
                             f"({lo} to {hi}); give a wider dtype, or wrap it on purpose with "
                             f"ember.tensor({v}).astype(ember.{dtype.name})")


def wrap_int(v: int, dtype: dt.DType) -> int:
    """Two's-complement wrap-around of ``v`` to the width of an integer dtype."""
    bits = dtype.bits
    v &= (1 << bits) - 1
    if dtype.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def round_float(v: float, dtype: dt.DType) -> float:
    """Round a Python float to float32/float16 precision (overflow gives ±inf)."""
    if dtype is dt.float64 or math.isnan(v) or math.isinf(v):
        return v
    try:
        return struct.unpack("<" + dtype.struct_format, struct.pack("<" + dtype.struct_format, v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def pack(flat: Sequence, dtype: dt.DType) -> bytes:
    if dtype.array_typecode is not None and not dtype.is_bool:
        arr = array(dtype.array_typecode, flat)
        if not _LITTLE:
            arr.byteswap()
        return arr.tobytes()
    if dtype.is_bool:
        return bytes(1 if v else 0 for v in flat)
    return struct.pack(f"<{len(flat)}{dtype.struct_format}", *flat)


def unpack(buffer: bytes, dtype: dt.DType, count: int) -> list:
    if dtype.is_bool:
        return [b != 0 for b in buffer]
    if dtype.array_typecode is not None:
        arr = array(dtype.array_typecode)
        arr.frombytes(buffer)
        if not _LITTLE:
            arr.byteswap()
        return arr.tolist()
    return list(struct.unpack(f"<{count}{dtype.struct_format}", buffer))


# ---------------------------------------------------------------------- nested lists
_PLAIN = (int, float)
_PLAIN_TYPES = frozenset(_PLAIN)


def _all_plain(values: Sequence) -> bool:
    """Every value a plain int or float (the types collected in C: no Python per element)."""
    return set(map(type, values)) <= _PLAIN_TYPES


def _pack_plain(values: Sequence, dtype: dt.DType, plain: bool = False) -> bytes | None:
    """The bytes of plain ints and floats for a dtype ``array.array`` stores exactly as
    :func:`convert_scalar` would (float32/float64 round like a C cast; ints that fit), in one
    C call; None when some value needs the per-element rules (a float for an int dtype, an int
    that wraps, bools, numpy scalars, float16)."""
    code = dtype.array_typecode
    if code is None or dtype.is_bool or dtype is dt.float16:
        return None
    if not (plain or _all_plain(values)):
        return None
    try:
        arr = array(code, values)
    except (OverflowError, TypeError):
        return None
    if not _LITTLE:
        arr.byteswap()
    return arr.tobytes()


def _flatten(nested: object) -> tuple[Shape, list]:
    if type(nested) is list and nested and _all_plain(nested):
        return (len(nested),), nested  # a flat list of numbers: no recursion per element
    if isinstance(nested, (list, tuple)):
        if len(nested) == 0:
            return (0,), []
        parts = [_flatten(x) for x in nested]
        inner = parts[0][0]
        for p in parts:
            if p[0] != inner:
                raise ShapeError(
                    f"tensor: nested sequence is ragged: found sub-shapes {inner} and {p[0]}"
                )
        flat = [v for p in parts for v in p[1]]
        return (len(nested), *inner), flat
    if hasattr(nested, "shape") and hasattr(nested, "tolist"):  # numpy arrays, tensors
        return _flatten(nested.tolist())
    if isinstance(nested, (bool, int, float)) or hasattr(nested, "item"):
        return (), [nested]
    raise DTypeError(f"tensor: can't make a tensor from {type(nested).__name__}")


def _infer_dtype(flat: list) -> dt.DType:
    kinds = {dt.scalar_kind(v.item() if hasattr(v, "item") else v) for v in flat}
    if "f" in kinds:
        return dt.default_float
    if "i" in kinds:
        return dt.default_int
    if "b" in kinds:
        return dt.bool_
    return dt.default_float


def _nest(flat: list, shape: Shape) -> list:
    if len(shape) == 1:
        return list(flat)
    step = numel(shape[1:])
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
