"""Elementwise ``float_*`` ops: arithmetic, comparisons and math functions.

Binary ops get operands of one shape and one dtype (the front end broadcasts and promotes).
Each op: its declaration, then its default body (composites only), then its gradient.
"""

from __future__ import annotations

import math

from . import infer
from .prims import like, mask, scale, sigmoid
from .registry import Kind, declare

E = Kind.ELEMENTWISE


def _binary(name: str, doc: str = "", differentiable: bool = True, wgsl: str | None = None):
    result = infer.to_bool if not differentiable else infer.same
    return declare(name, E, "a, b", result, differentiable=differentiable, doc=doc, wgsl=wgsl)


def _unary(name: str, doc: str = "", differentiable: bool = True, wgsl: str | None = None):
    result = infer.to_bool if not differentiable else infer.same
    return declare(name, E, "x", result, differentiable=differentiable, doc=doc, wgsl=wgsl)


# ---------------------------------------------------------------------- binary primitives
float_add = _binary("float_add")
float_sub = _binary("float_sub")
float_mul = _binary("float_mul")
float_div = _binary("float_div", "IEEE division: x/0 is ±inf, 0/0 is NaN.")
float_pow = _binary(
    "float_pow", "``a ** b`` with IEEE/C ``pow`` semantics (negative base, fractional exponent → NaN)."
)
float_maximum = _binary("float_maximum", "Elementwise max; NaN if either is NaN.")
float_minimum = _binary("float_minimum", "Elementwise min; NaN if either is NaN.")
float_eq = _binary("float_eq", "Bool result; NaN compares unequal to everything.", False)
float_lt = _binary("float_lt", differentiable=False)
float_le = _binary("float_le", differentiable=False)

# ---------------------------------------------------------------------- binary composites
float_ne = _binary("float_ne", differentiable=False)
float_gt = _binary("float_gt", differentiable=False)
float_ge = _binary("float_ge", differentiable=False)
float_floor_divide = _binary("float_floor_divide", "``floor(a / b)``.")
float_remainder = _binary("float_remainder", "Python/numpy ``%``: the sign of the divisor.")
float_atan2 = _binary("float_atan2", "``atan(a / b)`` in the right quadrant (numpy's arctan2).")

# ---------------------------------------------------------------------- unary primitives
float_neg = _unary("float_neg")
float_abs = _unary("float_abs")
float_exp = _unary("float_exp")
float_log = _unary("float_log", "Natural log: log(0) = -inf, log(<0) = NaN.")
float_sqrt = _unary("float_sqrt")
float_sin = _unary("float_sin")
float_cos = _unary("float_cos")
float_atan = _unary("float_atan")
float_tanh = _unary("float_tanh")
float_erf = _unary("float_erf")
float_floor = _unary("float_floor")
float_ceil = _unary("float_ceil")
float_round = _unary("float_round", "Round half to even (numpy/PyTorch).")
float_isnan = _unary("float_isnan", "Bool result.", differentiable=False)

# ---------------------------------------------------------------------- unary composites
float_expm1 = _unary("float_expm1")
float_log1p = _unary("float_log1p")
float_log2 = _unary("float_log2")
float_reciprocal = _unary("float_reciprocal")
float_rsqrt = _unary("float_rsqrt")
float_tan = _unary("float_tan")
float_sinh = _unary("float_sinh")
float_cosh = _unary("float_cosh")
float_asin = _unary("float_asin")
float_acos = _unary("float_acos")
float_sigmoid = _unary("float_sigmoid")
float_sign = _unary("float_sign", "-1, 0 or 1 (NaN stays NaN).")
float_trunc = _unary("float_trunc", "Round toward zero.")
float_isinf = _unary("float_isinf", "Bool result.", differentiable=False)
float_log10 = _unary("float_log10", "Base-10 log.")


# ---------------------------------------------------------------------- default bodies (composites)
@float_ne.implements
def float_ne(self, a, b):
    return self.bool_not(self.float_eq(a, b))


@float_gt.implements
def float_gt(self, a, b):
    return self.float_lt(b, a)


@float_ge.implements
def float_ge(self, a, b):
    return self.float_le(b, a)


@float_floor_divide.implements
def float_floor_divide(self, a, b):
    return self.float_floor(self.float_div(a, b))


