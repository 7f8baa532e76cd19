"""Loss functions with ``torch.nn.functional``'s names and arguments; ``ember.nn.functional``
and ``ember.nn.loss`` (beside the module forms) export them.

Every function takes ``reduction="mean" | "sum" | "none"``.

>>> import ember
>>> from ember.nn import functional as F
>>> logits = ember.tensor([[2.0, 0.0], [0.0, 2.0]])
>>> round(F.cross_entropy(logits, ember.tensor([0, 1])).item(), 4)
0.1269
"""

from __future__ import annotations

from ..ops.where import where
from ..tensor import Tensor
from .functional_act import log_softmax

_REDUCTIONS = ("none", "mean", "sum")


def _reduce(op: str, loss: Tensor, reduction: str, valid=("none", "mean", "sum")) -> Tensor:
    if reduction not in valid:
        raise ValueError(f"{op}: reduction must be one of {valid}, got {reduction!r}")
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_same_shape(op: str, input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"{op}: input shape {input.shape} and target shape {target.shape} must match"
        )


def _class_view(w: Tensor, ndim: int) -> Tensor:
    """A (C,) weight shaped to broadcast over dim 1 of an ``ndim``-d input."""
    return w.reshape(1, -1, *([1] * (ndim - 2))) if ndim >= 2 else w


