"""Loss modules (``nn.CrossEntropyLoss``...) and the loss functions they call, which live in
:mod:`ember.nn.functional` (PyTorch's home for them) and are exported here too.

Every loss takes ``reduction="mean" | "sum" | "none"``.

>>> import ember
>>> from ember.nn import loss
>>> logits = ember.tensor([[2.0, 0.0], [0.0, 2.0]])
>>> round(loss.cross_entropy(logits, ember.tensor([0, 1])).item(), 4)
0.1269
>>> loss.cross_entropy is ember.nn.functional.cross_entropy
True
"""

from __future__ import annotations

from ..tensor import Tensor
from .functional_loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .module import Module

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
    "SmoothL1Loss",
]


# ---------------------------------------------------------------------------- module forms
class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class CrossEntropyLoss(_Loss):
    """Module form of :func:`cross_entropy`.

    >>> import ember
    >>> from ember import nn
    >>> loss = nn.CrossEntropyLoss()(ember.tensor([[0.0, 0.0]]), ember.tensor([0]))
    >>> round(loss.item(), 4)  # log(2)
    0.6931
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                             self.label_smoothing)


class NLLLoss(_Loss):
    """Module form of :func:`nll_loss` (input: log-probabilities).

    >>> import ember
    >>> from ember import nn
    >>> nn.NLLLoss()(ember.tensor([[-1.0, -2.0]]), ember.tensor([1])).item()
    2.0
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCELoss(_Loss):
    """Module form of :func:`binary_cross_entropy` (input: probabilities).

    >>> import ember
    >>> from ember import nn
    >>> round(nn.BCELoss()(ember.tensor([0.5]), ember.tensor([1.0])).item(), 4)
    0.6931
    """

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Module form of :func:`binary_cross_entropy_with_logits`.

    >>> import ember
    >>> from ember import nn
    >>> round(nn.BCEWithLogitsLoss()(ember.tensor([0.0]), ember.tensor([1.0])).item(), 4)
    0.6931
    """

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                self.pos_weight)


class MSELoss(_Loss):
    """Module form of :func:`mse_loss`.

    >>> import ember
    >>> from ember import nn
    >>> nn.MSELoss()(ember.tensor([1.0, 3.0]), ember.tensor([0.0, 0.0])).item()
    5.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Module form of :func:`l1_loss`.

    >>> import ember
    >>> from ember import nn
    >>> nn.L1Loss()(ember.tensor([1.0, -3.0]), ember.tensor([0.0, 0.0])).item()
    2.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return l1_loss(input, target, self.reduction)


class HuberLoss(_Loss):
    """Module form of :func:`huber_loss`.

    >>> import ember
    >>> from ember import nn
    >>> nn.HuberLoss()(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0])).item()
    1.3125
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """Module form of :func:`smooth_l1_loss`.

    >>> import ember
    >>> from ember import nn
    >>> nn.SmoothL1Loss()(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0])).item()
    1.3125
    """

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class KLDivLoss(_Loss):
    """Module form of :func:`kl_div` (input: log-probabilities).

    >>> import ember
    >>> from ember import nn
    >>> nn.KLDivLoss(reduction="sum")(ember.tensor([0.0]), ember.tensor([1.0])).item()
    0.0
    """

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return kl_div(input, target, self.reduction, self.log_target)


class CosineEmbeddingLoss(_Loss):
    """Module form of :func:`cosine_embedding_loss`.

    >>> import ember
    >>> from ember import nn
    >>> nn.CosineEmbeddingLoss()(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 0.0]]), ember.tensor([1])).item()
    0.0
    """

    def __init__(self, margin: float = 0.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)
