"""The numpy backend's math: elementwise ops, reductions, scans, sort and matmul.

:class:`NumpyOps` holds the ``float_*``, ``int_*`` and ``bool_*`` ops: a few methods, and
tables from registry ops (:mod:`ember.contract.float_math`, ``int_bool``, ``reductions``) to
the numpy function that computes them, registered with :meth:`Backend.implement
<ember.contract.Backend.implement>`. :class:`~ember.backends.numpy.backend.NumpyBackend` adds
the data and layout primitives. Floating-point warnings are off: results are IEEE (x/0 is inf).
"""

from __future__ import annotations

import math

import numpy as np

from ...contract import Backend, float_math, int_bool, reductions
from .blocks import blocked
from .quiet import quiet, quietly


# erf(x) ~ x * P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 in float32 beyond): the rational fit
# Eigen and XLA use for float32, abs error < 5e-7 (4 ulp of 1.0), evaluated in float32
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
          -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
          -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
          -7.37332916720468e-03, -1.42647390514189e-02)


def _poly(x2, coefs, t):
    p = x2 * t(coefs[0])
    p += t(coefs[1])
    for c in coefs[2:]:
        p *= x2
        p += t(c)
    return p


def _erf(x):
    """erf (numpy has none). float64: math.erf per element (exact, slow); float32/16: the
    rational fit above in float32, in place, about 6x faster than a float64 series."""
    if x.dtype == np.float64:
        return np.frompyfunc(math.erf, 1, 1)(x).astype(x.dtype)
    v = np.clip(x, -4, 4, dtype=np.float32)
    x2 = v * v
    p = _poly(x2, _ERF_P, np.float32)
    p *= v
    p /= _poly(x2, _ERF_Q, np.float32)
    return p.astype(x.dtype, copy=False)


class NumpyOps(Backend):
    """The math ops on ``numpy.ndarray``s (the tables below add the one-call ones)."""

    # ------------------------------------------------------------------ float
    def float_pow(self, a, b):
        with quiet():
            return np.power(a, b)

    def float_erf(self, x):
        return blocked(_erf, x)

    def float_sigmoid(self, x):
        # 1 / (1 + exp(-x)) in four in-place passes (the composite allocates at each step);
        # exp overflows to inf for x < -88 in float32, giving the right limit 0
        with quiet():
            e = np.negative(x)
            np.exp(e, out=e)
            e += x.dtype.type(1)
            return np.reciprocal(e, out=e)

    def float_round(self, x):
        return np.round(x)

    def float_isnan(self, x):
        return np.isnan(x)

    def float_isinf(self, x):
        return np.isinf(x)

    def float_var(self, x, dims, correction):
        n = math.prod(x.shape[d] for d in dims)
        with quiet():
            sq = np.sum((x - np.mean(x, axis=dims, keepdims=True)) ** 2, axis=dims, keepdims=True)
            return (sq / x.dtype.type(max(n - correction, 0))).astype(x.dtype)

    def float_logsumexp(self, x, dims):
        with quiet():
            m = np.max(x, axis=dims, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            return (np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m).astype(x.dtype)

    # ------------------------------------------------------------------ int
    def int_floor_divide(self, a, b):
        with quiet():
            return np.floor_divide(a, b)

    def int_remainder(self, a, b):
        with quiet():
            return np.remainder(a, b)

    def int_pow(self, a, b):
        if b.size and b.min() < 0:
            raise ValueError("pow: integers to negative integer powers are not allowed")
        return np.power(a, b)


def _arg(fn):
    def op(self, x, dim):
        return np.expand_dims(fn(x, axis=dim), dim).astype(np.int64)

    return op


def _sort(self, x, dim, descending):
    """Stable sort; descending keeps equal elements in their original order (NaN first)."""
    if descending:
        flipped = np.argsort(np.flip(x, dim), axis=dim, kind="stable")
        idx = x.shape[dim] - 1 - np.flip(flipped, dim)
    else:
        idx = np.argsort(x, axis=dim, kind="stable")
    return np.take_along_axis(x, idx, dim), idx.astype(np.int64)


def _reduction(fn):
    def op(self, x, dims):
        axis = None if len(dims) == x.ndim else dims  # numpy's whole-array path is faster
        with quiet():
            return fn(x, axis=axis, keepdims=True).astype(x.dtype, copy=False)

    return op


def _scan(fn):
    def op(self, x, dim):
        with quiet():
            return fn(x, axis=dim, dtype=x.dtype)

    return op


def _matmul(a, b):
    """``np.matmul``; a stack of rows times one matrix runs as one 2-D GEMM (numpy's stacked
    path is ~20% slower at transformer sizes, e.g. (1, 128, 384) @ (384, 1536))."""
    if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
        return np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[1:])
    return np.matmul(a, b)


