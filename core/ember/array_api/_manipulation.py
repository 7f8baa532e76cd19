"""Manipulation and indexing functions of the standard (numpy's ``repeat``, not PyTorch's).

>>> import ember.array_api as xp
>>> x = xp.asarray([[1, 2], [3, 4]])
>>> xp.repeat(x, 2, axis=0).tolist(), xp.take(x, xp.asarray([1]), axis=1).tolist()
([[1, 2], [1, 2], [3, 4], [3, 4]], [[2], [4]])
"""

from __future__ import annotations

from .. import dtype as dt
from .. import ops
from ..shape import normalize_dim
from ..tensor import Tensor
from ._common import check_array
from ._statistical import _axes


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The arrays broadcast to their common shape. A Python scalar among them (SciPy passes
    ``n == 2``) becomes an array on the first array's backend.

    >>> import ember.array_api as xp
    >>> [a.shape for a in xp.broadcast_arrays(xp.zeros((2, 1)), xp.zeros(3))]
    [(2, 3), (2, 3)]
    >>> [a.backend.name for a in xp.broadcast_arrays(True, xp.zeros(3, device="python"))]
    ['python', 'python']
    """
    like = next((a for a in arrays if isinstance(a, Tensor)), None)
    if like is not None:
        arrays = [a if isinstance(a, Tensor) else ops.tensor(a, backend=like.backend)
                  for a in arrays]
    return list(ops.broadcast_tensors(*arrays)) if arrays else []


def broadcast_to(x: Tensor, /, shape) -> Tensor:
    """``x`` broadcast to ``shape``.

    >>> import ember.array_api as xp
    >>> xp.broadcast_to(xp.asarray([1, 2]), (2, 2)).tolist()
    [[1, 2], [1, 2]]
    """
    return check_array(x, "broadcast_to").broadcast_to(tuple(shape))


def concat(arrays, /, *, axis: int | None = 0) -> Tensor:
    """Join arrays along an existing ``axis`` (``axis=None``: flattened first).

    >>> import ember.array_api as xp
    >>> xp.concat([xp.asarray([[1]]), xp.asarray([[2]])], axis=1).tolist()
    [[1, 2]]
    """
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    d = arrays[0].dtype
    for a in arrays[1:]:
        d = dt.promote_types(d, a.dtype)
    return ops.cat([a.astype(d) for a in arrays], axis)


def stack(arrays, /, *, axis: int = 0) -> Tensor:
    """Join arrays of one shape along a new ``axis``.

    >>> import ember.array_api as xp
    >>> xp.stack([xp.asarray([1, 2]), xp.asarray([3, 4])], axis=1).tolist()
    [[1, 3], [2, 4]]
    """
    arrays = list(arrays)
    d = arrays[0].dtype
    for a in arrays[1:]:
        d = dt.promote_types(d, a.dtype)
    return ops.stack([a.astype(d) for a in arrays], axis)


def expand_dims(x: Tensor, /, axis=0) -> Tensor:
    """``x`` with a new axis of size 1 at ``axis``.

    >>> import ember.array_api as xp
    >>> xp.expand_dims(xp.zeros((2, 3)), axis=-1).shape
    (2, 3, 1)
    """
    x = check_array(x, "expand_dims")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    n = x.ndim + len(axes)
    where = sorted(normalize_dim(a, n, "expand_dims") for a in axes)
    if len(set(where)) != len(where):
        raise ValueError(f"expand_dims: axis {axis!r} repeats a position")
    shape = list(x.shape)
    for a in where:
        shape.insert(a, 1)
    return x.reshape(tuple(shape))


def flip(x: Tensor, /, *, axis=None) -> Tensor:
    """``x`` reversed along ``axis`` (an int, a tuple, or None for every axis).

    >>> import ember.array_api as xp
    >>> xp.flip(xp.asarray([[1, 2], [3, 4]]), axis=1).tolist()
    [[2, 1], [4, 3]]
    """
    x = check_array(x, "flip")
    axes = _axes(x, axis)
    return x.flip(axes) if axes else x


def moveaxis(x: Tensor, source, destination, /) -> Tensor:
    """``x`` with axes ``source`` moved to positions ``destination``.

    >>> import ember.array_api as xp
    >>> xp.moveaxis(xp.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    return check_array(x, "moveaxis").movedim(source, destination)


def permute_dims(x: Tensor, /, axes) -> Tensor:
    """``x`` with its axes in the order ``axes``.

    >>> import ember.array_api as xp
    >>> xp.permute_dims(xp.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return check_array(x, "permute_dims").permute(tuple(axes))


def reshape(x: Tensor, /, shape, *, copy: bool | None = None) -> Tensor:
    """``x`` with a new ``shape`` (one dim may be -1); ``copy=False`` is honoured (no copy made).

    >>> import ember.array_api as xp
    >>> xp.reshape(xp.arange(6), (2, -1)).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    out = check_array(x, "reshape").reshape(tuple(shape))
    return out.clone() if copy and out is x else out


def roll(x: Tensor, /, shift, *, axis=None) -> Tensor:
    """Elements shifted by ``shift`` along ``axis`` (flattened when None), wrapping around.

    >>> import ember.array_api as xp
    >>> xp.roll(xp.asarray([1, 2, 3, 4]), 1).tolist()
    [4, 1, 2, 3]
    """
    x = check_array(x, "roll")
    if axis is None:
        return x.reshape(-1).roll(shift, 0).reshape(x.shape)
    return x.roll(shift, axis)


def squeeze(x: Tensor, /, axis) -> Tensor:
    """``x`` without the size-1 axes ``axis`` (an error names an axis that isn't size 1).

    >>> import ember.array_api as xp
    >>> xp.squeeze(xp.zeros((1, 3, 1)), axis=(0, 2)).shape
    (3,)
    """
    x = check_array(x, "squeeze")
    axes = _axes(x, axis)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return x.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))


