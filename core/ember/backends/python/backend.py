"""The pure-Python reference backend: ``array.array`` storage, the standard library only.

It runs wherever CPython or Pyodide runs (no numpy), and its results follow numpy's: IEEE
floats (x/0 is inf, log(-1) is NaN), float32/float16 rounded after every op, integers wrapping
around at their width. Primitives are :class:`~ember.backends.python.array.PyArray`.

>>> import ember
>>> t = ember.tensor([[1.0, 2.0], [3.0, 4.0]], backend="python")
>>> (t * 2).tolist(), t.backend.name
([[2.0, 4.0], [6.0, 8.0]], 'python')
"""

from __future__ import annotations

import math
import operator
from array import array
from itertools import accumulate

from ... import dtype as dt
from ...contract import Backend, Caps
from ...data import TensorData, convert_scalar
from ...errors import ShapeError, TensorIndexError
from ...shape import contiguous_strides, numel
from . import scalar_math as pm
from .array import (
    PyArray,
    from_data,
    groups,
    lanes,
    make,
    permute_indices,
    same,
    split3,
    store,
    strided_indices,
    take,
    to_data,
)


def _check_index(op: str, index: PyArray, size: int) -> None:
    if len(index.data):
        lo, hi = min(index.data), max(index.data)
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise TensorIndexError(
                f"{op}: index {bad} is out of range for a dim of size {size} "
                f"(valid: 0 to {size - 1})"
            )


