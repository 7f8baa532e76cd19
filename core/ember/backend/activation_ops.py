"""Activation ops on float tensors. All composites written with backend primitives (so every
backend and Autodiff get them); backends override them for speed with the same semantics.
They follow PyTorch's formulas, NaN in gives NaN out."""

from __future__ import annotations

import math

from .prim_helpers import scalar, sigmoid


class ActivationOps:
    def relu(self, x):
        return self.float_maximum(x, scalar(self, x, 0))

    def relu6(self, x):
        # where, not minimum/maximum: those share the gradient at ties, PyTorch gives 0 at 0 and 6
        six = scalar(self, x, 6)
        return self.where(self.float_le(six, x), six, self.relu(x))

    def leaky_relu(self, x, negative_slope: float):
        """``x if x > 0 else x * negative_slope``."""
        neg = self.float_mul(x, scalar(self, x, negative_slope))
        return self.where(self.float_lt(scalar(self, x, 0), x), x, neg)

    def elu(self, x, alpha: float):
        """``x if x > 0 else alpha * (exp(x) - 1)``."""
        zero = scalar(self, x, 0)
        pos = self.float_lt(zero, x)
        # exp of the clamped value: the unused branch must not overflow to inf (where, not
        # minimum: at x == 0 the gradient must be alpha, as PyTorch, not shared with the bound)
        neg = self.float_mul(self.float_expm1(self.where(pos, zero, x)), scalar(self, x, alpha))
        return self.where(pos, x, neg)

    def gelu(self, x, approximate: str = "none"):
        """``x * Φ(x)`` with the exact erf, or PyTorch's tanh approximation."""
        if approximate == "tanh":
            cube = self.float_mul(self.float_mul(x, x), x)
            inner = self.float_add(x, self.float_mul(cube, scalar(self, x, 0.044715)))
            inner = self.float_mul(inner, scalar(self, x, math.sqrt(2.0 / math.pi)))
            cdf = self.float_add(self.float_tanh(inner), scalar(self, x, 1.0))
        else:
            cdf = self.float_erf(self.float_mul(x, scalar(self, x, 1.0 / math.sqrt(2.0))))
            cdf = self.float_add(cdf, scalar(self, x, 1.0))
        return self.float_mul(self.float_mul(x, cdf), scalar(self, x, 0.5))

    def silu(self, x):
        # the primitive formula, not float_sigmoid: a backend's own sigmoid (or Autodiff's
        # sigmoid rule) would change silu's rounding
        return self.float_mul(x, sigmoid(self, x))

    def softplus(self, x, beta: float = 1.0, threshold: float = 20.0):
        """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``."""
        bx = self.float_mul(x, scalar(self, x, beta))
        limit = scalar(self, x, threshold)
        linear = self.float_lt(limit, bx)
        soft = self.float_log1p(self.float_exp(self.where(linear, limit, bx)))  # no overflow
        soft = self.float_div(soft, scalar(self, x, beta))
        return self.where(linear, x, soft)

    def hard_sigmoid(self, x):
        """``relu6(x + 3) / 6``."""
        return self.float_div(self.relu6(self.float_add(x, scalar(self, x, 3))), scalar(self, x, 6))

    def hard_swish(self, x):
        """``x * relu6(x + 3) / 6``."""
        return self.float_mul(x, self.hard_sigmoid(x))

    def mish(self, x):
        """``x * tanh(softplus(x))``."""
        return self.float_mul(x, self.float_tanh(self.softplus(x, 1.0, 20.0)))

    def softmax(self, x, dim: int):
        """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (shifted so it can't overflow)."""
        shape = tuple(self.shape(x))
        e = self.float_exp(self.float_sub(x, self.expand(self.float_max(x, (dim,)), shape)))
        return self.float_div(e, self.expand(self.float_sum(e, (dim,)), shape))

    def log_softmax(self, x, dim: int):
        """``x - max - log(sum(exp(x - max)))`` along ``dim``."""
        shape = tuple(self.shape(x))
        shifted = self.float_sub(x, self.expand(self.float_max(x, (dim,)), shape))
        lse = self.float_log(self.float_sum(self.float_exp(shifted), (dim,)))
        return self.float_sub(shifted, self.expand(lse, shape))
