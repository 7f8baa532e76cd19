"""Activation ops on float tensors: elementwise (relu, gelu, ...) and along a dim (softmax).

Defaults follow PyTorch's formulas (NaN in gives NaN out); backends override them for speed
with the same semantics.
"""

from __future__ import annotations

import math

from . import infer
from .prims import like, mask, sigmoid
from .registry import Kind, declare

E = Kind.ELEMENTWISE

relu = declare("relu", E, "x", infer.same)
relu6 = declare("relu6", E, "x", infer.same)
leaky_relu = declare("leaky_relu", E, "x, negative_slope", infer.same)
elu = declare("elu", E, "x, alpha", infer.same)
gelu = declare("gelu", E, "x, approximate='none'", infer.same)
silu = declare("silu", E, "x", infer.same)
softplus = declare("softplus", E, "x, beta=1.0, threshold=20.0", infer.same)
hard_sigmoid = declare("hard_sigmoid", E, "x", infer.same)
hard_swish = declare("hard_swish", E, "x", infer.same)
mish = declare("mish", E, "x", infer.same)
softmax = declare("softmax", Kind.MODULE, "x, dim", infer.same)
log_softmax = declare("log_softmax", Kind.MODULE, "x, dim", infer.same)


# ---------------------------------------------------------------------- default bodies
@relu.implements
def relu(self, x):
    return self.float_maximum(x, like(self, x, 0))


@relu6.implements
def relu6(self, x):
    # where, not minimum/maximum: those share the gradient at ties, PyTorch gives 0 at 0 and 6
    six = like(self, x, 6)
    return self.where(self.float_le(six, x), six, self.relu(x))


@leaky_relu.implements
def leaky_relu(self, x, negative_slope: float):
    """``x if x > 0 else x * negative_slope``."""
    neg = self.float_mul(x, like(self, x, negative_slope))
    return self.where(self.float_lt(like(self, x, 0), x), x, neg)


@elu.implements
def elu(self, x, alpha: float):
    """``x if x > 0 else alpha * (exp(x) - 1)``."""
    zero = like(self, x, 0)
    pos = self.float_lt(zero, x)
    # exp of the clamped value: the unused branch must not overflow to inf (where, not
    # minimum: at x == 0 the gradient must be alpha, as PyTorch, not shared with the bound)
    neg = self.float_mul(self.float_expm1(self.where(pos, zero, x)), like(self, x, alpha))
    return self.where(pos, x, neg)


@gelu.implements
def gelu(self, x, approximate: str = "none"):
    """``x * Φ(x)`` with the exact erf, or PyTorch's tanh approximation."""
    if approximate == "tanh":
        cube = self.float_mul(self.float_mul(x, x), x)
        inner = self.float_add(x, self.float_mul(cube, like(self, x, 0.044715)))
        inner = self.float_mul(inner, like(self, x, math.sqrt(2.0 / math.pi)))
        cdf = self.float_add(self.float_tanh(inner), like(self, x, 1.0))
    else:
        cdf = self.float_erf(self.float_mul(x, like(self, x, 1.0 / math.sqrt(2.0))))
        cdf = self.float_add(cdf, like(self, x, 1.0))
    return self.float_mul(self.float_mul(x, cdf), like(self, x, 0.5))


@silu.implements
def silu(self, x):
    # the primitive formula, not float_sigmoid: a backend's own sigmoid (or Autodiff's
    # sigmoid rule) would change silu's rounding
    return self.float_mul(x, sigmoid(self, x))


@softplus.implements
def softplus(self, x, beta: float = 1.0, threshold: float = 20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``."""
    bx = self.float_mul(x, like(self, x, beta))
    limit = like(self, x, threshold)
    linear = self.float_lt(limit, bx)
    soft = self.float_log1p(self.float_exp(self.where(linear, limit, bx)))  # no overflow
    soft = self.float_div(soft, like(self, x, beta))
    return self.where(linear, x, soft)


@hard_sigmoid.implements
def hard_sigmoid(self, x):
    """``relu6(x + 3) / 6``."""
    return self.float_div(self.relu6(self.float_add(x, like(self, x, 3))), like(self, x, 6))


@hard_swish.implements
def hard_swish(self, x):
    """``x * relu6(x + 3) / 6``."""
    return self.float_mul(x, self.hard_sigmoid(x))


@mish.implements
def mish(self, x):
    """``x * tanh(softplus(x))``."""
    return self.float_mul(x, self.float_tanh(self.softplus(x, 1.0, 20.0)))


@softmax.implements
def softmax(self, x, dim: int):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (shifted so it can't overflow)."""
    shape = tuple(self.shape(x))
    e = self.float_exp(self.float_sub(x, self.expand(self.float_max(x, (dim,)), shape)))
    return self.float_div(e, self.expand(self.float_sum(e, (dim,)), shape))


@log_softmax.implements
def log_softmax(self, x, dim: int):
    """``x - max - log(sum(exp(x - max)))`` along ``dim``."""
    shape = tuple(self.shape(x))
    shifted = self.float_sub(x, self.expand(self.float_max(x, (dim,)), shape))
    lse = self.float_log(self.float_sum(self.float_exp(shifted), (dim,)))
    return self.float_sub(shifted, self.expand(lse, shape))


# ---------------------------------------------------------------------- gradients
@relu.gradient(out=True, cheap=True)
def _(c, g):
    b = c.b
    y = c.out
    return (mask(b, b.float_lt(like(b, y, 0.0), y), g),)


@softmax.gradient(out=True)
def _(c, g):
    b, dim = c.b, c.params[0]
    y = c.out
    shape = tuple(b.shape(y))
    dot = b.expand(b.float_sum(b.float_mul(g, y), (dim,)), shape)
    return (b.float_mul(y, b.float_sub(g, dot)),)


@log_softmax.gradient(out=True)
def _(c, g):
    b, dim = c.b, c.params[0]
    y = c.out
    shape = tuple(b.shape(y))
    total = b.expand(b.float_sum(g, (dim,)), shape)
    return (b.float_sub(g, b.float_mul(b.float_exp(y), total)),)
