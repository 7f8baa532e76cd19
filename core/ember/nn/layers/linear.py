"""Linear, Bilinear, Identity, Flatten."""

from __future__ import annotations

import math

from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param, torch_default_init


class Identity(Module):
    """Returns its input (placeholder layer).

    >>> import ember
    >>> from ember import nn
    >>> nn.Identity()(ember.tensor([1, 2])).tolist()
    [1, 2]
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """``y = x @ W.T + b`` with ``W`` of shape (out_features, in_features), as torch.

    >>> import ember
    >>> from ember import nn
    >>> nn.Linear(784, 128)(ember.zeros(2, 784)).shape
    (2, 128)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 backend=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = new_param((out_features, in_features), backend, dtype)
        self.bias = new_param((out_features,), backend, dtype) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the weight and bias as PyTorch does (Kaiming-uniform, ``a = sqrt(5)``).

        >>> import ember
        >>> from ember import nn
        >>> fc = nn.Linear(4, 2)
        >>> _ = nn.init.zeros_(fc.weight); fc.reset_parameters()
        >>> bool((fc.weight.abs() <= 0.5).all() and fc.weight.abs().sum() > 0)  # bound 1/sqrt(4)
        True
        """
        torch_default_init(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``A`` of shape (out, in1, in2), as torch.

    >>> import ember
    >>> from ember import nn
    >>> layer = nn.Bilinear(2, 3, 4)
    >>> layer(ember.ones(5, 2), ember.ones(5, 3)).shape, layer.num_params()
    ((5, 4), 28)
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, backend=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        self.weight = new_param((out_features, in1_features, in2_features), backend, dtype)
        self.bias = new_param((out_features,), backend, dtype) if bias else None
        bound = 1 / math.sqrt(in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        lead = x1.shape[:-1]
        a = x1.reshape(-1, self.in1_features)
        b = x2.reshape(-1, self.in2_features)
        # (N, in1) @ (in1, out*in2) -> (N, out, in2), then contract in2 with x2
        w = self.weight.permute(1, 0, 2).reshape(self.in1_features, -1)
        t = (a @ w).reshape(-1, self.out_features, self.in2_features)
        y = (t * b.unsqueeze(1)).sum(dim=-1)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` (default: all but the batch dim).

    >>> import ember
    >>> from ember import nn
    >>> nn.Flatten()(ember.zeros(2, 3, 4)).shape, nn.Flatten(0)(ember.zeros(2, 3)).shape
    ((2, 12), (6,))
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        nd = x.ndim
        s = self.start_dim % nd if nd else 0
        e = self.end_dim % nd if nd else 0
        shape = x.shape
        size = 1
        for d in shape[s:e + 1]:
            size *= d
        return x.reshape(*shape[:s], size, *shape[e + 1:])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size``.

    >>> import ember
    >>> from ember import nn
    >>> nn.Unflatten(1, (2, 3))(ember.zeros(4, 6)).shape
    (4, 2, 3)
    """

    def __init__(self, dim: int, unflattened_size: tuple[int, ...]):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        d = self.dim % x.ndim
        return x.reshape(*x.shape[:d], *self.unflattened_size, *x.shape[d + 1:])