def tile(x: Tensor, repetitions, /) -> Tensor:
    """``x`` repeated ``repetitions`` times along each axis.

    >>> import ember.array_api as xp
    >>> xp.tile(xp.asarray([1, 2]), (2,)).tolist()
    [1, 2, 1, 2]
    """
    x = check_array(x, "tile")
    reps = tuple(repetitions)
    if len(reps) < x.ndim:
        reps = (1,) * (x.ndim - len(reps)) + reps
    return x.tile(reps)


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, as a tuple.

    >>> import ember.array_api as xp
    >>> [a.tolist() for a in xp.unstack(xp.asarray([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    return tuple(check_array(x, "unstack").unbind(axis))


def repeat(x: Tensor, repeats, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (flattened when None).

    >>> import ember.array_api as xp
    >>> xp.repeat(xp.asarray([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    >>> xp.repeat(xp.asarray([1, 2]), xp.asarray([1, 3])).tolist()
    [1, 2, 2, 2]
    """
    x = check_array(x, "repeat")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = normalize_dim(axis, x.ndim, "repeat")
    n = x.shape[axis]
    counts = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    if isinstance(counts, int):
        counts = [counts] * n
    if len(counts) == 1 and n != 1:
        counts = counts * n
    if len(counts) != n or any(c < 0 for c in counts):
        raise ValueError(f"repeat: need {n} non-negative counts along axis {axis}, got {counts}")
    # which source element each output position reads: computed from the counts (host ints)
    index = [i for i, c in enumerate(counts) for _ in range(c)]
    idx = ops.tensor(index, dtype=dt.int64, backend=x.backend)
    return ops.index_select(x, axis, idx)


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements at ``indices`` along ``axis`` (required for arrays of more than one dim).

    >>> import ember.array_api as xp
    >>> xp.take(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1]), axis=1).tolist()
    [[2], [4]]
    """
    x = check_array(x, "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    axis = normalize_dim(axis, x.ndim, "take")
    indices = check_array(indices, "take")
    wrapped = ops.where(indices < 0, indices + x.shape[axis], indices)
    return ops.index_select(x, axis, wrapped.astype(dt.int64))


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """``x``'s elements at ``indices`` along ``axis`` (``indices`` as from ``argsort``).

    >>> import ember.array_api as xp
    >>> x = xp.asarray([[3, 1, 2]])
    >>> xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1).tolist()
    [[1, 2, 3]]
    """
    x = check_array(x, "take_along_axis")
    axis = normalize_dim(axis, x.ndim, "take_along_axis")
    wrapped = ops.where(indices < 0, indices + x.shape[axis], indices)
    return x.take_along_dim(wrapped.astype(dt.int64), axis)