# one numpy call each, the same function for float and int operands where both exist
_ELEMENTWISE = {
    float_math.float_add: np.add, int_bool.int_add: np.add,
    float_math.float_sub: np.subtract, int_bool.int_sub: np.subtract,
    float_math.float_mul: np.multiply, int_bool.int_mul: np.multiply,
    float_math.float_maximum: np.maximum, int_bool.int_maximum: np.maximum,
    float_math.float_minimum: np.minimum, int_bool.int_minimum: np.minimum,
    float_math.float_eq: np.equal, int_bool.int_eq: np.equal,
    float_math.float_ne: np.not_equal, int_bool.int_ne: np.not_equal,
    float_math.float_lt: np.less, int_bool.int_lt: np.less,
    float_math.float_le: np.less_equal, int_bool.int_le: np.less_equal,
    float_math.float_gt: np.greater, int_bool.int_gt: np.greater,
    float_math.float_ge: np.greater_equal, int_bool.int_ge: np.greater_equal,
    float_math.float_neg: np.negative, int_bool.int_neg: np.negative,
    float_math.float_abs: np.abs, int_bool.int_abs: np.abs,
    float_math.float_sign: np.sign, int_bool.int_sign: np.sign,
    reductions.float_matmul: _matmul, reductions.int_matmul: _matmul,
    float_math.float_div: np.divide,
    float_math.float_floor_divide: np.floor_divide,
    float_math.float_remainder: np.remainder,
    float_math.float_atan2: np.arctan2,
    float_math.float_exp: np.exp,
    float_math.float_expm1: np.expm1,
    float_math.float_log: np.log,
    float_math.float_log1p: np.log1p,
    float_math.float_log2: np.log2,
    float_math.float_log10: np.log10,
    float_math.float_sqrt: np.sqrt,
    float_math.float_sin: np.sin,
    float_math.float_cos: np.cos,
    float_math.float_tan: np.tan,
    float_math.float_tanh: np.tanh,
    float_math.float_sinh: np.sinh,
    float_math.float_cosh: np.cosh,
    float_math.float_asin: np.arcsin,
    float_math.float_acos: np.arccos,
    float_math.float_atan: np.arctan,
    float_math.float_floor: np.floor,
    float_math.float_ceil: np.ceil,
    float_math.float_trunc: np.trunc,
    float_math.float_reciprocal: np.reciprocal,
    int_bool.int_bitwise_and: np.bitwise_and,
    int_bool.int_bitwise_or: np.bitwise_or,
    int_bool.int_bitwise_xor: np.bitwise_xor,
    int_bool.int_bitwise_not: np.invert,
    # numpy's shifts give 0 (left) or the sign (right) for counts outside [0, width): the
    # contract's rule
    int_bool.int_shift_left: np.left_shift,
    int_bool.int_shift_right: np.right_shift,
    int_bool.bool_and: np.logical_and,
    int_bool.bool_or: np.logical_or,
    int_bool.bool_xor: np.logical_xor,
    int_bool.bool_not: np.logical_not,
}
#: backend method name -> the numpy ufunc computing it (``out=`` capable: ``compile.py``)
UFUNCS = {op.name: fn for op, fn in _ELEMENTWISE.items() if isinstance(fn, np.ufunc)}
_REDUCTIONS = {
    reductions.float_sum: np.sum, reductions.int_sum: np.sum,
    reductions.float_prod: np.prod, reductions.int_prod: np.prod,
    reductions.float_max: np.max, reductions.int_max: np.max,
    reductions.float_min: np.min, reductions.int_min: np.min,
    reductions.float_mean: np.mean,
    reductions.bool_any: np.any,
    reductions.bool_all: np.all,
}
_SCANS = {
    reductions.float_cumsum: np.cumsum, reductions.int_cumsum: np.cumsum,
    reductions.float_cumprod: np.cumprod, reductions.int_cumprod: np.cumprod,
}
# the same method for float and int tensors
_BY_INDEX = {
    reductions.float_argmax: _arg(np.argmax), reductions.int_argmax: _arg(np.argmax),
    reductions.float_argmin: _arg(np.argmin), reductions.int_argmin: _arg(np.argmin),
    reductions.float_sort: _sort, reductions.int_sort: _sort,
}

for _op, _fn in _ELEMENTWISE.items():
    NumpyOps.implement(_op, quietly(_fn))
for _op, _fn in _REDUCTIONS.items():
    NumpyOps.implement(_op, _reduction(_fn))
for _op, _fn in _SCANS.items():
    NumpyOps.implement(_op, _scan(_fn))
for _op, _fn in _BY_INDEX.items():
    NumpyOps.implement(_op, _fn)
