"""Normalisation layers: BatchNorm1d/2d, LayerNorm, GroupNorm, InstanceNorm1d/2d, RMSNorm.

Training-mode statistics are computed with Tensor ops so gradients flow through the mean and
variance on every backend (Autodiff included).
"""

from __future__ import annotations

from ... import dtype as dt
from ...ops.creation import ones, zeros
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param


def _normalize(x: Tensor, dims: tuple[int, ...], eps: float) -> Tensor:
    mean = x.mean(dim=dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=dims, keepdim=True)
    return centered * (var + eps).rsqrt()


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape(1, -1, *([1] * (ndim - 2)))


class _BatchNorm(Module):
    _ndims: tuple[int, ...] = (2, 3)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, bias: bool = True,
                 backend=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = new_param((num_features,), backend, dtype)
            self.bias = new_param((num_features,), backend, dtype) if bias else None
            init.ones_(self.weight)
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype,
                                                       backend=backend))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, backend=backend))
            self.register_buffer("num_batches_tracked",
                                 zeros((), dtype=dt.int64, backend=backend))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if x.ndim not in self._ndims or x.shape[1] != self.num_features:
            raise ValueError(
                f"{name}: expected input of {' or '.join(f'{n}' for n in self._ndims)} dims with "
                f"{self.num_features} channels in dim 1, got shape {x.shape}"
            )
        dims = (0, *range(2, x.ndim))
        use_batch = self.training or not self.track_running_stats
        if use_batch:
            mean = x.mean(dim=dims, keepdim=True)
            centered = x - mean
            var = (centered * centered).mean(dim=dims, keepdim=True)
            y = centered * (var + self.eps).rsqrt()
            if self.training and self.track_running_stats:
                self._update_stats(mean, var, x.numel() // x.shape[1])
        else:
            mean = _channel_view(self.running_mean, x.ndim)
            var = _channel_view(self.running_var, x.ndim)
            y = (x - mean) * (var + self.eps).rsqrt()
        return self._affine(y)

    def _affine(self, y: Tensor) -> Tensor:
        if self.weight is not None:
            y = y * _channel_view(self.weight, y.ndim)
        if self.bias is not None:
            y = y + _channel_view(self.bias, y.ndim)
        return y

    def _update_stats(self, mean: Tensor, var: Tensor, count: int) -> None:
        from ..parameter import _detached, _onto

        backend = self.running_mean.backend
        mean = _onto(_detached(mean).reshape(-1), backend).astype(self.running_mean.dtype)
        var = _onto(_detached(var).reshape(-1), backend).astype(self.running_var.dtype)
        unbiased = var * (count / max(count - 1, 1))
        self.num_batches_tracked = self.num_batches_tracked + 1
        m = self.momentum
        if m is None:  # cumulative moving average
            m = 1.0 / float(self.num_batches_tracked.item())
        self.running_mean = self.running_mean * (1 - m) + mean * m
        self.running_var = self.running_var * (1 - m) + unbiased * m

    def extra_repr(self) -> str:
        bias = f", bias={self.bias is not None}" if self.affine else ""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}{bias}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L).

    >>> import ember
    >>> from ember import nn
    >>> bn = nn.BatchNorm1d(2)
    >>> bn(ember.tensor([[1.0, 2.0], [3.0, 6.0]])).round(decimals=3).tolist()
    [[-1.0, -1.0], [1.0, 1.0]]
    >>> [round(v, 4) for v in bn.running_mean.tolist()]  # momentum 0.1 from 0
    [0.2, 0.4]
    """

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W); running statistics in training, used in ``eval()``.

    >>> import ember
    >>> from ember import nn
    >>> nn.BatchNorm2d(3)(ember.ones(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    """

    _ndims = (4,)


