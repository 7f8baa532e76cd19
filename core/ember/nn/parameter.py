"""Parameters: tensors of a Module whose value an optimizer swaps in place (see
:mod:`ember.nn.module` for the update contract)."""

from __future__ import annotations

import operator

from ..errors import ShapeError
from ..ops import state as _state
from ..tensor import Tensor


def _detached(t: Tensor) -> Tensor:
    """``t`` as an untracked plain Tensor on its own backend."""
    out = t.detach()
    return Tensor(out._prim, out.backend)


def _onto(value: Tensor, backend) -> Tensor:
    """``value`` (untracked) on ``backend``; an inner-backend tensor is lifted, not copied."""
    if value.backend is backend:
        return _detached(value)
    if backend.caps.gradients and value.backend is backend.inner:
        return Tensor(backend.from_inner(value._prim), backend)
    if value.backend.caps.gradients:
        value = _detached(value)
    return value.to(backend)


def _in_place(op):
    def update(self: Parameter, other) -> Parameter:
        return self.assign(op(_detached(self), other))

    return update


class Parameter(Tensor):
    """A trainable tensor of a Module (a Tensor subclass whose value swaps in place).

    ``requires_grad=False`` keeps it out of ``parameters()`` and untracked by autodiff.

    >>> import ember
    >>> p = Parameter(ember.zeros(2))
    >>> _ = p.assign(ember.ones(2))
    >>> p.tolist()
    [1.0, 1.0]

    >>> p.data.is_require_grad(), p.inner().tolist(), p.set_requires_grad(False).requires_grad
    (False, [1.0, 1.0], False)

    PyTorch's in-place updates assign, in place (``p.data = v`` too):

    >>> q = p
    >>> p -= ember.tensor([0.5, 1.0]); p *= 2; p.data = p.data + 1
    >>> q is p, q.tolist()
    (True, [2.0, 1.0])
    """

    __slots__ = ("requires_grad",)

    def __init__(self, data: Tensor, requires_grad: bool = True):
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        if requires_grad and not data.dtype.is_float:
            raise TypeError(f"Parameter: only float tensors can require grad, got {data.dtype}")
        self.requires_grad = requires_grad
        self._set(data, data.backend)

    def _set(self, value: Tensor, backend) -> None:
        if hasattr(self, "_prim"):  # a jitted function that read the old value re-traces
            _state.state_replaced(Tensor(self._prim, self.backend))
        value = _onto(value, backend)
        if self.requires_grad and backend.caps.gradients:
            value = value.require_grad()
        self._prim, self.backend = value._prim, value.backend

    def assign(self, value: Tensor) -> Parameter:
        """Replace the value in place (a fresh tracked leaf on an Autodiff backend); ``.grad``
        stays, as after a PyTorch optimizer step."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Parameter.assign: expected a Tensor, got {type(value).__name__}")
        if tuple(value.shape) != self.shape:
            raise ShapeError(
                f"Parameter.assign: value has shape {tuple(value.shape)}, parameter has "
                f"{self.shape}; a parameter keeps its shape"
            )
        dtype = self.dtype
        value = value if value.dtype == dtype else value.astype(dtype)
        # in a traced function, the update is also written into the primitive (at the end of
        # the call and of every replay), then wrapped as a fresh tracked leaf again (with no
        # .grad: the replays don't compute one)
        traced = _state.assign(self, value, settle=self._rewrap)
        old = getattr(self._prim, "node", None)
        self._set(value, self.backend)
        new = getattr(self._prim, "node", None)
        if old is not None and new is not None and not traced:
            new.grad = old.grad  # the same parameter: .grad stays, as after torch's step()
        return self

    def _rewrap(self) -> None:
        self._set(Tensor(self._prim, self.backend), self.backend)

    def inner(self) -> Tensor:
        """The value on the inner backend (itself, untracked, on a plain backend)."""
        return Tensor(self._prim, self.backend).inner()

    @property
    def data(self) -> Tensor:
        """The value as a plain, untracked Tensor; assigning to it is :meth:`assign`."""
        return _detached(self)

    @data.setter
    def data(self, value: Tensor) -> None:
        self.assign(value)

    # PyTorch's in-place updates of a parameter (`p -= lr * p.grad`) assign the new value:
    # a parameter is the one tensor whose value swaps in place
    __iadd__ = _in_place(operator.add)
    __isub__ = _in_place(operator.sub)
    __imul__ = _in_place(operator.mul)
    __itruediv__ = _in_place(operator.truediv)

    def set_requires_grad(self, flag: bool) -> Parameter:
        """Make it trainable (tracked, listed by ``parameters()``) or frozen; returns the parameter."""
        self.requires_grad = bool(flag)
        self._set(Tensor(self._prim, self.backend), self.backend)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Parameter:
        """PyTorch's name for :meth:`set_requires_grad`.

        >>> import ember
        >>> Parameter(ember.zeros(1)).requires_grad_(False).requires_grad
        False
        """
        return self.set_requires_grad(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(Tensor(self._prim, self.backend))

    def __reduce__(self):
        return (Parameter, (_detached(self), self.requires_grad))

    def __deepcopy__(self, memo) -> Parameter:
        """``copy.deepcopy``: a new parameter (a fresh leaf) with the same values, on the same
        backend (:meth:`Tensor.__deepcopy__ <ember.Tensor.__deepcopy__>`)."""
        return Parameter(_detached(self), self.requires_grad)
