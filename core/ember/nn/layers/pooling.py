"""Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation, self.ceil_mode = padding, dilation, ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_Pool):
    """Max over windows of (N, C, L).

    >>> import ember
    >>> from ember import nn
    >>> nn.MaxPool1d(2)(ember.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist()
    [[[3.0, 2.0]]]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode)


class MaxPool2d(_Pool):
    """Max over windows of (N, C, H, W).

    >>> import ember
    >>> from ember import nn
    >>> nn.MaxPool2d(2)(ember.zeros(1, 1, 4, 4)).shape
    (1, 1, 2, 2)
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode)


class AvgPool1d(_Pool):
    """Mean over windows of (N, C, L).

    >>> import ember
    >>> from ember import nn
    >>> nn.AvgPool1d(2)(ember.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist()
    [[[2.0, 1.0]]]
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, 1, ceil_mode, count_include_pad)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(AvgPool1d):
    """Mean over windows of (N, C, H, W).

    >>> import ember
    >>> from ember import nn
    >>> nn.AvgPool2d(2)(ember.ones(1, 1, 4, 4)).shape
    (1, 1, 2, 2)
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool1d(Module):
    """Mean over the windows that split (N, C, L) into ``output_size`` parts.

    >>> import ember
    >>> from ember import nn
    >>> nn.AdaptiveAvgPool1d(1)(ember.tensor([[[1.0, 3.0]]])).tolist()
    [[[2.0]]]
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """Mean over the windows that split (N, C, H, W) into ``output_size``.

    >>> import ember
    >>> from ember import nn
    >>> nn.AdaptiveAvgPool2d((1, 1))(ember.ones(2, 3, 5, 5)).shape
    (2, 3, 1, 1)
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)
