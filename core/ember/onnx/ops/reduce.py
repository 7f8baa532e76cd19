"""Reductions (ReduceSum ... ReduceLogSumExp) and ArgMax/ArgMin."""

from __future__ import annotations

import ember

from . import op
from ._util import axes as _axes
from ._util import axis as _axis
from ._util import ints, like


def _reduce(fn, empty=None):
    def run(ctx, x, axes_in=None, axes=None, keepdims=1, noop_with_empty_axes=0):
        dims = ints(axes_in) if axes_in is not None else (axes or [])
        if not dims:
            if noop_with_empty_axes:
                return x
            dims = list(range(x.ndim))
        dims = _axes(dims, x.ndim)
        if x.numel() == 0 and empty is not None:
            shape = [1 if i in dims else s for i, s in enumerate(x.shape)] if keepdims else [
                s for i, s in enumerate(x.shape) if i not in dims]
            fill = (empty > 0) if x.dtype.is_bool else empty
            return ember.full(shape, fill, dtype=x.dtype, backend=x.backend)
        if not dims:
            return x
        return fn(x, tuple(dims), bool(keepdims))

    return run


def _lse(x, d, k):
    return ember.logsumexp(x, dim=d, keepdim=k)


_INF = float("inf")
for _name, _fn, _empty in [
    ("ReduceSum", lambda x, d, k: ember.sum(x, dim=d, keepdim=k).astype(x.dtype), 0),
    ("ReduceMean", lambda x, d, k: ember.mean(x, dim=d, keepdim=k), None),
    ("ReduceMax", lambda x, d, k: ember.amax(x, dim=d, keepdim=k), -_INF),
    ("ReduceMin", lambda x, d, k: ember.amin(x, dim=d, keepdim=k), _INF),
    ("ReduceProd", lambda x, d, k: ember.prod(x, dim=d, keepdim=k).astype(x.dtype), 1),
    ("ReduceL1", lambda x, d, k: ember.sum(ember.abs(x), dim=d, keepdim=k).astype(x.dtype), 0),
    ("ReduceL2", lambda x, d, k: ember.sqrt(ember.sum(x * x, dim=d, keepdim=k)).astype(
        x.dtype), 0),
    ("ReduceSumSquare", lambda x, d, k: ember.sum(x * x, dim=d, keepdim=k).astype(x.dtype), 0),
    ("ReduceLogSum", lambda x, d, k: ember.log(ember.sum(x, dim=d, keepdim=k)), -_INF),
    ("ReduceLogSumExp", _lse, -_INF),
]:
    op(_name)(_reduce(_fn, _empty))


def _arg(largest):
    def run(ctx, x, axis=0, keepdims=1, select_last_index=0):
        a = _axis(axis, x.ndim)
        if select_last_index:
            n = x.shape[a]
            flipped = ember.flip(x, [a])
            i = (ember.argmax if largest else ember.argmin)(flipped, dim=a, keepdim=bool(keepdims))
            return (n - 1) - i
        return (ember.argmax if largest else ember.argmin)(x, dim=a, keepdim=bool(keepdims))

    return run


op("ArgMax")(_arg(True))
op("ArgMin")(_arg(False))
del like
