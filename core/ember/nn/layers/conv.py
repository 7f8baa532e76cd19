"""Convolutions: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d (torch weight layouts)."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from ._util import new_param, ntuple, torch_default_init


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 output_padding=0, backend=None, dtype=None):
        super().__init__()
        n, name = self._nd, type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"both be divisible by groups ({groups})"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode {padding_mode!r} (only 'zeros')")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = ntuple(kernel_size, n, name)
        self.stride = ntuple(stride, n, name)
        self.padding = padding if isinstance(padding, str) else ntuple(padding, n, name)
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: padding must be an int, a tuple, 'same' or 'valid'")
        self.dilation = ntuple(dilation, n, name)
        self.output_padding = ntuple(output_padding, n, name)
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = new_param(shape, backend, dtype)
        self.bias = new_param((out_channels,), backend, dtype) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the weight and bias as PyTorch does (Kaiming-uniform, ``a = sqrt(5)``).

        >>> import ember
        >>> from ember import nn
        >>> conv = nn.Conv2d(1, 2, 3)
        >>> _ = nn.init.zeros_(conv.weight); conv.reset_parameters()
        >>> bool(conv.weight.abs().sum() > 0)
        True
        """
        torch_default_init(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding not in ((0,) * self._nd,):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self._transposed and self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-d convolution over (N, C_in, L); weight (C_out, C_in / groups, k).

    >>> import ember
    >>> from ember import nn
    >>> nn.Conv1d(2, 4, kernel_size=3)(ember.zeros(1, 2, 10)).shape
    (1, 4, 8)
    """

    _nd = 1

    def forward(self, x: Tensor) -> Tensor:
        return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    """2-d convolution over (N, C_in, H, W); weight (C_out, C_in / groups, kh, kw).

    >>> import ember
    >>> from ember import nn
    >>> nn.Conv2d(3, 8, 3, padding=1)(ember.zeros(1, 3, 5, 5)).shape
    (1, 8, 5, 5)
    """

    _nd = 2

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose1d(_ConvNd):
    """Transposed 1-d convolution; weight (C_in, C_out / groups, k).

    >>> import ember
    >>> from ember import nn
    >>> nn.ConvTranspose1d(2, 4, kernel_size=3, stride=2)(ember.zeros(1, 2, 5)).shape
    (1, 4, 11)
    """

    _nd = 1
    _transposed = True

    def forward(self, x: Tensor) -> Tensor:
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class ConvTranspose2d(_ConvNd):
    """Transposed 2-d convolution; weight (C_in, C_out / groups, kh, kw).

    >>> import ember
    >>> from ember import nn
    >>> nn.ConvTranspose2d(3, 1, kernel_size=2, stride=2)(ember.zeros(1, 3, 4, 4)).shape
    (1, 1, 8, 8)
    """

    _nd = 2
    _transposed = True

    def forward(self, x: Tensor) -> Tensor:
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)
