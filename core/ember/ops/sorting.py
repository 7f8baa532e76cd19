"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, unique.

Backends sort float and int tensors (``float_sort``/``int_sort``, stable); bool tensors sort
through uint8. NaNs sort last ascending and first descending, as in numpy/PyTorch.

>>> import ember
>>> ember.tensor([3, 1, 2]).sort().values.tolist()
[1, 2, 3]
"""

from __future__ import annotations

from collections import namedtuple

from .. import dtype as dt
from ..errors import ShapeError, TensorIndexError
from ..shape import normalize_dim
from ..contract import families as fam
from ..tensor import Tensor
from ._dispatch import as_tensor, backend_op, wrap
from .shape_ops import flatten, int_tensor, reshape, squeeze

SortResult = namedtuple("sort", ["values", "indices"])
TopKResult = namedtuple("topk", ["values", "indices"])
KthValueResult = namedtuple("kthvalue", ["values", "indices"])
MedianResult = namedtuple("median", ["values", "indices"])


def _sort(x: Tensor, d: int, descending: bool) -> tuple[Tensor, Tensor]:
    """Backend sort along non-negative ``d`` (x has at least one dim)."""
    work = x.astype(dt.uint8) if x.dtype.is_bool else x
    values, indices = backend_op(work, fam.SORT)(work._prim, d, descending)
    return wrap(x, values).astype(x.dtype), wrap(x, indices)


def sort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Sorted values and their int64 indices along ``dim`` (always stable here, so
    ``stable`` is accepted for PyTorch compatibility).

    >>> import ember
    >>> v, i = ember.tensor([[3.0, 1.0, 2.0]]).sort(descending=True)
    >>> v.tolist(), i.tolist()
    ([[3.0, 2.0, 1.0]], [[0, 2, 1]])
    """
    x = as_tensor(self)
    d = normalize_dim(dim, x.ndim, "sort")
    if x.ndim == 0:
        v, i = _sort(reshape(x, 1), 0, descending)
        return SortResult(reshape(v, ()), reshape(i, ()))
    return SortResult(*_sort(x, d, descending))


def argsort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The int64 indices that sort ``self`` along ``dim``.

    >>> import ember
    >>> ember.tensor([3, 1, 2]).argsort().tolist()
    [1, 2, 0]
    >>> ember.tensor([3, 1, 2]).argsort(descending=True).tolist()
    [0, 2, 1]
    """
    return sort(self, dim, descending, stable).indices


def msort(x: Tensor) -> Tensor:
    """Values sorted along dim 0.

    >>> import ember
    >>> ember.msort(ember.tensor([[3, 1], [1, 2]])).tolist()
    [[1, 1], [3, 2]]
    """
    return sort(x, 0).values


def _take(x: Tensor, d: int, start: int, stop: int) -> Tensor:
    ranges = tuple((start, stop, 1) if i == d else (0, s, 1) for i, s in enumerate(x.shape))
    return wrap(x, x.backend.slice(x._prim, ranges))


def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (or smallest) values along ``dim`` and their indices, in order.

    >>> import ember
    >>> ember.tensor([1, 5, 3, 4]).topk(2).values.tolist()
    [5, 4]
    """
    x = as_tensor(self)
    d = normalize_dim(dim, x.ndim, "topk")
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise TensorIndexError(f"topk: k={k} is out of range for dim {d} of size {n}")
    v, i = sort(x, d, descending=largest)
    if x.ndim == 0:
        return TopKResult(v, i)
    return TopKResult(_take(v, d, 0, k), _take(i, d, 0, k))


