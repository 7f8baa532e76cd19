"""Small helpers for composite default bodies, written with backend primitives only (the
contract sits below the Tensor API, so its defaults can't use it)."""

from __future__ import annotations


def scalar(b, x, value: bool | int | float):
    """``value`` as a tensor of ``x``'s shape and dtype: binary primitives want equal operands."""
    return b.full(tuple(b.shape(x)), value, b.dtype(x))


def sigmoid(b, x):
    """``1 / (1 + exp(-x))``: FloatOps' default sigmoid and the body of ``silu``."""
    one = scalar(b, x, 1.0)
    return b.float_div(one, b.float_add(one, b.float_exp(b.float_neg(x))))
