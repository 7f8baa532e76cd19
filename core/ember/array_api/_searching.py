"""Searching, sorting and set functions.

Set functions have data-dependent shapes, so they read the values and work on the host
(exactly as the standard asks: every NaN is its own unique value), writing the results back
to the array's backend.

>>> import ember.array_api as xp
>>> r = xp.unique_counts(xp.asarray([3, 1, 3, 3]))
>>> r.values.tolist(), r.counts.tolist()
([1, 3], [1, 3])
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .. import dtype as dt
from .. import ops
from ..shape import normalize_dim
from ..tensor import Tensor
from ..tensordata import TensorData
from ._common import check_array, lift, pair
from ._statistical import _axes


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first maximum along ``axis`` (flattened when None).

    >>> import ember.array_api as xp
    >>> xp.argmax(xp.asarray([[1, 9], [7, 2]]), axis=1).tolist()
    [1, 0]
    """
    x = check_array(x, "argmax")
    if axis is None:
        out = ops.argmax(x.reshape(-1), 0)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return ops.argmax(x, axis, keepdims)


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first minimum along ``axis`` (flattened when None).

    >>> import ember.array_api as xp
    >>> xp.argmin(xp.asarray([[1, 9], [7, 2]]), axis=0).tolist()
    [0, 1]
    """
    x = check_array(x, "argmin")
    if axis is None:
        out = ops.argmin(x.reshape(-1), 0)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return ops.argmin(x, axis, keepdims)


def count_nonzero(x: Tensor, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """The number of non-zero elements along ``axis`` (all when None).

    >>> import ember.array_api as xp
    >>> xp.count_nonzero(xp.asarray([[0, 1], [2, 3]]), axis=1).tolist()
    [1, 2]
    """
    x = check_array(x, "count_nonzero")
    axes = _axes(x, axis)
    nz = (x != 0).astype(dt.int64)
    if not axes:
        return nz
    return ops.sum(nz, dim=axes, keepdim=keepdims) if x.ndim else nz.reshape(())


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the non-zero elements, one int64 array per axis.

    >>> import ember.array_api as xp
    >>> [a.tolist() for a in xp.nonzero(xp.asarray([[0, 1], [2, 0]]))]
    [[0, 1], [1, 0]]
    """
    x = check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no dimension to index; reshape it to 1-d")
    return tuple(ops.nonzero(x, as_tuple=True))


def where(condition: Tensor, x1, x2, /) -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast together).

    >>> import ember.array_api as xp
    >>> xp.where(xp.asarray([True, False]), xp.asarray([1, 2]), 0).tolist()
    [1, 0]
    """
    condition = check_array(condition, "where")
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        raise TypeError("where: at least one of x1, x2 must be an array")
    a, b = pair(x1, x2, "where")
    d = dt.promote_types(a.dtype, b.dtype)
    return ops.where(condition, a.astype(d), b.astype(d))


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left", sorter=None) -> Tensor:
    """Insertion points of ``x2`` in the sorted 1-D ``x1``: a count of the smaller (left)
    or not larger (right) elements, one broadcast comparison on the backend.

    >>> import ember.array_api as xp
    >>> edges = xp.asarray([1.0, 2.0, 3.0])
    >>> xp.searchsorted(edges, xp.asarray([2.0, 2.5])).tolist()
    [1, 2]
    >>> xp.searchsorted(edges, xp.asarray([2.0]), side="right").tolist()
    [2]
    """
    x1 = check_array(x1, "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-d, got shape {x1.shape}")
    if sorter is not None:
        x1 = ops.index_select(x1, 0, sorter.astype(dt.int64))
    x2 = lift(x2, x1, "searchsorted")
    cols = x2.reshape(x2.shape + (1,))
    before = (x1 < cols) if side == "left" else (x1 <= cols)
    return ops.sum(before.astype(dt.int64), dim=-1)


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True):
    """``x`` sorted along ``axis`` (stable by default; ``descending=True`` reverses).

    >>> import ember.array_api as xp
    >>> x = xp.asarray([3, 1, 2])
    >>> xp.sort(x).tolist(), xp.sort(x, descending=True).tolist()
    ([1, 2, 3], [3, 2, 1])
    """
    x = check_array(x, "sort")
    return ops.sort(x, axis, descending=descending, stable=stable).values


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True):
    """The int64 indices that sort ``x`` along ``axis`` (stable by default).

    >>> import ember.array_api as xp
    >>> xp.argsort(xp.asarray([3, 1, 2])).tolist()
    [1, 2, 0]
    """
    x = check_array(x, "argsort")
    if descending and x.ndim:
        # a stable descending sort keeps equal elements in their original order: sort the
        # reversed array ascending-stable backwards, then map positions back
        axis = normalize_dim(axis, x.ndim, "argsort")
        n = x.shape[axis]
        rev = ops.argsort(x.flip(axis), axis).flip(axis)
        return (n - 1) - rev
    return ops.argsort(x, axis, descending=descending, stable=stable)


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(x: Tensor):
    """(sorted unique values, first index, inverse, counts) as host lists."""
    flat = x.to_data().values()
    order = sorted(range(len(flat)), key=lambda i: (_is_nan(flat[i]), flat[i] if not
                                                     _is_nan(flat[i]) else 0, i))
    values, first, counts = [], [], []
    inverse = [0] * len(flat)
    for i in order:
        v = flat[i]
        if values and not _is_nan(v) and values[-1] == v:
            counts[-1] += 1
        else:
            values.append(v)
            first.append(i)
            counts.append(1)
        inverse[i] = len(values) - 1
    return values, first, inverse, counts


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _array(values, shape, d: dt.DType, like: Tensor) -> Tensor:
    b = like.backend
    return Tensor(b.from_data(TensorData.from_values(values, shape, d)), b)


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """Unique values with, for each, its first index, the inverse map and its count.

    >>> import ember.array_api as xp
    >>> r = xp.unique_all(xp.asarray([3, 1, 3, 2]))
    >>> r.values.tolist(), r.indices.tolist(), r.inverse_indices.tolist(), r.counts.tolist()
    ([1, 2, 3], [1, 3, 0], [2, 0, 2, 1], [1, 1, 2])
    """
    x = check_array(x, "unique_all")
    values, first, inverse, counts = _unique(x)
    n = len(values)
    return UniqueAllResult(_array(values, (n,), x.dtype, x), _array(first, (n,), dt.int64, x),
                           _array(inverse, x.shape, dt.int64, x), _array(counts, (n,), dt.int64, x))


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """Unique values and how often each occurs.

    >>> import ember.array_api as xp
    >>> r = xp.unique_counts(xp.asarray([3, 1, 3]))
    >>> r.values.tolist(), r.counts.tolist()
    ([1, 3], [1, 2])
    """
    r = unique_all(x)
    return UniqueCountsResult(r.values, r.counts)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """Unique values and, per element of ``x``, the index of its value among them.

    >>> import ember.array_api as xp
    >>> r = xp.unique_inverse(xp.asarray([3, 1, 3]))
    >>> r.values.tolist(), r.inverse_indices.tolist()
    ([1, 3], [1, 0, 1])
    """
    r = unique_all(x)
    return UniqueInverseResult(r.values, r.inverse_indices)


def unique_values(x: Tensor, /) -> Tensor:
    """The unique values of ``x``, sorted.

    >>> import ember.array_api as xp
    >>> xp.unique_values(xp.asarray([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    return unique_all(x).values