def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest value (1-based) along ``dim`` and its index.

    >>> import ember
    >>> ember.tensor([4.0, 1.0, 3.0]).kthvalue(2).values.item()
    3.0
    """
    x = as_tensor(self)
    d = normalize_dim(dim, x.ndim, "kthvalue")
    n = x.shape[d] if x.ndim else 1
    if not 1 <= k <= n:
        raise TensorIndexError(f"kthvalue: k={k} is out of range for dim {d} of size {n}")
    if x.ndim == 0:
        return KthValueResult(x, wrap(x, x.backend.full((), 0, dt.int64)))
    v, i = sort(x, d)
    v, i = _take(v, d, k - 1, k), _take(i, d, k - 1, k)
    if not keepdim:
        v, i = squeeze(v, d), squeeze(i, d)
    return KthValueResult(v, i)


def median(self: Tensor, dim: int | None = None, keepdim: bool = False):
    """The lower median (PyTorch): of all elements (a 0-d tensor) when ``dim`` is None, else
    ``(values, indices)`` along ``dim``. A NaN in a slice makes its median NaN.

    >>> import ember
    >>> ember.tensor([4.0, 1.0, 3.0, 2.0]).median().item()
    2.0
    """
    x = as_tensor(self)
    if dim is None:
        if x.numel() == 0:
            raise ShapeError("median: the median of an empty tensor is not defined")
        return median(flatten(x), 0).values.reshape(())
    d = normalize_dim(dim, x.ndim, "median")
    if x.ndim == 0:
        return MedianResult(x, wrap(x, x.backend.full((), 0, dt.int64)))
    n = x.shape[d]
    if n == 0:
        raise ShapeError(f"median: dim {d} of shape {x.shape} is empty")
    v, i = sort(x, d)
    if x.dtype.is_float:
        b = x.backend
        nan_count = wrap(x, b.int_sum(b.cast(b.float_isnan(x._prim), dt.int64), (d,)))
        from .where import where

        pos = where(nan_count > 0, n - nan_count, (n - 1) // 2)  # first NaN if any
        v, i = v.gather(d, pos), i.gather(d, pos)
    else:
        mid = (n - 1) // 2
        v, i = _take(v, d, mid, mid + 1), _take(i, d, mid, mid + 1)
    if not keepdim:
        v, i = squeeze(v, d), squeeze(i, d)
    return MedianResult(v, i)


def unique(self: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None):
    """The distinct values in ascending order (of the flattened tensor, or distinct slices
    along ``dim``); optionally the inverse indices and the counts.

    >>> import ember
    >>> u, inv, cnt = ember.tensor([3, 1, 3, 2]).unique(return_inverse=True, return_counts=True)
    >>> u.tolist(), inv.tolist(), cnt.tolist()
    ([1, 2, 3], [2, 0, 2, 1], [1, 1, 2])
    """
    x = as_tensor(self)
    if dim is not None:
        return _unique_dim(x, dim, return_inverse, return_counts)
    flat = flatten(x) if x.ndim != 1 else x
    n = flat.shape[0]
    b = x.backend
    if n == 0:
        empty = int_tensor([], x)
        out = [flat] + [reshape(empty, x.shape)] * return_inverse + [empty] * return_counts
        return out[0] if len(out) == 1 else tuple(out)
    s, order = sort(flat)
    # a new group starts where a sorted value differs from its predecessor
    starts = s[1:] != s[:-1]
    first = wrap(x, b.full((1,), True, dt.bool_))
    starts = wrap(x, b.cat([first._prim, starts._prim], 0))
    values = s[starts]
    out = [values]
    if return_inverse:
        group = wrap(x, b.int_cumsum(starts.astype(dt.int64)._prim, 0)) - 1
        inverse = wrap(x, b.scatter(b.full((n,), 0, dt.int64), 0, order._prim, group._prim))
        out.append(reshape(inverse, x.shape))
    if return_counts:
        begin = starts.nonzero(as_tuple=True)[0]
        end = wrap(x, b.cat([begin[1:]._prim, b.full((1,), n, dt.int64)], 0))
        out.append(end - begin)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_dim(x: Tensor, dim: int, return_inverse: bool, return_counts: bool):
    """Distinct slices along ``dim``, ordered lexicographically (done on the host)."""
    d = normalize_dim(dim, x.ndim, "unique")
    moved = x.movedim(d, 0)
    n = moved.shape[0]
    rows = moved.reshape(n, -1).tolist() if n else []
    keys = sorted({tuple(r) for r in rows})
    where_of = {k: i for i, k in enumerate(keys)}
    picks = [rows.index(list(k)) for k in keys]
    values = moved.index_select(0, int_tensor(picks, x)).movedim(0, d)
    out = [values]
    if return_inverse:
        out.append(int_tensor([where_of[tuple(r)] for r in rows], x))
    if return_counts:
        counts = [0] * len(keys)
        for r in rows:
            counts[where_of[tuple(r)]] += 1
        out.append(int_tensor(counts, x))
    return out[0] if len(out) == 1 else tuple(out)
