"""``float_*`` ops: arithmetic, math, reductions, sort and matmul on float tensors."""

from __future__ import annotations

import math

from .required import required


def where(cond, a, b):
    """``ember.where`` (imported late: the ops package imports the backend package)."""
    from ..ops.where import where as where_

    return where_(cond, a, b)


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
        a_, b_ = self.wrap(a), self.wrap(b)
        r = a_ - b_ * (a_ / b_).floor()
        # rounding in a/b can leave r with the dividend's sign: move it into b's range
        return where((r != 0) & ((r < 0) != (b_ < 0)), r + b_, r)._prim

    def float_atan2(self, y, x):
        y_, x_ = self.wrap(y), self.wrap(x)
        base = (y_ / x_).atan()
        # constants as tensors of the input dtype: two Python scalars in `where` would make
        # a float32 tensor and cost float64 inputs their precision
        pi = self.wrap(self.full(self.shape(y), math.pi, self.dtype(y)))
        adj = where(x_ >= 0, base, base + where(y_ >= 0, pi, -pi))
        at_zero_x = where(y_ > 0, pi / 2, where(y_ < 0, -pi / 2, pi * 0))
        return where(x_ != 0, adj, at_zero_x)._prim

    def float_expm1(self, x):
        return self.wrap(self.float_exp(x)).sub(1.0)._prim

    def float_log1p(self, x):
        return self.float_log(self.wrap(x).add(1.0)._prim)

    def float_log2(self, x):
        return (self.wrap(self.float_log(x)) * (1.0 / math.log(2.0)))._prim

    def float_reciprocal(self, x):
        return (1.0 / self.wrap(x))._prim

    def float_rsqrt(self, x):
        return self.float_reciprocal(self.float_sqrt(x))

    def float_tan(self, x):
        return self.float_div(self.float_sin(x), self.float_cos(x))

    def float_sinh(self, x):
        e = self.wrap(self.float_exp(x))
        return ((e - 1.0 / e) * 0.5)._prim

    def float_cosh(self, x):
        e = self.wrap(self.float_exp(x))
        return ((e + 1.0 / e) * 0.5)._prim

    def float_asin(self, x):
        x_ = self.wrap(x)
        return (x_ / (1.0 - x_ * x_).sqrt()).atan()._prim

    def float_acos(self, x):
        return (math.pi / 2 - self.wrap(self.float_asin(x)))._prim

    def float_sigmoid(self, x):
        return (1.0 / (1.0 + (-self.wrap(x)).exp()))._prim

    def float_sign(self, x):
        x_ = self.wrap(x)
        s = where(x_ > 0, 1.0, where(x_ < 0, -1.0, 0.0)).to(x_.dtype)
        return where(x_.isnan(), x_, s)._prim

    def float_trunc(self, x):
        x_ = self.wrap(x)
        return where(x_ >= 0, x_.floor(), x_.ceil())._prim

    def float_isinf(self, x):
        return self.wrap(self.float_abs(x)).eq(math.inf)._prim

    def float_mean(self, x, dims: tuple[int, ...]):
        shape = self.shape(x)
        count = 1
        for d in dims:
            count *= shape[d]
        total = self.wrap(self.float_sum(x, dims))
        return (total / count if count else total * math.nan)._prim

    def float_var(self, x, dims: tuple[int, ...], correction: float):
        x_ = self.wrap(x)
        mean = self.wrap(self.float_mean(x, dims))
        shape = self.shape(x)
        count = 1
        for d in dims:
            count *= shape[d]
        sq = self.wrap(self.float_sum(((x_ - mean) ** 2)._prim, dims))
        return (sq / max(count - correction, 0))._prim

    def float_logsumexp(self, x, dims: tuple[int, ...]):
        x_ = self.wrap(x)
        m = self.wrap(self.float_max(x, dims))
        m = where(m.isfinite(), m, 0.0)  # all -inf (or inf) rows: shift by 0
        s = self.wrap(self.float_sum((x_ - m).exp()._prim, dims))
        return (s.log() + m)._prim
