"""``ember.nn.utils``: PyTorch's ``torch.nn.utils`` helpers over parameters and their ``.grad``,
and the BatchNorm fold for inference (``fold_batchnorms``).

>>> import ember
>>> from ember import nn
>>> lin = nn.Linear(2, 1).to("autodiff-numpy")
>>> _ = (lin(ember.ones(1, 2, backend="autodiff-numpy")) * 10).sum().backward()
>>> round(nn.utils.clip_grad_norm_(lin.parameters(), max_norm=1.0).item(), 3)  # before: 10 * sqrt(3)
17.321
>>> round(nn.utils.parameters_to_vector([g.grad for g in lin.parameters()]).norm().item(), 3)
1.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..errors import EmberError, ShapeError
from ..ops.creation import tensor
from ..ops.shape_ops import cat
from ..optim.optimizer import clip_grad_value, grad_norm, scale_to_norm
from ..tensor import Tensor
from .batchnorm_fold import fold_batchnorms

__all__ = ["clip_grad_norm_", "clip_grad_value_", "fold_batchnorms", "parameters_to_vector",
           "vector_to_parameters"]


def _listed(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale the ``.grad`` of ``parameters`` so their joint norm is at most ``max_norm`` and
    return the norm they had (a 0-d tensor), as ``torch.nn.utils.clip_grad_norm_``.

    Parameters without a ``.grad`` are skipped. ``error_if_nonfinite=True`` raises when the
    norm is nan or inf instead of scaling by it.

    >>> import ember
    >>> w = ember.tensor([0.0, 0.0], backend="autodiff-numpy").require_grad()
    >>> _ = (w * ember.tensor([3.0, 4.0], backend="autodiff-numpy")).sum().backward()
    >>> clip_grad_norm_(w, 1.0).item(), [round(v, 4) for v in w.grad.tolist()]
    (5.0, [0.6, 0.8])
    """
    params = [p for p in _listed(parameters) if p.grad is not None]
    if not params:
        return tensor(0.0)
    grads = [p.grad for p in params]
    total = grad_norm(grads, float(norm_type))
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise EmberError(
            f"clip_grad_norm_: the total {norm_type}-norm of the gradients is {total.item()}; "
            "pass error_if_nonfinite=False to scale by it anyway"
        )
    for p, old, new in zip(params, grads, scale_to_norm(grads, float(max_norm), total)):
        if new is not old:
            p.grad = new
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every element of the ``.grad`` of ``parameters`` to ``[-clip_value, clip_value]``,
    as ``torch.nn.utils.clip_grad_value_``.

    >>> import ember
    >>> w = ember.tensor([0.0, 0.0], backend="autodiff-numpy").require_grad()
    >>> _ = (w * ember.tensor([-3.0, 0.5], backend="autodiff-numpy")).sum().backward()
    >>> clip_grad_value_([w], 1.0); w.grad.tolist()
    [-1.0, 0.5]
    """
    params = [p for p in _listed(parameters) if p.grad is not None]
    for p, g in zip(params, clip_grad_value([p.grad for p in params], float(clip_value))):
        p.grad = g


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """One 1-D tensor of all the values of ``parameters``, flattened in order (differentiable
    on an Autodiff backend), as ``torch.nn.utils.parameters_to_vector``.

    >>> import ember
    >>> from ember import nn
    >>> parameters_to_vector(nn.Linear(3, 2).parameters()).shape  # 2 * 3 weights + 2 biases
    (8,)
    """
    params = _listed(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Assign consecutive slices of the 1-D ``vec`` to ``parameters`` (each reshaped to its
    parameter's shape), as ``torch.nn.utils.vector_to_parameters``.

    >>> import ember
    >>> from ember import nn
    >>> lin = nn.Linear(2, 1)
    >>> vector_to_parameters(ember.tensor([1.0, 2.0, 3.0]), lin.parameters())
    >>> lin.weight.tolist(), lin.bias.tolist()
    ([[1.0, 2.0]], [3.0])
    """
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        got = f"shape {vec.shape}" if isinstance(vec, Tensor) else type(vec).__name__
        raise ShapeError(f"vector_to_parameters: expected a 1-D tensor, got {got}")
    params = _listed(parameters)
    for p in params:
        if not hasattr(p, "assign"):
            raise TypeError(
                f"vector_to_parameters: expected nn.Parameter objects (their values are "
                f"replaced in place), got {type(p).__name__}"
            )
    sizes = [p.numel() for p in params]
    if sum(sizes) != vec.shape[0]:
        raise ShapeError(
            f"vector_to_parameters: the vector has {vec.shape[0]} elements, the parameters "
            f"{sum(sizes)}"
        )
    at = 0
    for p, n in zip(params, sizes):
        p.assign(vec[at : at + n].reshape(p.shape))
        at += n
