"""The pure-Python reference backend: ``array.array`` storage, the standard library only.

It runs wherever CPython or Pyodide runs (no numpy), and its results follow numpy's: IEEE
floats (x/0 is inf, log(-1) is NaN), float32/float16 rounded after every op, integers wrapping
around at their width. Primitives are :class:`~ember.backends.python.pyarray.PyArray`.

>>> import ember
>>> t = ember.tensor([[1.0, 2.0], [3.0, 4.0]], backend="python")
>>> (t * 2).tolist(), t.backend.name
([[2.0, 4.0], [6.0, 8.0]], 'python')
"""

from __future__ import annotations

from array import array

from ... import dtype as dt
from ...contract import Caps
from ...tensordata import TensorData, convert_scalar
from ...errors import TensorIndexError
from ...shape import contiguous_strides, numel
from . import scalar_math as pm
from .pyarray import (
    PyArray,
    from_data,
    make,
    permute_indices,
    same,
    split3,
    store,
    strided_indices,
    take,
    to_data,
)
from .ops import PythonOps


def _check_index(op: str, index: PyArray, size: int) -> None:
    if len(index.data):
        lo, hi = min(index.data), max(index.data)
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise TensorIndexError(
                f"{op}: index {bad} is out of range for a dim of size {size} "
                f"(valid: 0 to {size - 1})"
            )