class _InstanceNorm(_BatchNorm):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, backend=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if x.ndim != self._ndims[0]:
            raise ValueError(f"{name}: expected {self._ndims[0]}-d input, got shape {x.shape}")
        dims = tuple(range(2, x.ndim))
        if self.training or not self.track_running_stats:
            mean = x.mean(dim=dims, keepdim=True)
            centered = x - mean
            var = (centered * centered).mean(dim=dims, keepdim=True)
            y = centered * (var + self.eps).rsqrt()
            if self.training and self.track_running_stats:
                self._update_stats(mean.mean(dim=0, keepdim=True), var.mean(dim=0, keepdim=True),
                                   x.numel() // (x.shape[0] * x.shape[1]))
        else:
            mean = _channel_view(self.running_mean, x.ndim)
            var = _channel_view(self.running_var, x.ndim)
            y = (x - mean) * (var + self.eps).rsqrt()
        return self._affine(y)


class InstanceNorm1d(_InstanceNorm):
    """Normalises each channel of each sample of (N, C, L) over L.

    >>> import ember
    >>> from ember import nn
    >>> [round(v, 4) for v in nn.InstanceNorm1d(1)(ember.tensor([[[1.0, 3.0]]]))[0, 0].tolist()]
    [-1.0, 1.0]
    """

    _ndims = (3,)


class InstanceNorm2d(_InstanceNorm):
    """Normalises each channel of each sample of (N, C, H, W) over H and W.

    >>> import ember
    >>> from ember import nn
    >>> nn.InstanceNorm2d(3)(ember.randn(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    """

    _ndims = (4,)


class LayerNorm(Module):
    """Normalises the trailing ``normalized_shape`` dims.

    >>> import ember
    >>> from ember import nn
    >>> nn.LayerNorm(4)(ember.ones(2, 4)).tolist()
    [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, backend=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = new_param(self.normalized_shape, backend, dtype)
            init.ones_(self.weight)
            if bias:
                self.bias = new_param(self.normalized_shape, backend, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalises groups of channels of (N, C, *) over each group's channels and positions.

    >>> import ember
    >>> from ember import nn
    >>> gn = nn.GroupNorm(num_groups=2, num_channels=4)
    >>> y = gn(ember.arange(24, dtype=ember.float32).reshape(2, 4, 3))
    >>> y.shape, round(y[0, :2].mean().item(), 4), round(y[0, :2].var(correction=0).item(), 2)
    ((2, 4, 3), 0.0, 1.0)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, backend=None, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                f"({num_groups})"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups, num_channels, eps, affine)
        self.weight = self.bias = None
        if affine:
            self.weight = new_param((num_channels,), backend, dtype)
            self.bias = new_param((num_channels,), backend, dtype)
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm: expected (N, {self.num_channels}, *) input, got shape {x.shape}"
            )
        n = x.shape[0]
        g = x.reshape(n, self.num_groups, -1)
        y = _normalize(g, (2,), self.eps).reshape(*x.shape)
        if self.affine:
            y = y * _channel_view(self.weight, x.ndim) + _channel_view(self.bias, x.ndim)
        return y

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """``x / sqrt(mean(x²) + eps) * weight`` over the trailing ``normalized_shape`` dims;
    ``eps=None`` uses the dtype's machine epsilon (as torch).

    >>> import ember
    >>> from ember import nn
    >>> [round(v, 4) for v in nn.RMSNorm(2)(ember.tensor([[3.0, 4.0]]))[0].tolist()]
    [0.8485, 1.1314]
    """

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, backend=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = None
        if elementwise_affine:
            self.weight = new_param(self.normalized_shape, backend, dtype)
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        eps = self.eps
        if eps is None:
            eps = {"float16": 0.0009765625, "float32": 1.1920928955078125e-07}.get(
                x.dtype.name, 2.220446049250313e-16)
        dims = tuple(range(x.ndim - len(self.normalized_shape), x.ndim))
        y = x * ((x * x).mean(dim=dims, keepdim=True) + eps).rsqrt()
        return y * self.weight if self.weight is not None else y

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"
