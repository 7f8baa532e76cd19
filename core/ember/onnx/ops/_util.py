"""Helpers shared by the op families."""

from __future__ import annotations

from ...ops.creation import tensor as _tensor
from ...tensor import Tensor


def const(ctx, value, dtype=None) -> Tensor:
    """A small tensor on the model's backend."""
    return _tensor(value, dtype=dtype, backend=ctx.backend)


def ints(t) -> list[int]:
    """A shape/axes/indices input as a Python list of ints."""
    if t is None:
        return []
    if isinstance(t, Tensor):
        return [int(x) for x in t.reshape(-1).tolist()]
    return [int(x) for x in t]


def floats(t) -> list[float]:
    return [float(x) for x in t.reshape(-1).tolist()]


def scalar(t, default=None):
    if t is None:
        return default
    if isinstance(t, Tensor):
        return t.reshape(-1).tolist()[0] if t.numel() else default
    return t


def axis(a: int, ndim: int) -> int:
    return a + ndim if a < 0 else a


def axes(values, ndim: int) -> list[int]:
    return sorted(axis(int(a), ndim) for a in values)


def like(x: Tensor, value) -> Tensor:
    """A 0-d tensor of x's dtype and backend (for where/maximum with a constant)."""
    return _tensor(value, dtype=x.dtype, backend=x.backend)
