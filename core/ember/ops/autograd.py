"""Tensor methods of autodiff: require_grad, backward, grad, detach, is_require_grad, inner."""

from __future__ import annotations

from ..errors import DTypeError, EmberError, ShapeError
from ..tensor import Tensor
from ..autodiff.backend import ADPrim, Autodiff
from ..autodiff.graph import Gradients, Node, run_backward


def _autodiff(t: Tensor, op: str) -> Autodiff:
    if not isinstance(t.backend, Autodiff):
        raise EmberError(
            f"{op}: tensor is on backend '{t.backend.name}', which records no gradients; create "
            f"it on an Autodiff backend, e.g. ember.tensor(..., backend='autodiff-"
            f"{t.backend.name}') or backend=ember.Autodiff(ember.get_backend("
            f"'{t.backend.name}')), or move it with t.to('autodiff-{t.backend.name}')"
        )
    return t.backend


def require_grad(self: Tensor) -> Tensor:
    """This tensor as a tracked leaf: ``backward`` computes its gradient (float only).

    On a tensor that is already the result of tracked ops, its gradient is kept too.

    >>> import ember
    >>> w = ember.tensor([1.0, 2.0], backend="autodiff-numpy").require_grad()
    >>> w.is_require_grad()
    True
    """
    _autodiff(self, "require_grad")
    if not self.dtype.is_float:
        raise DTypeError(f"require_grad: only float tensors can require grad, got {self.dtype}")
    node = self._prim.node
    if node is not None:
        node.retain = True
        return self
    return Tensor(ADPrim(self._prim.inner, Node.leaf()), self.backend)


def is_require_grad(self: Tensor) -> bool:
    """Whether the tensor is tracked (a leaf that requires grad, or computed from one).

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python")
    >>> x.is_require_grad(), x.require_grad().is_require_grad()
    (False, True)
    """
    return isinstance(self._prim, ADPrim) and self._prim.node is not None


def detach(self: Tensor) -> Tensor:
    """The same values, untracked (no copy). On a plain backend: the tensor itself.

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python").require_grad()
    >>> (x * 2).detach().is_require_grad()
    False
    """
    if isinstance(self._prim, ADPrim) and self._prim.node is not None:
        return Tensor(ADPrim(self._prim.inner), self.backend)
    return self


def inner(self: Tensor) -> Tensor:
    """The values as a tensor of the inner backend (no graph, no copy); itself elsewhere.

    This is Burn's ``inner()``; for the inner *product* use ``ember.dot``.

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python").require_grad()
    >>> x.inner().backend.name, x.inner().tolist()
    ('python', [1.0])
    """
    if isinstance(self.backend, Autodiff):
        return Tensor(self._prim.inner, self.backend.inner)
    return self


to_inner = inner


def backward(
    self: Tensor, gradient=None, *, into: Gradients | None = None, retain_graph: bool = False
) -> Gradients:
    """Gradients of this tensor with respect to every tracked leaf.

    ``gradient`` seeds it (same shape; default 1 for a one-element float tensor). ``into``
    adds the new gradients to an existing :class:`Gradients` (returned). The graph is released
    afterwards unless ``retain_graph``.

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], backend="autodiff-numpy").require_grad()
    >>> grads = (x * 3).sum().backward()
    >>> x.grad(grads).tolist()
    [3.0, 3.0]
    """
    b = _autodiff(self, "backward")
    node = self._prim.node
    if node is None:
        raise EmberError(
            "backward: this tensor is not tracked; call .require_grad() on its inputs "
            "(and don't compute it inside ember.no_grad())"
        )
    inner = b.inner
    if gradient is None:
        if self.numel() != 1 or not self.dtype.is_float:
            raise ShapeError(
                f"backward: without a gradient argument the tensor must be a one-element float "
                f"(a loss), got shape {self.shape} of {self.dtype}; pass gradient=..."
            )
        seed = inner.full(self.shape, 1.0, self.dtype)
    else:
        if not isinstance(gradient, Tensor):
            from ..ops.creation import tensor

            gradient = tensor(gradient, dtype=self.dtype, backend=inner)
        if gradient.shape != self.shape:
            raise ShapeError(
                f"backward: gradient has shape {gradient.shape}, the tensor has {self.shape}"
            )
        if isinstance(gradient.backend, Autodiff):
            gradient = gradient.inner()
        if gradient.backend is not inner:
            gradient = gradient.to(inner)
        seed = gradient.astype(self.dtype)._prim
    if into is not None and into.inner is not inner:
        raise EmberError(f"backward: into= holds gradients of backend {into.inner.name}")
    return run_backward(
        node, seed, inner, into if into is not None else Gradients(inner, Tensor), retain_graph
    )


def grad(self: Tensor, grads: Gradients) -> Tensor | None:
    """This tensor's gradient in ``grads`` (a Tensor on the inner backend), or None.

    >>> import ember
    >>> x = ember.tensor([2.0], backend="autodiff-python").require_grad()
    >>> grads = (x * x).sum().backward()
    >>> x.grad(grads).tolist()
    [4.0]
    """
    if not isinstance(grads, Gradients):
        raise TypeError(f"grad: expected the Gradients from backward(), got {type(grads).__name__}")
    return grads.get(self)
