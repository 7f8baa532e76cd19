"""Activation modules (thin wrappers over ``ember.nn.functional``)."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from ._util import new_param


class ReLU(Module):
    """``max(x, 0)``.

    >>> import ember
    >>> from ember import nn
    >>> nn.ReLU()(ember.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class ReLU6(ReLU):
    """``min(max(x, 0), 6)``.

    >>> import ember
    >>> from ember import nn
    >>> nn.ReLU6()(ember.tensor([-1.0, 3.0, 9.0])).tolist()
    [0.0, 3.0, 6.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x)


class Sigmoid(ReLU):
    """``1 / (1 + exp(-x))``.

    >>> import ember
    >>> from ember import nn
    >>> nn.Sigmoid()(ember.tensor([0.0])).tolist()
    [0.5]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(ReLU):
    """The hyperbolic tangent.

    >>> import ember
    >>> from ember import nn
    >>> nn.Tanh()(ember.tensor([0.0])).tolist()
    [0.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class SiLU(ReLU):
    """``x * sigmoid(x)`` (swish).

    >>> import ember
    >>> from ember import nn
    >>> nn.SiLU()(ember.tensor([0.0, 1.0])).tolist()[0]
    0.0
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class Hardswish(ReLU):
    """``x * relu6(x + 3) / 6`` (``HardSwish`` is the same class).

    >>> import ember
    >>> from ember import nn
    >>> nn.Hardswish()(ember.tensor([-4.0, 3.0])).tolist()
    [-0.0, 3.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x)


class Mish(ReLU):
    """``x * tanh(softplus(x))``.

    >>> import ember
    >>> from ember import nn
    >>> nn.Mish()(ember.tensor([0.0])).tolist()
    [0.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)


HardSwish = Hardswish


class LeakyReLU(Module):
    """``max(x, 0) + negative_slope * min(x, 0)``.

    >>> import ember
    >>> from ember import nn
    >>> nn.LeakyReLU(0.5)(ember.tensor([-2.0, 2.0])).tolist()
    [-1.0, 2.0]
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    >>> import ember
    >>> from ember import nn
    >>> nn.ELU()(ember.tensor([0.0, 2.0])).tolist()
    [0.0, 2.0]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class GELU(Module):
    """``approximate="none"`` (erf) or ``"tanh"``.

    >>> import ember
    >>> from ember import nn
    >>> x = ember.tensor([0.0, 1.0])
    >>> [round(v, 4) for v in nn.GELU()(x).tolist()], round(nn.GELU("tanh")(x)[1].item(), 4)
    ([0.0, 0.8413], 0.8412)
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1  # torch's legacy implicit dim


class Softmax(Module):
    """Softmax over ``dim`` (PyTorch's legacy choice of dim when None).

    >>> import ember
    >>> from ember import nn
    >>> nn.Softmax(dim=0)(ember.tensor([1.0, 1.0])).tolist()
    [0.5, 0.5]
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim if self.dim is not None else _softmax_dim(x.ndim))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log of the softmax over ``dim``, computed stably.

    >>> import ember
    >>> from ember import nn
    >>> [round(v, 4) for v in nn.LogSoftmax(dim=0)(ember.tensor([1.0, 1.0])).tolist()]
    [-0.6931, -0.6931]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim if self.dim is not None else _softmax_dim(x.ndim))


class PReLU(Module):
    """``max(x, 0) + w * min(x, 0)`` with a learnt ``w`` (one, or one per channel of dim 1).

    >>> import ember
    >>> from ember import nn
    >>> act = nn.PReLU()
    >>> act(ember.tensor([-2.0, 3.0])).tolist(), act.num_params()
    ([-0.5, 3.0], 1)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, backend=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = new_param((num_parameters,), backend, dtype)
        from .. import init as init_

        init_.constant_(self.weight, init)

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight
        if self.num_parameters > 1 and x.ndim >= 2:
            w = w.reshape(self.num_parameters, *([1] * (x.ndim - 2)))
        return x.clamp(min=0) + w * x.clamp(max=0)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
