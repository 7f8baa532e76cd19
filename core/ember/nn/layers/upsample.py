"""Upsample: resize spatial dims with ``F.interpolate``."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class Upsample(Module):
    """``Upsample(scale_factor=2, mode="nearest")`` or ``Upsample(size=(8, 8))``.

    >>> import ember
    >>> from ember import nn
    >>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> nn.Upsample(scale_factor=2)(x)[0, 0].tolist()
    [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0]]
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None):
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(x, size=self.size, scale_factor=self.scale_factor, mode=self.mode,
                             align_corners=self.align_corners)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else (
            f"scale_factor={self.scale_factor}")
        return f"{what}, mode={self.mode!r}"
