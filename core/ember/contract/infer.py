"""Shape and dtype rules: an op's result :class:`Spec` from its inputs', without running it.

Each rule takes the op's arguments with a ``Spec`` in place of every tensor and returns the
result's ``Spec`` (a tuple of them for ops with several results). The graph compiler and
Fusion plan buffers with these; a test checks every rule against real results.
"""

from __future__ import annotations

from .. import dtype as dt
from .registry import Spec


def same(x: Spec, *rest) -> Spec:
    """The first input's shape and dtype: elementwise ops (binary ones get equal operands),
    scans, and ops that write into a copy of their first input (slice_assign, scatter)."""
    return Spec(tuple(x.shape), x.dtype)


def to_bool(x: Spec, *rest) -> Spec:
    """Comparisons and predicates: the input's shape, bool."""
    return Spec(tuple(x.shape), dt.bool_)


def where(cond: Spec, a: Spec, b: Spec) -> Spec:
    return Spec(tuple(a.shape), a.dtype)


def cast(x: Spec, dtype) -> Spec:
    return Spec(tuple(x.shape), dtype)


def reduce_kept(x: Spec, dims: tuple[int, ...], *params) -> Spec:
    """A reduction over ``dims``, which stay as size 1."""
    return Spec(tuple(1 if d in dims else s for d, s in enumerate(x.shape)), x.dtype)


def arg_reduce(x: Spec, dim: int) -> Spec:
    return Spec(tuple(1 if d == dim else s for d, s in enumerate(x.shape)), dt.int64)


def sort(x: Spec, dim: int, descending: bool) -> tuple[Spec, Spec]:
    return Spec(tuple(x.shape), x.dtype), Spec(tuple(x.shape), dt.int64)


def matmul(a: Spec, b: Spec) -> Spec:
    return Spec(tuple(a.shape[:-1]) + (b.shape[-1],), a.dtype)


def reshape(x: Spec, shape: tuple[int, ...]) -> Spec:
    return Spec(tuple(shape), x.dtype)


def permute(x: Spec, axes: tuple[int, ...]) -> Spec:
    return Spec(tuple(x.shape[a] for a in axes), x.dtype)


def slice_(x: Spec, ranges) -> Spec:
    return Spec(tuple(len(range(*r)) for r in ranges), x.dtype)


def cat(xs: list[Spec], dim: int) -> Spec:
    shape = list(xs[0].shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    return Spec(tuple(shape), xs[0].dtype)


def gather(x: Spec, dim: int, index: Spec) -> Spec:
    return Spec(tuple(index.shape), x.dtype)


def index_select(x: Spec, dim: int, index: Spec) -> Spec:
    shape = list(x.shape)
    shape[dim] = index.shape[0]
    return Spec(tuple(shape), x.dtype)


def full(shape: tuple[int, ...], value, dtype) -> Spec:
    return Spec(tuple(shape), dtype)


def arange(n: int, dtype) -> Spec:
    return Spec((n,), dtype)


def random_uniform(shape: tuple[int, ...], dtype, seed: int, offset: int) -> Spec:
    return Spec(tuple(shape), dtype)


def from_data(data) -> Spec:
    return Spec(tuple(data.shape), data.dtype)


def metadata(*args) -> None:
    """``to_data``, ``shape`` and ``dtype`` make no tensor."""
    return None
