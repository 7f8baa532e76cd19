"""Tensor methods of autodiff: require_grad, backward, the ``grad`` attribute, detach,
is_require_grad, inner."""

from __future__ import annotations

import weakref

from ..errors import DTypeError, EmberError, ShapeError
from . import state as _state
from ..jit.errors import JitError
from ..tensor import Tensor
from ..autodiff.backend import ADPrim, Autodiff
from ..autodiff.graph import Gradients, Node, run_backward

# tracer -> what its traced call did to ``.grad`` (:class:`_TracedGrads`)
_TRACED_GRADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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
    """Gradients of this tensor with respect to every tracked leaf: returned as a
    :class:`Gradients` (Burn's explicit style) and added to each leaf's ``.grad`` (PyTorch's).

    ``gradient`` seeds it (same shape; default 1 for a one-element float tensor). ``into``
    adds the new gradients to an existing :class:`Gradients` (returned). The graph is released
    afterwards unless ``retain_graph``. ``.grad`` accumulates over calls until cleared
    (``optimizer.zero_grad()``, ``model.zero_grad()`` or ``x.grad = None``).

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], backend="autodiff-numpy").require_grad()
    >>> grads = (x * 3).sum().backward()
    >>> grads.get(x).tolist(), x.grad.tolist()
    ([3.0, 3.0], [3.0, 3.0])
    >>> _ = (x * x).sum().backward()
    >>> x.grad.tolist()  # 3 + 2x
    [5.0, 7.0]
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
        node,
        seed,
        inner,
        into if into is not None else Gradients(inner, Tensor),
        retain_graph,
        _traced_grad_check(self),
    )


class _TracedGrads:
    """What a traced call did to ``.grad``: the nodes it wrote (cleared at each replay: their
    ``.grad`` would hold the traced call's values) and, of those, the ones whose ``.grad``
    already held gradients from outside the call (a replay can't add to those: reading one
    inside the call raises)."""

    def __init__(self, like: Tensor):
        self.written: dict[int, Node] = {}
        self.outside: set[int] = set()
        _state.on_replay(self.clear, like)

    def clear(self) -> None:
        for node in self.written.values():
            node.grad = None

    def check(self, node: Node) -> None:
        if node.grad is not None and node.id not in self.written:
            self.outside.add(node.id)
        self.written[node.id] = node


def _traced_grads(like: Tensor, create: bool = False) -> _TracedGrads | None:
    """The record of the traced call running on ``like``'s backend (None outside a trace)."""
    tracer = _state.recorder_for(like)
    if tracer is None:
        return None
    record = _TRACED_GRADS.get(tracer)
    if record is None and create:
        record = _TRACED_GRADS[tracer] = _TracedGrads(like)
    return record


def _traced_grad_check(like: Tensor):
    record = _traced_grads(like, create=True)
    return None if record is None else record.check


def _node(t: Tensor) -> Node | None:
    return t._prim.node if isinstance(t._prim, ADPrim) else None


def get_grad(self: Tensor) -> Tensor | None:
    """The gradient ``backward()`` calls summed into this tensor (PyTorch's ``.grad``): a
    Tensor on the tensor's own backend, untracked; None before any backward reached it, after
    ``optimizer.zero_grad()`` and on an untracked tensor. Assign a tensor of the same shape
    and dtype to replace it (``clip_grad_norm_`` does), or None to clear it.

    Burn's explicit gradients read the same values: ``grads = loss.backward()``, then
    ``grads.get(x)`` (on the inner backend).

    >>> import ember
    >>> x = ember.tensor([2.0], backend="autodiff-python").require_grad()
    >>> x.grad is None
    True
    >>> _ = (x * x).sum().backward()
    >>> x.grad.tolist(), x.grad.backend.name, x.grad.is_require_grad()
    ([4.0], 'autodiff-python', False)
    >>> x.grad = None; x.grad is None
    True
    """
    node = _node(self)
    if node is None or node.grad is None:
        return None
    record = _traced_grads(self)
    if record is not None and node.id in record.outside:
        raise JitError(
            "grad: this .grad holds gradients from outside the traced function as well, which "
            "its replays can't add to; clear them inside the function before loss.backward() "
            "(optimizer.zero_grad(), model.zero_grad() or x.grad = None)"
        )
    return Tensor(self.backend.from_inner(node.grad), self.backend)


def set_grad(self: Tensor, value: Tensor | None) -> None:
    node = _node(self)
    record = None if node is None else _traced_grads(self)
    if record is not None:
        record.outside.discard(node.id)
    if value is None:
        if node is not None:
            node.grad = None
        return
    if node is None:
        raise EmberError(
            "grad: only a tracked tensor has a gradient; make it one with .require_grad() on "
            "an Autodiff backend (a parameter of a model moved with model.to('autodiff-numpy'))"
        )
    if not isinstance(value, Tensor):
        raise TypeError(f"grad: assigned a {type(value).__name__}; expected a Tensor or None")
    if value.shape != self.shape or value.dtype != self.dtype:
        raise ShapeError(
            f"grad: assigned a gradient of shape {value.shape} and {value.dtype} to a tensor of "
            f"shape {self.shape} and {self.dtype}; they must match"
        )
    inner = self.backend.inner
    value = value.inner() if isinstance(value.backend, Autodiff) else value
    node.grad = (value if value.backend is inner else value.to(inner))._prim


grad = property(get_grad, set_grad, doc=get_grad.__doc__)


def clear_grads(tensors, set_to_none: bool = True) -> None:
    """Clear the ``.grad`` of each tensor: None, or zeros where it had one with
    ``set_to_none=False`` (what ``optimizer.zero_grad()`` and ``model.zero_grad()`` do).

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python").require_grad()
    >>> _ = (x * 3).sum().backward()
    >>> clear_grads([x], set_to_none=False); x.grad.tolist()
    [0.0]
    >>> clear_grads([x]); x.grad is None
    True
    """
    for t in tensors:
        node = _node(t)
        if node is None or node.grad is None:
            continue
        inner = t.backend.inner
        node.grad = None if set_to_none else inner.full(inner.shape(node.grad), 0, t.dtype)
