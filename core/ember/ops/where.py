"""``where(cond, x, y)``: pick from ``x`` where ``cond`` is true, else from ``y``."""

from __future__ import annotations

from ..shape import broadcast_shapes
from ..tensor import Tensor, check_same_backend
from ._dispatch import as_tensor, broadcast_to, prepare


def where(condition, x=None, y=None) -> Tensor:
    """Elementwise ``x if condition else y`` with broadcasting; ``x``/``y`` may be scalars.
    With only ``condition``, returns ``nonzero(condition, as_tuple=True)`` like numpy.

    >>> import ember
    >>> ember.where(ember.tensor([True, False]), 1.0, ember.tensor([5.0, 6.0])).tolist()
    [1.0, 6.0]
    """
    if x is None and y is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    cond = as_tensor(condition)
    if not cond.dtype.is_bool:
        cond = cond != 0
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x, y = as_tensor(x, cond), as_tensor(y, cond)  # two scalars: both strong
    check_same_backend("where", cond, *(v for v in (x, y) if isinstance(v, Tensor)))
    a, b = prepare("where", x, y)
    shape = broadcast_shapes(cond.shape, a.shape, op="where")
    a, b, c = (broadcast_to(t, shape, "where") for t in (a, b, cond))
    return Tensor(c.backend.where(c._prim, a._prim, b._prim), c.backend)


def where_method(self: Tensor, condition, other) -> Tensor:
    """``self.where(condition, other)``: self where condition holds, else other (PyTorch)."""
    return where(condition, self, other)
