"""Statistical and utility functions: reductions over an ``axis`` (an int, a tuple, or None
for all), ``keepdims``, and the standard's accumulation dtypes (signed integer sums and products in
int64, the default integer type; unsigned ones in uint64 where the backend holds it).

>>> import ember.array_api as xp
>>> x = xp.asarray([[1, 2], [3, 4]], dtype=xp.int32)
>>> xp.sum(x, axis=0).tolist(), xp.sum(x).dtype, xp.cumulative_sum(x, axis=1, include_initial=True).tolist()
([4, 6], ember.int64, [[0, 1, 3], [0, 3, 7]])
"""

from __future__ import annotations

from .. import dtype as dt
from .. import ops
from ..shape import normalize_dim
from ..tensor import Tensor
from ._common import check_array, require


def _axes(x: Tensor, axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = tuple(normalize_dim(a, x.ndim, "axis") for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis!r} repeats a dimension")
    return out


def _reduce(fn, x: Tensor, axis, keepdims: bool, name: str, **kw) -> Tensor:
    x = check_array(x, name)
    axes = _axes(x, axis)
    if not axes:  # the standard's axis=(): no dimension reduced
        return x
    if x.ndim == 0:
        return fn(x.reshape(1), dim=0, keepdim=False, **kw)
    return fn(x, dim=axes, keepdim=keepdims, **kw)


def _accumulator(x: Tensor, dtype) -> dt.DType:
    # the standard's: signed integers and bool in the default int, unsigned in uint64 (where
    # the backend holds it)
    if dtype is not None:
        return dt.as_dtype(dtype)
    if x.dtype.kind == "u" and dt.uint64 in x.backend.caps.dtypes:
        return dt.uint64
    return dt.default_int if (x.dtype.is_int or x.dtype.is_bool) else x.dtype


def max(x: Tensor, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """The largest value along ``axis`` (all when None); NaN propagates.

    >>> import ember.array_api as xp
    >>> xp.max(xp.asarray([[1, 5], [3, 2]]), axis=0).tolist()
    [3, 5]
    """
    return _reduce(ops.amax, x, axis, keepdims, "max")


def min(x: Tensor, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """The smallest value along ``axis`` (all when None); NaN propagates.

    >>> import ember.array_api as xp
    >>> xp.min(xp.asarray([[1, 5], [3, 2]]), axis=1).tolist()
    [1, 2]
    """
    return _reduce(ops.amin, x, axis, keepdims, "min")


def sum(x: Tensor, /, *, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    """The sum along ``axis`` (all when None); integers sum in int64 unless ``dtype`` is given.

    >>> import ember.array_api as xp
    >>> xp.sum(xp.asarray([[1, 2], [3, 4]]), axis=0).tolist(), xp.sum(xp.asarray([1.5, 2.5])).item()
    ([4, 6], 4.0)
    """
    x = check_array(x, "sum")
    d = _accumulator(x, dtype)
    return _reduce(ops.sum, x.astype(d), axis, keepdims, "sum").astype(d)


def prod(x: Tensor, /, *, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    """The product along ``axis`` (all when None).

    >>> import ember.array_api as xp
    >>> xp.prod(xp.asarray([1, 2, 3, 4])).item()
    24
    """
    x = check_array(x, "prod")
    d = _accumulator(x, dtype)
    return _reduce(ops.prod, x.astype(d), axis, keepdims, "prod").astype(d)


def mean(x: Tensor, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean along ``axis`` (float arrays).

    >>> import ember.array_api as xp
    >>> xp.mean(xp.asarray([[1.0, 2.0], [3.0, 5.0]]), axis=1).tolist()
    [1.5, 4.0]
    """
    require(check_array(x, "mean"), "mean", "f")
    return _reduce(ops.mean, x, axis, keepdims, "mean")


def var(x: Tensor, /, *, axis=None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """The variance along ``axis``, dividing by ``N - correction`` (0: the population variance).

    >>> import ember.array_api as xp
    >>> x = xp.asarray([1.0, 2.0, 3.0, 4.0])
    >>> xp.var(x).item(), round(xp.var(x, correction=1).item(), 4)
    (1.25, 1.6667)
    """
    require(check_array(x, "var"), "var", "f")
    return _reduce(ops.var, x, axis, keepdims, "var", correction=correction)


def std(x: Tensor, /, *, axis=None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """The standard deviation along ``axis``, dividing by ``N - correction``.

    >>> import ember.array_api as xp
    >>> xp.std(xp.asarray([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])).item()
    2.0
    """
    require(check_array(x, "std"), "std", "f")
    return _reduce(ops.std, x, axis, keepdims, "std", correction=correction)


def all(x: Tensor, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Whether every element along ``axis`` is true (non-zero).

    >>> import ember.array_api as xp
    >>> xp.all(xp.asarray([[True, False], [True, True]]), axis=1).tolist()
    [False, True]
    """
    x = check_array(x, "all")
    return _reduce(ops.all, x != 0 if not x.dtype.is_bool else x, axis, keepdims, "all")


def any(x: Tensor, /, *, axis=None, keepdims: bool = False) -> Tensor:
    """Whether any element along ``axis`` is true (non-zero).

    >>> import ember.array_api as xp
    >>> xp.any(xp.asarray([[0, 0], [0, 3]]), axis=1).tolist()
    [False, True]
    """
    x = check_array(x, "any")
    return _reduce(ops.any, x != 0 if not x.dtype.is_bool else x, axis, keepdims, "any")


def _cumulative(fn, name: str, x: Tensor, axis, dtype, include_initial: bool, initial):
    x = check_array(x, name)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis is required for arrays of more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{name}: expected an array of at least one dimension")
    d = _accumulator(x, dtype)
    axis = normalize_dim(axis, x.ndim, name)
    x = x.astype(d)
    out = fn(x, axis, dtype=d) if x.shape[axis] else x
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = ops.cat([ops.full(tuple(shape), initial, dtype=d, backend=x.backend), out], axis)
    return out


def cumulative_sum(x: Tensor, /, *, axis=None, dtype=None, include_initial: bool = False):
    """Running sums along ``axis``; ``include_initial=True`` starts with 0.

    >>> import ember.array_api as xp
    >>> xp.cumulative_sum(xp.asarray([1, 2, 3]), include_initial=True).tolist()
    [0, 1, 3, 6]
    """
    return _cumulative(ops.cumsum, "cumulative_sum", x, axis, dtype, include_initial, 0)


def cumulative_prod(x: Tensor, /, *, axis=None, dtype=None, include_initial: bool = False):
    """Running products along ``axis``; ``include_initial=True`` starts with 1.

    >>> import ember.array_api as xp
    >>> xp.cumulative_prod(xp.asarray([1, 2, 3, 4])).tolist()
    [1, 2, 6, 24]
    """
    return _cumulative(ops.cumprod, "cumulative_prod", x, axis, dtype, include_initial, 1)


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> Tensor:
    """The ``n``-th discrete difference along ``axis``, after ``prepend``/``append``.

    >>> import ember.array_api as xp
    >>> squares = xp.asarray([1, 4, 9, 16])
    >>> xp.diff(squares).tolist(), xp.diff(squares, n=2).tolist()
    ([3, 5, 7], [2, 2])
    """
    x = check_array(x, "diff")
    axis = normalize_dim(axis, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = ops.cat(parts, axis)
    for _ in range(n):
        size = x.shape[axis]
        x = ops.narrow(x, axis, 1, size - 1) - ops.narrow(x, axis, 0, size - 1)
    return x
