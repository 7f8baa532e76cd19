"""Small helpers written with backend primitives only, shared by default bodies and gradient
rules (the contract sits below the Tensor API, so neither can use it).

``b`` is a backend (any: the rules run on the inner backend of Autodiff).
"""

from __future__ import annotations

import math


def full(b, shape, value, dtype):
    return b.full(tuple(shape), value, dtype)


def like(b, x, value):
    """A tensor of ``x``'s shape and dtype filled with ``value``."""
    return b.full(tuple(b.shape(x)), value, b.dtype(x))


def scale(b, x, value: float):
    return b.float_mul(x, like(b, x, value))


def mask(b, cond, x):
    """``x`` where ``cond`` else 0."""
    return b.where(cond, x, like(b, x, 0))


def swap_last(b, x):
    n = len(b.shape(x))
    return b.permute(x, tuple(range(n - 2)) + (n - 1, n - 2))


def expand_back(b, g, shape):
    """A gradient of a kept-dims reduction, broadcast back to the input's shape."""
    return b.expand(g, tuple(shape))


def count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


def sigmoid(b, x):
    """``1 / (1 + exp(-x))``: the default sigmoid and the body of ``silu``."""
    one = like(b, x, 1.0)
    return b.float_div(one, b.float_add(one, b.float_exp(b.float_neg(x))))
