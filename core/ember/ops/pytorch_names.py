"""PyTorch's Tensor names that Ember answers: ``cpu()``, ``cuda()``, ``requires_grad``,
``requires_grad_()``; and, for a PyTorch name Ember doesn't have, an AttributeError that
names the Ember way (``t.add_(x)``: tensors are values, write ``t = t.add(x)``).

>>> import ember
>>> x = ember.tensor([1.0, 2.0], backend="autodiff-numpy")
>>> x.requires_grad, x.requires_grad_().requires_grad, x.cpu() is x
(False, True, True)
>>> x.mul_(2)
Traceback (most recent call last):
...
AttributeError: Tensor has no in-place mul_(): Ember tensors are values, write t = t.mul(...) ...
"""

from __future__ import annotations

from ..tensor import Tensor
from .autograd import detach, is_require_grad, require_grad

# PyTorch names without an Ember twin of the same spelling -> the Ember way
HINTS = {
    "data": "t.detach() is the value without the graph (a Parameter has .data)",
    "retain_grad": "t = t.require_grad() keeps a computed tensor's gradient in t.grad",
    "grad_fn": "Ember's graph has no per-tensor function objects; t.is_require_grad() tells "
    "whether t is tracked",
    "is_leaf": "t.is_require_grad() tells whether t is tracked; parameters are the leaves",
    "zero_": "Ember tensors are values: t = ember.zeros_like(t) (a Parameter: p.assign(...))",
    "fill_": "Ember tensors are values: t = ember.full_like(t, value)",
    "copy_": "Ember tensors are values: t = src.to(t.backend, t.dtype) (a Parameter: "
    "p.assign(src))",
}


def cpu(self: Tensor) -> Tensor:
    """``t.to("cpu")``: the tensor itself when its backend runs on the host.

    >>> import ember
    >>> ember.tensor([1.0], backend="python").cpu().backend.name
    'python'
    """
    return self.to("cpu")


def cuda(self: Tensor) -> Tensor:
    """``t.to("cuda")``: on the ``wgpu`` backend (WebGPU; Ember has no CUDA backend), or the
    tensor itself when it already runs on a GPU.

    >>> import ember
    >>> callable(ember.Tensor.cuda)
    True
    """
    return self.to("cuda")


def get_requires_grad(self: Tensor) -> bool:
    """Whether the tensor is tracked (PyTorch's ``requires_grad``; Ember's
    ``is_require_grad()``). Assigning True or False is :func:`requires_grad_`.

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python")
    >>> x.requires_grad = True; x.requires_grad
    True
    """
    return is_require_grad(self)


def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    """Make this tensor a tracked leaf in place (``False``: untrack it) and return it, as
    PyTorch's ``requires_grad_``; Ember's ``t.require_grad()`` returns the tracked tensor.
    Only a tensor of an Autodiff backend can be tracked (the error says how to get one).

    >>> import ember
    >>> w = ember.tensor([1.0, 2.0], backend="autodiff-numpy")
    >>> _ = w.requires_grad_(); _ = (w * w).sum().backward(); w.grad.tolist()
    [2.0, 4.0]
    """
    self._prim = (require_grad(self) if requires_grad else detach(self))._prim
    return self


def set_requires_grad(self: Tensor, flag: bool) -> None:
    requires_grad_(self, flag)


def missing(self: Tensor, name: str):
    """``__getattr__``: runs only for a name the Tensor lacks; raises the AttributeError,
    naming the Ember way for the PyTorch names that have one."""
    base = name[:-1]
    if name.endswith("_") and not name.endswith("__") and hasattr(type(self), base):
        raise AttributeError(
            f"Tensor has no in-place {name}(): Ember tensors are values, write "
            f"t = t.{base}(...) (a Parameter updates in place: p.assign(value), p -= ...)"
        )
    hint = HINTS.get(name)
    raise AttributeError(
        f"{type(self).__name__!r} object has no attribute {name!r}" + (f"; {hint}" if hint else "")
    )
