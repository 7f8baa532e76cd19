"""Helpers shared by the layers: parameter creation and argument normalisation."""

from __future__ import annotations

import math

from ...ops.creation import zeros
from .. import init
from ..parameter import Parameter


def new_param(shape: tuple[int, ...], backend=None, dtype=None) -> Parameter:
    """A zero-filled Parameter of ``shape`` (the caller initialises it)."""
    return Parameter(zeros(tuple(shape), dtype=dtype, backend=backend))


def torch_default_init(weight: Parameter, bias: Parameter | None, fan_in: int | None = None):
    """PyTorch's default for Linear/Conv: kaiming_uniform(a=sqrt(5)) weights and
    U(±1/sqrt(fan_in)) bias."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        if fan_in is None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def ntuple(value, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise ValueError(f"{name}: expected {n} values, got {tuple(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * n

