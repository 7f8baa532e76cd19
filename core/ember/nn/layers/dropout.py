"""Dropout: zeroes elements with probability ``p`` in training and rescales by 1/(1-p)."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class Dropout(Module):
    """Identity in ``eval()`` mode.

    >>> import ember
    >>> from ember import nn
    >>> nn.Dropout(0.5).eval()(ember.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        return F.dropout(x, self.p, True)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"