@float_remainder.implements
def float_remainder(self, a, b):
    """Python/numpy ``%``: the result takes the sign of the divisor."""
    r = self.float_sub(a, self.float_mul(b, self.float_floor(self.float_div(a, b))))
    # rounding in a/b can leave r with the dividend's sign: move it into b's range
    zero = like(self, r, 0)
    sign_differs = self.bool_ne(self.float_lt(r, zero), self.float_lt(b, zero))
    fix = self.bool_and(self.float_ne(r, zero), sign_differs)
    r = self.where(fix, self.float_add(r, b), r)
    # a finite, b = ±inf: a / b is ±0 and b * 0 is NaN above; numpy gives a where a and b
    # share a sign (or a is 0), else b
    a_finite = self.bool_not(self.bool_or(self.float_isnan(a), self.float_isinf(a)))
    by_inf = self.bool_and(self.float_isinf(b), a_finite)
    keep_a = self.bool_or(self.float_eq(a, zero),
                          self.bool_eq(self.float_lt(a, zero), self.float_lt(b, zero)))
    return self.where(by_inf, self.where(keep_a, a, b), r)


@float_atan2.implements
def float_atan2(self, y, x):
    base = self.float_atan(self.float_div(y, x))
    zero, two, pi = like(self, y, 0), like(self, y, 2), like(self, y, math.pi)
    neg_pi = self.float_neg(pi)
    turn = self.where(self.float_ge(y, zero), pi, neg_pi)
    adj = self.where(self.float_ge(x, zero), base, self.float_add(base, turn))
    down = self.where(self.float_lt(y, zero), self.float_div(neg_pi, two), zero)
    at_zero_x = self.where(self.float_gt(y, zero), self.float_div(pi, two), down)
    return self.where(self.float_ne(x, zero), adj, at_zero_x)


@float_expm1.implements
def float_expm1(self, x):
    return self.float_sub(self.float_exp(x), like(self, x, 1.0))


@float_log1p.implements
def float_log1p(self, x):
    return self.float_log(self.float_add(x, like(self, x, 1.0)))


@float_log2.implements
def float_log2(self, x):
    return self.float_mul(self.float_log(x), like(self, x, 1.0 / math.log(2.0)))


@float_reciprocal.implements
def float_reciprocal(self, x):
    return self.float_div(like(self, x, 1.0), x)


@float_rsqrt.implements
def float_rsqrt(self, x):
    return self.float_reciprocal(self.float_sqrt(x))


@float_tan.implements
def float_tan(self, x):
    return self.float_div(self.float_sin(x), self.float_cos(x))


@float_sinh.implements
def float_sinh(self, x):
    e = self.float_exp(x)
    inv = self.float_div(like(self, x, 1.0), e)
    return self.float_mul(self.float_sub(e, inv), like(self, x, 0.5))


@float_cosh.implements
def float_cosh(self, x):
    e = self.float_exp(x)
    inv = self.float_div(like(self, x, 1.0), e)
    return self.float_mul(self.float_add(e, inv), like(self, x, 0.5))


@float_asin.implements
def float_asin(self, x):
    one_minus_sq = self.float_sub(like(self, x, 1.0), self.float_mul(x, x))
    return self.float_atan(self.float_div(x, self.float_sqrt(one_minus_sq)))


@float_acos.implements
def float_acos(self, x):
    return self.float_sub(like(self, x, math.pi / 2), self.float_asin(x))


@float_sigmoid.implements
def float_sigmoid(self, x):
    return sigmoid(self, x)


@float_sign.implements
def float_sign(self, x):
    zero = like(self, x, 0.0)
    neg = self.where(self.float_lt(x, zero), like(self, x, -1.0), zero)
    s = self.where(self.float_gt(x, zero), like(self, x, 1.0), neg)
    return self.where(self.float_isnan(x), x, s)


@float_trunc.implements
def float_trunc(self, x):
    at_or_above = self.float_ge(x, like(self, x, 0))
    return self.where(at_or_above, self.float_floor(x), self.float_ceil(x))


@float_isinf.implements
def float_isinf(self, x):
    return self.float_eq(self.float_abs(x), like(self, x, math.inf))


@float_log10.implements
def float_log10(self, x):
    # ln(x) / ln(10): within an ulp or two of a native log10
    return self.float_mul(self.float_log(x), like(self, x, 1.0 / math.log(10.0)))


# ---------------------------------------------------------------------- gradients
@float_add.gradient(cheap=True)
def _(c, g):
    return g, g


@float_sub.gradient(cheap=True)
def _(c, g):
    return g, c.b.float_neg(g) if c.wants(1) else None


@float_mul.gradient(inputs=(0, 1), cheap=True)
def _(c, g):
    b = c.b
    return (
        b.float_mul(g, c.x(1)) if c.wants(0) else None,
        b.float_mul(g, c.x(0)) if c.wants(1) else None,
    )


@float_div.gradient(inputs=(0, 1), cheap=True)
def _(c, g):
    b = c.b
    y = c.x(1)
    gx = b.float_div(g, y)
    gy = b.float_neg(b.float_div(b.float_mul(gx, c.x(0)), y)) if c.wants(1) else None
    return gx, gy


