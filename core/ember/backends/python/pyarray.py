"""The primitive of the pure-Python backend and the storage rules it keeps.

A :class:`PyArray` is a flat, row-major ``array.array`` plus a shape and a dtype. Values are
stored already converted to their dtype, so every op reads plain Python scalars:

- float64 in ``array('d')``, float32 in ``array('f')`` (storing rounds to float32);
- float16 in ``array('f')`` too (every float16 is a float32), rounded through ``struct``'s
  ``'e'`` format when made, overflow giving ±inf;
- integers in the array type of their width, wrapped around like numpy;
- bool as ``array('B')`` of 0/1.

Primitives are never mutated after they are made, so reshape shares the buffer.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterable, Sequence

from ... import dtype as dt
from ...tensordata import TensorData, round_float, wrap_int
from ...shape import contiguous_strides, numel

_LITTLE = sys.byteorder == "little"
# bytes.translate table mapping every non-zero byte to 1 (bool buffers from foreign sources)
_TO_BOOL = bytes([0] + [1] * 255)


def typecode(dtype: dt.DType) -> str:
    """The ``array`` type code holding ``dtype`` (float16 lives in float32 storage)."""
    return dtype.array_typecode or "f"


class PyArray:
    """One tensor of the python backend: ``data`` (flat ``array.array``), ``shape``, ``dtype``."""

    __slots__ = ("data", "dtype", "shape")

    def __init__(self, data: array, shape: tuple[int, ...], dtype: dt.DType):
        self.data = data
        self.shape = shape
        self.dtype = dtype

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"PyArray(shape={self.shape}, dtype={self.dtype.name}, data={self.data.tolist()})"


# ---------------------------------------------------------------------- making primitives
def round_f16(values: Sequence[float]) -> array:
    """float16-rounded copies of ``values`` in float32 storage (overflow → ±inf)."""
    n = len(values)
    fmt = f"<{n}e"
    try:
        packed = struct.pack(fmt, *values)
    except OverflowError:
        packed = struct.pack(fmt, *[round_float(float(v), dt.float16) for v in values])
    return array("f", struct.unpack(fmt, packed))


def store(values: list, dtype: dt.DType) -> array:
    """``values`` (a list of Python scalars) as the storage of ``dtype``: floats are rounded
    to the dtype, integers wrap around, bools become 0/1."""
    if dtype.is_float:
        if dtype is dt.float16:
            return round_f16(values)
        return array(dtype.array_typecode, values)
    code = dtype.array_typecode
    try:
        return array(code, values)
    except OverflowError:  # out of range for the width: wrap like numpy's modular integers
        return array(code, [wrap_int(v, dtype) for v in values])


def make(values: list, shape: tuple[int, ...], dtype: dt.DType) -> PyArray:
    """A primitive from a flat list of computed values (rounded/wrapped to ``dtype``)."""
    return PyArray(store(values, dtype), shape, dtype)


def same(values: Iterable, shape: tuple[int, ...], dtype: dt.DType) -> PyArray:
    """A primitive from values already exact in ``dtype`` (moved, not computed)."""
    return PyArray(array(typecode(dtype), values), shape, dtype)


def from_data(data: TensorData) -> PyArray:
    dtype = data.dtype
    if dtype.is_bool:
        return PyArray(array("B", data.buffer.translate(_TO_BOOL)), data.shape, dtype)
    if dtype is dt.float16:
        n = data.size
        return PyArray(array("f", struct.unpack(f"<{n}e", data.buffer)), data.shape, dtype)
    arr = array(dtype.array_typecode)
    arr.frombytes(data.buffer)
    if not _LITTLE:
        arr.byteswap()
    return PyArray(arr, data.shape, dtype)


def to_data(x: PyArray) -> TensorData:
    if x.dtype is dt.float16:
        return TensorData(struct.pack(f"<{len(x.data)}e", *x.data), x.shape, x.dtype)
    arr = x.data
    if not _LITTLE and arr.itemsize > 1:
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return TensorData(arr.tobytes(), x.shape, x.dtype)


# ---------------------------------------------------------------------- strided access
def strided_indices(shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> list[int]:
    """Flat positions, in row-major order of ``shape``, of the view ``(offset, strides)``.

    Built one dim at a time with comprehensions, so the per-element cost stays in C loops.
    """
    idx = [offset]
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        steps = [k * stride for k in range(size)]
        idx = [i + s for i in idx for s in steps]
    if 0 in shape:
        return []
    return idx


def take(x: PyArray, idx: list[int], shape: tuple[int, ...]) -> PyArray:
    """The elements of ``x`` at flat positions ``idx``, as a new primitive of ``shape``."""
    return PyArray(array(x.data.typecode, map(x.data.__getitem__, idx)), shape, x.dtype)


def permute_indices(shape: Sequence[int], axes: Sequence[int]) -> list[int]:
    strides = contiguous_strides(shape)
    return strided_indices([shape[a] for a in axes], [strides[a] for a in axes])


def split3(shape: Sequence[int], lo: int, hi: int) -> tuple[int, int, int]:
    """``(outer, middle, inner)`` element counts of ``shape[:lo]``, ``[lo:hi]``, ``[hi:]``."""
    return numel(shape[:lo]), numel(shape[lo:hi]), numel(shape[hi:])


def groups(x: PyArray, dims: Sequence[int]) -> tuple[list, tuple[int, ...], int]:
    """The reduction groups of ``x`` over ``dims``: ``(groups, kept shape, group size)``.

    Each group is a sequence of the values reduced into one output element, in output
    row-major order. Reductions over a block of adjacent dims slice the buffer with a step
    (a C loop); other dim sets move the reduced dims last first.
    """
    shape = x.shape
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    if not dims:
        return [[v] for v in x.data], out_shape, 1
    lo, hi = dims[0], dims[-1] + 1
    data = x.data
    if list(dims) == list(range(lo, hi)):
        outer, r, inner = split3(shape, lo, hi)
        if inner == 1:
            return [data[o * r : (o + 1) * r] for o in range(outer)], out_shape, r
        span = r * inner
        return (
            [
                data[o * span + i : (o + 1) * span : inner]
                for o in range(outer)
                for i in range(inner)
            ],
            out_shape,
            r,
        )
    kept = [d for d in range(len(shape)) if d not in dims]
    idx = permute_indices(shape, kept + list(dims))
    r = numel([shape[d] for d in dims])
    moved = [data[i] for i in idx]
    count = numel([shape[d] for d in kept])
    return [moved[g * r : (g + 1) * r] for g in range(count)], out_shape, r


def lanes(shape: Sequence[int], dim: int) -> tuple[list[slice], int]:
    """Slices of the flat buffer, one per 1-d lane along ``dim``, and the lane length."""
    outer, size, inner = split3(shape, dim, dim + 1)
    span = size * inner
    return (
        [slice(o * span + i, (o + 1) * span, inner) for o in range(outer) for i in range(inner)],
        size,
    )
