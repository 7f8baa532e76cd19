"""``where(cond, x, y)``: pick from ``x`` where ``cond`` is true, else from ``y``; and the
indices where a tensor is nonzero (``nonzero``, ``argwhere``, one-argument ``where``)."""

from __future__ import annotations

from ..shape import broadcast_shapes, numel
from ..tensor import Tensor, co_locate
from ._dispatch import as_tensor, broadcast_to, prepare
from .shape_ops import int_tensor, reshape


def where(condition, x=None, y=None) -> Tensor:
    """Elementwise ``x if condition else y`` with broadcasting; ``x``/``y`` may be scalars.
    With only ``condition``, returns ``nonzero(condition, as_tuple=True)`` like numpy.

    >>> import ember
    >>> ember.where(ember.tensor([True, False]), 1.0, ember.tensor([5.0, 6.0])).tolist()
    [1.0, 6.0]
    """
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    cond = as_tensor(condition)
    if not cond.dtype.is_bool:
        cond = cond != 0
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x, y = as_tensor(x, cond), as_tensor(y, cond)  # two scalars: both strong
    cond, x, y = co_locate("where", cond, x, y)
    a, b = prepare("where", x, y)
    shape = broadcast_shapes(cond.shape, a.shape, op="where")
    a, b, c = (broadcast_to(t, shape, "where") for t in (a, b, cond))
    return Tensor(c.backend.where(c._prim, a._prim, b._prim), c.backend)


def where_method(self: Tensor, condition, other) -> Tensor:
    """``self.where(condition, other)``: self where condition holds, else other (PyTorch).

    >>> import ember
    >>> x = ember.tensor([1, -2, 3])
    >>> x.where(x > 0, 0).tolist()
    [1, 0, 3]
    """
    return where(condition, self, other)


def nonzero(self: Tensor, as_tuple: bool = False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or with ``as_tuple`` one
    1-d tensor per dim (numpy's ``nonzero``).

    >>> import ember
    >>> ember.tensor([[0, 1], [2, 0]]).nonzero().tolist()
    [[0, 1], [1, 0]]
    """
    data = self.to_data()
    shape = self.shape
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        coords = np.nonzero(data.to_numpy().reshape(shape or (1,)))
        coords = [c.astype(np.int64).tolist() for c in coords] if shape else []
        n = int(np.count_nonzero(data.to_numpy()))
    else:
        flat = [i for i, v in enumerate(data.values()) if v]
        n = len(flat)
        coords = []
        stride = numel(shape)
        for s in shape:
            stride //= s
            coords.append([(i // stride) % s for i in flat])
    if as_tuple:
        if not shape:
            return (int_tensor([0] * n, self),)
        return tuple(int_tensor(c, self) for c in coords)
    ndim = len(shape)
    rows = [v for i in range(n) for v in (c[i] for c in coords)]
    return reshape(int_tensor(rows, self), (n, ndim))


def argwhere(x: Tensor) -> Tensor:
    """numpy's ``argwhere``: ``nonzero(x)`` as an (n, ndim) tensor.

    >>> import ember
    >>> ember.argwhere(ember.tensor([[0, 1], [1, 0]])).tolist()
    [[0, 1], [1, 0]]
    """
    return nonzero(x)