@float_pow.gradient(inputs=(0, 1), out=True, cheap=True)
def _(c, g):
    # PyTorch's conventions: d/da is 0 where the exponent is 0; d/de is 0 where a == 0, e >= 0
    b = c.b
    a, e = c.x(0), c.x(1)
    ga = gb = None
    if c.wants(0):
        d = b.float_mul(e, b.float_pow(a, b.float_sub(e, like(b, e, 1.0))))
        ga = mask(b, b.bool_not(b.float_eq(e, like(b, e, 0.0))), b.float_mul(g, d))
    if c.wants(1):
        d = b.float_mul(c.out, b.float_log(a))
        zero_base = b.bool_and(b.float_eq(a, like(b, a, 0.0)), b.float_le(like(b, e, 0.0), e))
        gb = mask(b, b.bool_not(zero_base), b.float_mul(g, d))
    return ga, gb


@float_atan2.gradient(inputs=(0, 1), cheap=True)
def _(c, g):
    b = c.b
    y, x = c.x(0), c.x(1)
    gr = b.float_div(g, b.float_add(b.float_mul(x, x), b.float_mul(y, y)))
    return (
        b.float_mul(gr, x) if c.wants(0) else None,
        b.float_neg(b.float_mul(gr, y)) if c.wants(1) else None,
    )


def _select_grads(c, g, first_wins):
    """maximum/minimum: the gradient goes to the selected operand; ties split it evenly
    (as PyTorch does)."""
    b = c.b
    x, y = c.x(0), c.x(1)
    half = b.where(b.float_eq(x, y), like(b, g, 0.5), like(b, g, 0.0))
    to_x = b.where(first_wins(b, x, y), like(b, g, 1.0), half)
    to_y = b.where(first_wins(b, y, x), like(b, g, 1.0), half)
    return b.float_mul(g, to_x), b.float_mul(g, to_y)


@float_maximum.gradient(inputs=(0, 1), cheap=True)
def _(c, g):
    return _select_grads(c, g, lambda b, p, q: b.float_lt(q, p))


@float_minimum.gradient(inputs=(0, 1), cheap=True)
def _(c, g):
    return _select_grads(c, g, lambda b, p, q: b.float_lt(p, q))


@float_neg.gradient(cheap=True)
def _(c, g):
    return (c.b.float_neg(g),)


@float_abs.gradient(inputs=(0,), cheap=True)
def _(c, g):
    b = c.b
    x = c.x(0)
    zero = like(b, x, 0.0)
    sign = b.where(
        b.float_lt(zero, x), like(b, x, 1.0), b.where(b.float_lt(x, zero), like(b, x, -1.0), zero)
    )
    return (b.float_mul(g, sign),)


@float_exp.gradient(out=True, cheap=True)
def _(c, g):
    return (c.b.float_mul(g, c.out),)


@float_log.gradient(inputs=(0,), cheap=True)
def _(c, g):
    return (c.b.float_div(g, c.x(0)),)


@float_sqrt.gradient(out=True, cheap=True)
def _(c, g):
    b = c.b
    return (b.float_div(g, scale(b, c.out, 2.0)),)


@float_sin.gradient(inputs=(0,), cheap=True)
def _(c, g):
    return (c.b.float_mul(g, c.b.float_cos(c.x(0))),)


@float_cos.gradient(inputs=(0,), cheap=True)
def _(c, g):
    b = c.b
    return (b.float_neg(b.float_mul(g, b.float_sin(c.x(0)))),)


@float_atan.gradient(inputs=(0,), cheap=True)
def _(c, g):
    b = c.b
    x = c.x(0)
    return (b.float_div(g, b.float_add(like(b, x, 1.0), b.float_mul(x, x))),)


@float_tanh.gradient(out=True, cheap=True)
def _(c, g):
    b = c.b
    y = c.out
    return (b.float_mul(g, b.float_sub(like(b, y, 1.0), b.float_mul(y, y))),)


@float_erf.gradient(inputs=(0,), cheap=True)
def _(c, g):
    b = c.b
    x = c.x(0)
    d = scale(b, b.float_exp(b.float_neg(b.float_mul(x, x))), 2.0 / math.sqrt(math.pi))
    return (b.float_mul(g, d),)


def _zero(c, g):
    return (like(c.b, g, 0.0),)


for _step in (float_floor, float_ceil, float_round):
    _step.gradient(cheap=True)(_zero)


@float_sigmoid.gradient(out=True, cheap=True)
def _(c, g):
    b = c.b
    y = c.out
    return (b.float_mul(g, b.float_mul(y, b.float_sub(like(b, y, 1.0), y))),)


@float_log10.gradient(inputs=(0,), cheap=True)
def _(c, g):
    b = c.b
    x = c.x(0)
    return (b.float_div(g, b.float_mul(x, like(b, x, math.log(10.0)))),)
