"""The pure-Python backend's math: elementwise ops, reductions, scans, sort and matmul.

:class:`PythonOps` holds the ``float_*``, ``int_*`` and ``bool_*`` ops;
:class:`~ember.backends.python.backend.PythonBackend` adds the data and layout primitives.
Float ops follow numpy's IEEE results (:mod:`~ember.backends.python.scalar_math` redoes a row
only when ``math`` raises); integer ops wrap around at their width.
"""

from __future__ import annotations

import math
import operator
from array import array
from itertools import accumulate

from ... import dtype as dt
from ...contract import Backend
from ...errors import ShapeError
from ...shape import numel
from . import scalar_math as pm
from .pyarray import PyArray, groups, lanes, make, same


class PythonOps(Backend):
    """Every math op in plain Python, on :class:`~ember.backends.python.pyarray.PyArray`s."""

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

    # Python's ints are two's complement of unbounded width: &, |, ^, ~ and >> on them are the
    # fixed-width results once make() wraps them into the dtype
    def int_bitwise_and(self, a, b):
        return self._map2(operator.and_, a, b)

    def int_bitwise_or(self, a, b):
        return self._map2(operator.or_, a, b)

    def int_bitwise_xor(self, a, b):
        return self._map2(operator.xor, a, b)

    def int_bitwise_not(self, x):
        return self._map1(operator.invert, x)

    def int_shift_left(self, a, b):
        bits = a.dtype.bits
        return self._map2(lambda u, v: u << v if 0 <= v < bits else 0, a, b)

    def int_shift_right(self, a, b):
        bits = a.dtype.bits
        return self._map2(lambda u, v: u >> (v if 0 <= v < bits else bits), a, b)

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