class PythonBackend(PythonOps):
    """Every primitive in plain Python; slow but exact, and the portable reference.

    Data, layout, indexing and creation are here; the math is inherited from
    :class:`~ember.backends.python.ops.PythonOps`.
    """

    name = "python"
    caps = Caps()

    # ------------------------------------------------------------------ data
    def from_data(self, data: TensorData) -> PyArray:
        return from_data(data)

    def to_data(self, x: PyArray) -> TensorData:
        return to_data(x)

    def host_buffer(self, x: PyArray) -> array | None:
        """``x``'s storage where it is laid out as DLPack reads ``x``'s dtype (every dtype but
        float16, kept in float32): what ``__dlpack__(copy=False)`` shares, read-only."""
        return None if x.dtype is dt.float16 else x.data

    def copy_into(self, dst: PyArray, src: PyArray) -> None:
        """Write ``src``'s values into ``dst``'s storage, in place (``ember.jit``'s state
        updates: primitives are otherwise never written)."""
        dst.data[:] = src.data

    def shape(self, x: PyArray) -> tuple[int, ...]:
        return x.shape

    def dtype(self, x: PyArray) -> dt.DType:
        return x.dtype

    def cast(self, x: PyArray, dtype: dt.DType) -> PyArray:
        src = x.dtype
        if dtype == src:
            return x
        values = x.data
        if dtype.is_bool:
            return PyArray(array("B", [v != 0 for v in values]), x.shape, dtype)
        if src.is_float and dtype.is_int:
            limit = 1 << (63 if dtype.bits == 64 else 31)  # numpy converts via int64 or int32
            try:  # all finite and in range of the conversion: plain truncation
                ints = [int(v) for v in values]
                if ints and (min(ints) < -limit or max(ints) >= limit):
                    raise OverflowError
            except (ValueError, OverflowError):
                ints = [pm.float_to_int(v, dtype) for v in values]
            return make(ints, x.shape, dtype)
        if dtype.is_float:
            values = [float(v) for v in values] if not src.is_float else values.tolist()
        else:
            values = values.tolist()
        return make(values, x.shape, dtype)

    def full(self, shape, value, dtype: dt.DType) -> PyArray:
        shape = tuple(shape)
        one = store([convert_scalar(value, dtype)], dtype)
        return PyArray(one * numel(shape), shape, dtype)

    def arange(self, n: int, dtype: dt.DType) -> PyArray:
        values = list(range(n))
        if dtype.is_bool:
            values = [v != 0 for v in values]
        return make(values, (n,), dtype)

    # ------------------------------------------------------------------ layout
    def reshape(self, x: PyArray, shape) -> PyArray:
        return PyArray(x.data, tuple(shape), x.dtype)

    def permute(self, x: PyArray, axes) -> PyArray:
        axes = tuple(axes)
        if axes == tuple(range(len(axes))):
            return x
        return take(x, permute_indices(x.shape, axes), tuple(x.shape[a] for a in axes))

    def expand(self, x: PyArray, shape) -> PyArray:
        shape = tuple(shape)
        if shape == x.shape:
            return x
        # grow one dim at a time by repeating whole blocks (array slicing and `*` run in C)
        data, cur = x.data, list(x.shape)
        for d in range(len(shape) - 1, -1, -1):
            times = shape[d]
            if cur[d] == times:
                continue
            outer, _, inner = split3(cur, d, d + 1)
            if outer == 1:
                data = data * times
            elif inner == 1:
                reps = range(times)
                data = array(data.typecode, [v for v in data for _ in reps])
            else:
                grown = array(data.typecode)
                for o in range(outer):
                    grown.extend(data[o * inner : (o + 1) * inner] * times)
                data = grown
            cur[d] = times
        return PyArray(data, shape, x.dtype)

    def _slice_positions(self, x: PyArray, ranges) -> tuple[list[int], tuple[int, ...]]:
        strides = contiguous_strides(x.shape)
        shape = tuple(len(range(*r)) for r in ranges)
        offset = sum(r[0] * st for r, st in zip(ranges, strides) if len(range(*r)))
        steps = [r[2] * st for r, st in zip(ranges, strides)]
        return strided_indices(shape, steps, offset), shape

    def slice(self, x: PyArray, ranges) -> PyArray:
        idx, shape = self._slice_positions(x, ranges)
        return take(x, idx, shape)

    def slice_assign(self, x: PyArray, ranges, value: PyArray) -> PyArray:
        idx, _ = self._slice_positions(x, ranges)
        out = x.data.tolist()
        for i, v in zip(idx, value.data):
            out[i] = v
        return same(out, x.shape, x.dtype)

    def flip(self, x: PyArray, dims) -> PyArray:
        ranges = tuple((s - 1, -1, -1) if d in dims else (0, s, 1) for d, s in enumerate(x.shape))
        return self.slice(x, ranges)

    def cat(self, xs, dim: int) -> PyArray:
        first = xs[0]
        outer = numel(first.shape[:dim])
        chunks = [numel(x.shape[dim:]) for x in xs]
        out = array(first.data.typecode)
        for o in range(outer):
            for x, c in zip(xs, chunks):
                out.extend(x.data[o * c : (o + 1) * c])
        shape = list(first.shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        return PyArray(out, tuple(shape), first.dtype)

    def gather(self, x: PyArray, dim: int, index: PyArray) -> PyArray:
        _check_index("gather", index, x.shape[dim])
        strides = contiguous_strides(x.shape)
        base = strided_indices(index.shape, [0 if d == dim else s for d, s in enumerate(strides)])
        step = strides[dim] if strides else 1
        data = x.data
        return same([data[b + i * step] for b, i in zip(base, index.data)], index.shape, x.dtype)

    def scatter(self, x: PyArray, dim: int, index: PyArray, src: PyArray, reduce="none"):
        _check_index("scatter", index, x.shape[dim])
        if src.shape != index.shape:  # torch allows a larger src: use its leading corner
            src = self.slice(src, tuple((0, n, 1) for n in index.shape))
        strides = contiguous_strides(x.shape)
        base = strided_indices(index.shape, [0 if d == dim else s for d, s in enumerate(strides)])
        step = strides[dim] if strides else 1
        out = x.data.tolist()
        if reduce == "add":
            for b, i, v in zip(base, index.data, src.data):
                out[b + i * step] += v
            if x.dtype.is_bool:
                out = [v != 0 for v in out]
            return make(out, x.shape, x.dtype)
        if reduce != "none":
            raise ValueError(f"scatter: reduce must be 'none' or 'add', got {reduce!r}")
        for b, i, v in zip(base, index.data, src.data):
            out[b + i * step] = v
        return same(out, x.shape, x.dtype)

    def index_select(self, x: PyArray, dim: int, index: PyArray) -> PyArray:
        size = x.shape[dim]
        _check_index("index_select", index, size)
        outer, _, inner = split3(x.shape, dim, dim + 1)
        data = x.data
        out = array(data.typecode)
        for o in range(outer):
            base = o * size
            for i in index.data:
                start = (base + i) * inner
                out.extend(data[start : start + inner])
        shape = list(x.shape)
        shape[dim] = len(index.data)
        return PyArray(out, tuple(shape), x.dtype)

    def where(self, cond: PyArray, a: PyArray, b: PyArray) -> PyArray:
        return same(
            [u if c else v for c, u, v in zip(cond.data, a.data, b.data)], cond.shape, a.dtype
        )
