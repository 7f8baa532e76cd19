"""``float_*`` ops: arithmetic, math, reductions, sort and matmul on float tensors."""

from __future__ import annotations

import math

from ..shape import numel
from .prim_helpers import scalar, sigmoid
from .required import required


class FloatOps:
    # ---------------------------------------------------------------- binary, required
    @required
    def float_add(self, a, b): ...

    @required
    def float_sub(self, a, b): ...

    @required
    def float_mul(self, a, b): ...

    @required
    def float_div(self, a, b):
        """IEEE division: x/0 is ±inf, 0/0 is NaN."""

    @required
    def float_pow(self, a, b):
        """``a ** b`` with IEEE/C ``pow`` semantics (negative base, fractional exponent → NaN)."""

    @required
    def float_maximum(self, a, b):
        """Elementwise max; NaN if either is NaN."""

    @required
    def float_minimum(self, a, b):
        """Elementwise min; NaN if either is NaN."""

    @required
    def float_eq(self, a, b):
        """Bool result; NaN compares unequal to everything."""

    @required
    def float_lt(self, a, b): ...

    @required
    def float_le(self, a, b): ...

    # ---------------------------------------------------------------- unary, required
    @required
    def float_neg(self, x): ...

    @required
    def float_abs(self, x): ...

    @required
    def float_exp(self, x): ...

    @required
    def float_log(self, x):
        """Natural log: log(0) = -inf, log(<0) = NaN."""

    @required
    def float_sqrt(self, x): ...

    @required
    def float_sin(self, x): ...

    @required
    def float_cos(self, x): ...

    @required
    def float_atan(self, x): ...

    @required
    def float_tanh(self, x): ...

    @required
    def float_erf(self, x): ...

    @required
    def float_floor(self, x): ...

    @required
    def float_ceil(self, x): ...

    @required
    def float_round(self, x):
        """Round half to even (numpy/PyTorch)."""

    @required
    def float_isnan(self, x):
        """Bool result."""

    # ---------------------------------------------------------------- reductions, required
    @required
    def float_sum(self, x, dims: tuple[int, ...]):
        """Sum over ``dims`` keeping them as size 1."""

    @required
    def float_prod(self, x, dims: tuple[int, ...]): ...

    @required
    def float_max(self, x, dims: tuple[int, ...]):
        """Max over ``dims`` (kept); NaN propagates."""

    @required
    def float_min(self, x, dims: tuple[int, ...]): ...

    @required
    def float_argmax(self, x, dim: int):
        """Index (int64, dim kept) of the first maximum; a NaN counts as the maximum."""

    @required
    def float_argmin(self, x, dim: int): ...

    @required
    def float_cumsum(self, x, dim: int): ...

    @required
    def float_cumprod(self, x, dim: int): ...

    @required
    def float_sort(self, x, dim: int, descending: bool):
        """Stable sort along ``dim``: ``(values, int64 indices)``. NaNs sort last (ascending)
        and first (descending), as in numpy/PyTorch."""

    @required
    def float_matmul(self, a, b):
        """Batched matmul: ``a`` is (..., n, k), ``b`` is (..., k, m) with identical batch dims."""

    # ---------------------------------------------------------------- composites
    def float_ne(self, a, b):
        return self.bool_not(self.float_eq(a, b))

    def float_gt(self, a, b):
        return self.float_lt(b, a)

    def float_ge(self, a, b):
        return self.float_le(b, a)

    def float_floor_divide(self, a, b):
        return self.float_floor(self.float_div(a, b))

    def float_remainder(self, a, b):
        """Python/numpy ``%``: the result takes the sign of the divisor."""
        r = self.float_sub(a, self.float_mul(b, self.float_floor(self.float_div(a, b))))
        # rounding in a/b can leave r with the dividend's sign: move it into b's range
        zero = scalar(self, r, 0)
        sign_differs = self.bool_ne(self.float_lt(r, zero), self.float_lt(b, zero))
        fix = self.bool_and(self.float_ne(r, zero), sign_differs)
        return self.where(fix, self.float_add(r, b), r)

    def float_atan2(self, y, x):
        base = self.float_atan(self.float_div(y, x))
        zero, two, pi = scalar(self, y, 0), scalar(self, y, 2), scalar(self, y, math.pi)
        neg_pi = self.float_neg(pi)
        turn = self.where(self.float_ge(y, zero), pi, neg_pi)
        adj = self.where(self.float_ge(x, zero), base, self.float_add(base, turn))
        down = self.where(self.float_lt(y, zero), self.float_div(neg_pi, two), zero)
        at_zero_x = self.where(self.float_gt(y, zero), self.float_div(pi, two), down)
        return self.where(self.float_ne(x, zero), adj, at_zero_x)

    def float_expm1(self, x):
        return self.float_sub(self.float_exp(x), scalar(self, x, 1.0))

    def float_log1p(self, x):
        return self.float_log(self.float_add(x, scalar(self, x, 1.0)))

    def float_log2(self, x):
        return self.float_mul(self.float_log(x), scalar(self, x, 1.0 / math.log(2.0)))

    def float_reciprocal(self, x):
        return self.float_div(scalar(self, x, 1.0), x)

    def float_rsqrt(self, x):
        return self.float_reciprocal(self.float_sqrt(x))

    def float_tan(self, x):
        return self.float_div(self.float_sin(x), self.float_cos(x))

    def float_sinh(self, x):
        e = self.float_exp(x)
        inv = self.float_div(scalar(self, x, 1.0), e)
        return self.float_mul(self.float_sub(e, inv), scalar(self, x, 0.5))

    def float_cosh(self, x):
        e = self.float_exp(x)
        inv = self.float_div(scalar(self, x, 1.0), e)
        return self.float_mul(self.float_add(e, inv), scalar(self, x, 0.5))

    def float_asin(self, x):
        one_minus_sq = self.float_sub(scalar(self, x, 1.0), self.float_mul(x, x))
        return self.float_atan(self.float_div(x, self.float_sqrt(one_minus_sq)))

    def float_acos(self, x):
        return self.float_sub(scalar(self, x, math.pi / 2), self.float_asin(x))

    def float_sigmoid(self, x):
        return sigmoid(self, x)

    def float_sign(self, x):
        zero = scalar(self, x, 0.0)
        neg = self.where(self.float_lt(x, zero), scalar(self, x, -1.0), zero)
        s = self.where(self.float_gt(x, zero), scalar(self, x, 1.0), neg)
        return self.where(self.float_isnan(x), x, s)

    def float_trunc(self, x):
        at_or_above = self.float_ge(x, scalar(self, x, 0))
        return self.where(at_or_above, self.float_floor(x), self.float_ceil(x))

    def float_isinf(self, x):
        return self.float_eq(self.float_abs(x), scalar(self, x, math.inf))

    def float_mean(self, x, dims: tuple[int, ...]):
        shape = self.shape(x)
        n = numel(shape[d] for d in dims)
        total = self.float_sum(x, dims)
        if n:
            return self.float_div(total, scalar(self, total, n))
        return self.float_mul(total, scalar(self, total, math.nan))

    def float_var(self, x, dims: tuple[int, ...], correction: float):
        shape = tuple(self.shape(x))
        centered = self.float_sub(x, self.expand(self.float_mean(x, dims), shape))
        sq = self.float_sum(self.float_pow(centered, scalar(self, centered, 2)), dims)
        dof = max(numel(shape[d] for d in dims) - correction, 0)
        return self.float_div(sq, scalar(self, sq, dof))

    def float_logsumexp(self, x, dims: tuple[int, ...]):
        m = self.float_max(x, dims)
        finite = self.bool_not(self.bool_or(self.float_isnan(m), self.float_isinf(m)))
        m = self.where(finite, m, scalar(self, m, 0.0))  # all -inf (or inf) rows: shift by 0
        shifted = self.float_sub(x, self.expand(m, tuple(self.shape(x))))
        return self.float_add(self.float_log(self.float_sum(self.float_exp(shifted), dims)), m)