class PythonBackend(Backend):
    """Every primitive in plain Python; slow but exact, and the portable reference."""

    name = "python"
    caps = Caps()

    # ------------------------------------------------------------------ data
    def from_data(self, data: TensorData) -> PyArray:
        return from_data(data)

    def to_data(self, x: PyArray) -> TensorData:
        return to_data(x)

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
            bits = dtype.bits
            limit = 1 << (63 if bits == 64 else 31)  # numpy converts via int64 or int32
            try:  # all finite and in range of the conversion: plain truncation
                ints = [int(v) for v in values]
                if ints and (min(ints) < -limit or max(ints) >= limit):
                    raise OverflowError
            except (ValueError, OverflowError):
                ints = [pm.float_to_int(v, bits) for v in values]
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

    # ------------------------------------------------------------------ shared helpers
    @staticmethod
    def _map1(fn, x: PyArray, dtype: dt.DType | None = None) -> PyArray:
        return make(list(map(fn, x.data)), x.shape, dtype or x.dtype)

    @staticmethod
    def _map2(fn, a: PyArray, b: PyArray, dtype: dt.DType | None = None) -> PyArray:
        return make(list(map(fn, a.data, b.data)), a.shape, dtype or a.dtype)

    @staticmethod
    def _safe1(fast, safe, x: PyArray) -> PyArray:
        return make(pm.map1(fast, safe, x.data), x.shape, x.dtype)

    @staticmethod
    def _safe2(fast, safe, a: PyArray, b: PyArray) -> PyArray:
        return make(pm.map2(fast, safe, a.data, b.data), a.shape, a.dtype)

    @staticmethod
    def _reduce(x: PyArray, dims, fn) -> PyArray:
        gs, shape, _ = groups(x, tuple(dims))
        return make([fn(g) for g in gs], shape, x.dtype)

    @staticmethod
    def _extreme(op: str, x: PyArray, dims, pick, is_float: bool) -> PyArray:
        gs, shape, r = groups(x, tuple(dims))
        if r == 0:
            raise ShapeError(
                f"{op}: can't reduce over dims {tuple(dims)} of shape {x.shape}: the reduction "
                "is empty and has no identity (reduce over non-empty dims)"
            )
        if is_float:
            # NaN propagates (numpy); Python's max/min would depend on where it sits
            out = [math.nan if any(map(math.isnan, g)) else pick(g) for g in gs]
        else:
            out = [pick(g) for g in gs]
        return same(out, shape, x.dtype)

    @staticmethod
    def _arg(op: str, x: PyArray, dim: int, pick, is_float: bool) -> PyArray:
        gs, shape, r = groups(x, (dim,))
        if r == 0:
            raise ShapeError(
                f"{op}: dim {dim} of shape {x.shape} is empty; there is no {op[4:]} "
                "(reduce over a non-empty dim)"
            )
        out = []
        for g in gs:
            if is_float:
                nans = [i for i, v in enumerate(g) if math.isnan(v)]
                if nans:
                    out.append(nans[0])
                    continue
            out.append(g.index(pick(g)))
        return PyArray(array("q", out), shape, dt.int64)

    @staticmethod
    def _scan(x: PyArray, dim: int, fn) -> PyArray:
        """Running ``fn`` along ``dim``; ``fn`` maps a lane (a sequence) to a list."""
        slices, _ = lanes(x.shape, dim)
        out = x.data.tolist()
        for sl in slices:
            out[sl] = fn(out[sl])
        return make(out, x.shape, x.dtype)

    @staticmethod
    def _sort(x: PyArray, dim: int, descending: bool, is_float: bool):
        slices, size = lanes(x.shape, dim)
        data = x.data.tolist()
        values = list(data)
        indices = [0] * len(data)
        for sl in slices:
            lane = data[sl]
            if is_float:
                nans = [i for i, v in enumerate(lane) if math.isnan(v)]
                order = (
                    [i for i, v in enumerate(lane) if not math.isnan(v)]
                    if nans
                    else list(range(size))
                )
            else:
                nans, order = [], list(range(size))
            # Python's sort is stable, and stays stable with reverse=True
            order.sort(key=lane.__getitem__, reverse=descending)
            order = nans + order if descending else order + nans
            values[sl] = [lane[i] for i in order]
            indices[sl] = order
        return same(values, x.shape, x.dtype), PyArray(array("q", indices), x.shape, dt.int64)

    @staticmethod
    def _matmul(a: PyArray, b: PyArray) -> PyArray:
        *batch, n, k = a.shape
        m = b.shape[-1]
        batches = numel(batch)
        ad, bd = a.data, b.data
        mul = operator.mul
        out = []
        for bi in range(batches):
            a0, b0 = bi * n * k, bi * k * m
            rows = [ad[a0 + i * k : a0 + (i + 1) * k] for i in range(n)]
            cols = [bd[b0 + j : b0 + k * m : m] for j in range(m)]
            out.extend([sum(map(mul, r, c)) for r in rows for c in cols])
        if a.dtype.is_float:
            out = [float(v) for v in out] if k == 0 else out
        return make(out, (*batch, n, m), a.dtype)

    # ------------------------------------------------------------------ float: binary
    def float_add(self, a, b):
        return self._map2(operator.add, a, b)

    def float_sub(self, a, b):
        return self._map2(operator.sub, a, b)

    def float_mul(self, a, b):
        return self._map2(operator.mul, a, b)

    def float_div(self, a, b):
        return self._safe2(operator.truediv, pm.div, a, b)

    def float_pow(self, a, b):
        return self._safe2(math.pow, pm.pow_, a, b)

    def float_floor_divide(self, a, b):
        return self._safe2(operator.floordiv, pm.floor_divide, a, b)

    def float_remainder(self, a, b):
        return self._safe2(operator.mod, pm.remainder, a, b)

    def float_atan2(self, y, x):
        return self._map2(math.atan2, y, x)

    def float_maximum(self, a, b):
        return self._map2(pm.maximum, a, b)

    def float_minimum(self, a, b):
        return self._map2(pm.minimum, a, b)

    def float_eq(self, a, b):
        return self._map2(operator.eq, a, b, dt.bool_)

    def float_ne(self, a, b):
        return self._map2(operator.ne, a, b, dt.bool_)

    def float_lt(self, a, b):
        return self._map2(operator.lt, a, b, dt.bool_)

    def float_le(self, a, b):
        return self._map2(operator.le, a, b, dt.bool_)

    def float_gt(self, a, b):
        return self._map2(operator.gt, a, b, dt.bool_)

    def float_ge(self, a, b):
        return self._map2(operator.ge, a, b, dt.bool_)

    # ------------------------------------------------------------------ float: unary
    def float_neg(self, x):
        return self._map1(operator.neg, x)

    def float_abs(self, x):
        return self._map1(abs, x)

    def float_exp(self, x):
        return self._safe1(math.exp, pm.exp, x)

    def float_expm1(self, x):
        return self._safe1(math.expm1, pm.expm1, x)

    def float_log(self, x):
        return self._safe1(math.log, pm.log, x)

    def float_log1p(self, x):
        return self._safe1(math.log1p, pm.log1p, x)

    def float_log2(self, x):
        return self._safe1(math.log2, pm.log2, x)

    def float_sqrt(self, x):
        return self._safe1(math.sqrt, pm.sqrt, x)

    def float_rsqrt(self, x):
        return self._map1(pm.rsqrt, x)

    def float_reciprocal(self, x):
        return self._map1(pm.reciprocal, x)

    def float_sin(self, x):
        return self._safe1(math.sin, pm.sin, x)

    def float_cos(self, x):
        return self._safe1(math.cos, pm.cos, x)

    def float_tan(self, x):
        return self._safe1(math.tan, pm.tan, x)

    def float_asin(self, x):
        return self._safe1(math.asin, pm.asin, x)

    def float_acos(self, x):
        return self._safe1(math.acos, pm.acos, x)

    def float_atan(self, x):
        return self._map1(math.atan, x)

    def float_sinh(self, x):
        return self._safe1(math.sinh, pm.sinh, x)

    def float_cosh(self, x):
        return self._safe1(math.cosh, pm.cosh, x)

    def float_tanh(self, x):
        return self._map1(math.tanh, x)

    def float_erf(self, x):
        return self._map1(math.erf, x)

    def float_sigmoid(self, x):
        return self._map1(pm.sigmoid, x)

    def float_floor(self, x):
        return self._map1(pm.floor, x)

    def float_ceil(self, x):
        return self._map1(pm.ceil, x)

    def float_trunc(self, x):
        return self._map1(pm.trunc, x)

    def float_round(self, x):
        return self._map1(pm.round_half_even, x)

    def float_sign(self, x):
        return self._map1(pm.sign, x)

    def float_isnan(self, x):
        return self._map1(math.isnan, x, dt.bool_)

    def float_isinf(self, x):
        return self._map1(math.isinf, x, dt.bool_)

    # ------------------------------------------------------------------ float: reductions
    def float_sum(self, x, dims):
        return self._reduce(x, dims, lambda g: float(sum(g)))

    def float_prod(self, x, dims):
        return self._reduce(x, dims, lambda g: float(math.prod(g)))

    def float_mean(self, x, dims):
        gs, shape, r = groups(x, tuple(dims))
        return make([sum(g) / r if r else math.nan for g in gs], shape, x.dtype)

    def float_max(self, x, dims):
        return self._extreme("max", x, dims, max, True)

    def float_min(self, x, dims):
        return self._extreme("min", x, dims, min, True)

    def float_argmax(self, x, dim):
        return self._arg("argmax", x, dim, max, True)

    def float_argmin(self, x, dim):
        return self._arg("argmin", x, dim, min, True)

    def float_cumsum(self, x, dim):
        return self._scan(x, dim, lambda lane: list(accumulate(lane)))

    def float_cumprod(self, x, dim):
        return self._scan(x, dim, lambda lane: list(accumulate(lane, operator.mul)))

    def float_sort(self, x, dim, descending):
        return self._sort(x, dim, descending, True)

    def float_matmul(self, a, b):
        return self._matmul(a, b)

    # ------------------------------------------------------------------ int
    def int_add(self, a, b):
        return self._map2(operator.add, a, b)

    def int_sub(self, a, b):
        return self._map2(operator.sub, a, b)

    def int_mul(self, a, b):
        return self._map2(operator.mul, a, b)

    def int_floor_divide(self, a, b):
        return self._map2(lambda u, v: u // v if v else 0, a, b)

    def int_remainder(self, a, b):
        return self._map2(lambda u, v: u % v if v else 0, a, b)

    def int_pow(self, a, b):
        if len(b.data) and min(b.data) < 0:
            raise ValueError("pow: integers to negative integer powers are not allowed")
        mod = 1 << a.dtype.bits  # modular pow: exact wrap-around without huge intermediates
        return self._map2(lambda u, v: pow(u, v, mod), a, b)

    def int_maximum(self, a, b):
        return self._map2(max, a, b)

    def int_minimum(self, a, b):
        return self._map2(min, a, b)

    def int_eq(self, a, b):
        return self._map2(operator.eq, a, b, dt.bool_)

    def int_ne(self, a, b):
        return self._map2(operator.ne, a, b, dt.bool_)

    def int_lt(self, a, b):
        return self._map2(operator.lt, a, b, dt.bool_)

    def int_le(self, a, b):
        return self._map2(operator.le, a, b, dt.bool_)

    def int_gt(self, a, b):
        return self._map2(operator.gt, a, b, dt.bool_)

    def int_ge(self, a, b):
        return self._map2(operator.ge, a, b, dt.bool_)

    def int_neg(self, x):
        return self._map1(operator.neg, x)

    def int_abs(self, x):
        return self._map1(abs, x)

    def int_sign(self, x):
        return self._map1(lambda v: (v > 0) - (v < 0), x)

    def int_sum(self, x, dims):
        return self._reduce(x, dims, sum)

    def int_prod(self, x, dims):
        mask = (1 << x.dtype.bits) - 1
        # wrap every 64 factors so products of long rows stay small numbers
        return self._reduce(
            x,
            dims,
            lambda g: _masked_prod(g, mask),
        )

    def int_max(self, x, dims):
        return self._extreme("max", x, dims, max, False)

    def int_min(self, x, dims):
        return self._extreme("min", x, dims, min, False)

    def int_argmax(self, x, dim):
        return self._arg("argmax", x, dim, max, False)

    def int_argmin(self, x, dim):
        return self._arg("argmin", x, dim, min, False)

    def int_cumsum(self, x, dim):
        return self._scan(x, dim, lambda lane: list(accumulate(lane)))

    def int_cumprod(self, x, dim):
        mask = (1 << x.dtype.bits) - 1
        return self._scan(x, dim, lambda lane: list(accumulate(lane, lambda u, v: (u * v) & mask)))

    def int_sort(self, x, dim, descending):
        return self._sort(x, dim, descending, False)

    def int_matmul(self, a, b):
        return self._matmul(a, b)

    # ------------------------------------------------------------------ bool
    def bool_and(self, a, b):
        return self._map2(operator.and_, a, b)

    def bool_or(self, a, b):
        return self._map2(operator.or_, a, b)

    def bool_xor(self, a, b):
        return self._map2(operator.xor, a, b)

    def bool_not(self, x):
        return self._map1(lambda v: 1 - v, x)

    def bool_any(self, x, dims):
        return self._reduce(x, dims, any)

    def bool_all(self, x, dims):
        return self._reduce(x, dims, all)


def _masked_prod(values, mask: int) -> int:
    out = 1
    for start in range(0, len(values), 64):
        out = (out * math.prod(values[start : start + 64])) & mask
    return out