# ---------------------------------------------------------------------------- classification
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C, *) at class indices
    ``target`` (N, *); ``mean`` divides by the summed weight of non-ignored targets.

    >>> import ember
    >>> from ember.nn.loss import nll_loss
    >>> nll_loss(ember.tensor([[-1.0, -2.0], [-3.0, -4.0]]), ember.tensor([0, 1])).item()
    2.5
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"nll_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if target.dtype.is_float:
        raise TypeError(f"nll_loss: target must hold class indices (int), got {target.dtype}")
    unbatched = input.ndim == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.reshape(1)
    if input.shape[:1] + input.shape[2:] != tuple(target.shape):
        raise ValueError(
            f"nll_loss: input {input.shape} (N, C, *) needs target of shape "
            f"{input.shape[:1] + input.shape[2:]}, got {target.shape}"
        )
    target = target.long()
    keep = target != ignore_index
    safe = where(keep, target, 0)
    picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = keep.to(input.dtype)
    if weight is not None:
        w = w * weight.to(input.dtype).index_select(0, safe.reshape(-1)).reshape(*safe.shape)
    loss = -picked * w
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits ``input`` (N, C, *) or (C,) against class indices
    (int ``target`` of shape (N, *)) or class probabilities (float, ``input``'s shape).

    >>> import ember
    >>> x = ember.tensor([[1.0, 2.0, 3.0]])
    >>> round(cross_entropy(x, ember.tensor([2])).item(), 4)
    0.4076
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"cross_entropy: reduction must be one of {_REDUCTIONS}, got {reduction!r}"
        )
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    eps = float(label_smoothing)
    if target.dtype.is_float:  # class probabilities
        _check_same_shape("cross_entropy", input, target)
        if eps > 0:
            target = target * (1 - eps) + eps / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * _class_view(weight.to(input.dtype), input.ndim)
        loss = -terms.sum(dim=class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // n_classes if input.ndim > 1 else 1)
        return loss.sum() if reduction == "sum" else loss
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if eps <= 0:
        return nll
    keep = (target.long() != ignore_index).to(input.dtype)
    terms = logp if weight is None else logp * _class_view(weight.to(input.dtype), input.ndim)
    smooth = -terms.sum(dim=class_dim) * keep
    if reduction == "none":
        smooth_r = smooth
    elif reduction == "sum":
        smooth_r = smooth.sum()
    elif weight is None:
        smooth_r = smooth.sum() / keep.sum()
    else:
        safe = where(target.long() != ignore_index, target.long(), 0)
        w = weight.to(input.dtype).index_select(0, safe.reshape(-1)).reshape(*safe.shape)
        smooth_r = smooth.sum() / (w * keep).sum()
    return nll * (1 - eps) + smooth_r * (eps / n_classes)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """BCE of probabilities ``input``; logs are clamped at -100 like torch.

    >>> import ember
    >>> from ember.nn.loss import binary_cross_entropy
    >>> round(binary_cross_entropy(ember.tensor([0.5]), ember.tensor([1.0])).item(), 4)  # log 2
    0.6931
    """
    _check_same_shape("binary_cross_entropy", input, target)
    target = target.to(input.dtype)
    log_p = input.log().clamp(min=-100.0)
    log_q = (1 - input).log().clamp(min=-100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy", loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + BCE in one numerically stable expression; ``pos_weight`` scales the positive
    term (one weight per class, broadcast over the last dim).

    >>> import ember
    >>> from ember.nn.loss import binary_cross_entropy_with_logits as bce
    >>> round(bce(ember.tensor([0.0, 0.0]), ember.tensor([1.0, 0.0])).item(), 4)  # log 2
    0.6931
    """
    _check_same_shape("binary_cross_entropy_with_logits", input, target)
    target = target.to(input.dtype)
    softplus_neg = (-input.abs()).exp().log1p() + (-input).clamp(min=0)  # log(1 + e^-x)
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


# ---------------------------------------------------------------------------- regression
def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error.

    >>> import ember
    >>> mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([0.0, 0.0])).item()
    2.5
    """
    _check_same_shape("mse_loss", input, target)
    d = input - target
    return _reduce("mse_loss", d * d, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or none) of ``|input - target|``.

    >>> import ember
    >>> from ember.nn.loss import l1_loss
    >>> l1_loss(ember.tensor([1.0, 2.0]), ember.tensor([2.0, 4.0])).item()
    1.5
    """
    _check_same_shape("l1_loss", input, target)
    return _reduce("l1_loss", (input - target).abs(), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    """Quadratic within ``delta``, linear beyond (``delta * (|d| - delta/2)``).

    >>> import ember
    >>> from ember.nn.loss import huber_loss
    >>> huber_loss(ember.zeros(2), ember.tensor([0.5, 3.0]), reduction="none").tolist()
    [0.125, 2.5]
    """
    _check_same_shape("huber_loss", input, target)
    d = (input - target).abs()
    loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    return _reduce("huber_loss", loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """Huber loss divided by ``beta`` (L1 when ``beta == 0``).

    >>> import ember
    >>> from ember.nn.loss import smooth_l1_loss
    >>> target = ember.tensor([0.5, 3.0])
    >>> smooth_l1_loss(ember.zeros(2), target, reduction="none", beta=2.0).tolist()
    [0.0625, 2.0]
    """
    _check_same_shape("smooth_l1_loss", input, target)
    d = (input - target).abs()
    if beta == 0:
        return _reduce("smooth_l1_loss", d, reduction)
    loss = where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce("smooth_l1_loss", loss, reduction)


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence with log-probabilities ``input``; ``reduction="batchmean"`` divides the
    sum by the batch size (the mathematically correct mean).

    >>> import ember
    >>> from ember.nn.loss import kl_div
    >>> p, q = ember.tensor([0.5, 0.5]), ember.tensor([0.25, 0.75])
    >>> round(kl_div(q.log(), p, reduction="sum").item(), 4)  # 0.5 ln 2 + 0.5 ln(2/3)
    0.1438
    """
    _check_same_shape("kl_div", input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target > 0
        safe = where(positive, target, 1.0)
        loss = where(positive, target * (safe.log() - input), 0.0 * input)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce("kl_div", loss, reduction, ("none", "mean", "sum", "batchmean"))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos`` where ``target == 1``; ``max(0, cos - margin)`` where ``target == -1``.

    >>> import ember
    >>> from ember.nn.loss import cosine_embedding_loss
    >>> a, b = ember.tensor([[1.0, 0.0], [1.0, 0.0]]), ember.tensor([[0.0, 1.0], [1.0, 0.0]])
    >>> cosine_embedding_loss(a, b, ember.tensor([1, -1]), reduction="none").tolist()
    [1.0, 1.0]
    """
    eps = 1e-12
    dot = (input1 * input2).sum(dim=-1)
    m1 = (input1 * input1).sum(dim=-1) + eps
    m2 = (input2 * input2).sum(dim=-1) + eps
    cos = dot / (m1 * m2).sqrt()
    target = target.to(cos.dtype)
    loss = where(target > 0, 1 - cos, (cos - margin).clamp(min=0))
    return _reduce("cosine_embedding_loss", loss, reduction)
