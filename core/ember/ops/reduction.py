"""Reductions and scans: sum, mean, max, argmax, var, logsumexp, any/all, cumsum, norm...

Every reduction takes ``dim`` (None for all dims, an int, or a tuple; negative dims count from
the end; ``axis=`` is accepted as numpy's alias) and ``keepdim``. dtypes follow PyTorch:
``sum``/``prod``/``cumsum`` of bool or integer tensors give int64 (uint64 ones uint64, which
int64 can't hold). ``mean``, ``var``, ``std``, ``logsumexp`` and ``norm`` of integer tensors
compute in the default float dtype (PyTorch raises there; Ember takes numpy's habit).

Over an empty dim: ``sum`` is 0, ``prod`` 1, ``mean``/``var`` NaN, ``logsumexp`` -inf,
``any`` False, ``all`` True; ``max``/``min``/``argmax``/``argmin`` raise ShapeError.

>>> import ember
>>> t = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
>>> t.sum(dim=1).tolist(), t.max().item()
([6.0, 5.0], 5.0)
>>> t.max(dim=1).indices.tolist()
[1, 0]
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable

from .. import dtype as dt
from ..errors import DimensionError, ShapeError, UnsupportedOpError
from ..shape import normalize_dim, normalize_dims, numel
from ..contract import families as fam
from ..tensor import Tensor
from ._dispatch import as_tensor, backend_op, full_like_shape
from .arithmetic import maximum, minimum

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "count_nonzero", "cumprod", "cumsum",
    "logsumexp", "max", "mean", "min", "norm", "prod", "std", "sum", "var",
]

# ``t.max(dim=1)`` returns ``(values, indices)`` with field names, like torch.return_types
MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])

Dim = int | tuple[int, ...] | list[int] | None


# ---------------------------------------------------------------- helpers
def _dim(dim, axis, op: str):
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{op}: give either dim or axis, not both")
        return axis
    return dim


def _dims(x: Tensor, dim: Dim, op: str) -> tuple[int, ...]:
    """Sorted non-negative dims; None or an empty tuple mean every dim (PyTorch)."""
    if isinstance(dim, list):
        dim = tuple(dim)
    if isinstance(dim, tuple) and not dim:
        dim = None
    return normalize_dims(dim, x.ndim, op)


def _out_shape(shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _count(x: Tensor, dims: tuple[int, ...]) -> int:
    if x.ndim == 0:
        return 1
    return numel([x.shape[d] for d in dims])


def _reduce(x: Tensor, dims: tuple[int, ...], keepdim: bool, fn: Callable) -> Tensor:
    """Run the backend reduction ``fn(prim, dims)`` (which keeps dims), then drop them.

    A 0-d tensor is reduced as shape (1,), so backends only ever see non-empty ``dims``.
    """
    b = x.backend
    if x.ndim == 0:
        return Tensor(b.reshape(fn(b.reshape(x._prim, (1,)), (0,)), ()), b)
    out = fn(x._prim, dims)
    if not keepdim:
        out = b.reshape(out, _out_shape(x.shape, dims, False))
    return Tensor(out, b)


def _filled(x: Tensor, dims: tuple[int, ...], keepdim: bool, value, dtype: dt.DType) -> Tensor:
    return full_like_shape(x, value, dtype, _out_shape(x.shape, dims, keepdim))


def _to_float(x: Tensor, dtype=None) -> Tensor:
    if dtype is not None:
        return x.astype(dtype)
    return x if x.dtype.is_float else x.astype(dt.default_float)


def _check_nonempty(x: Tensor, dims: tuple[int, ...], op: str) -> None:
    if _count(x, dims) == 0:
        raise ShapeError(
            f"{op}: can't reduce over an empty dim of a tensor of shape {x.shape} (dims "
            f"{dims}): the op has no identity; reduce a non-empty dim or check the input"
        )


# ---------------------------------------------------------------- sums and products
def integer_accumulator(dtype: dt.DType) -> dt.DType:
    """The dtype bool and integer sums, products and scans run in: int64, uint64 for uint64."""
    return dt.uint64 if dtype is dt.uint64 else dt.int64


def _accumulate(op: str, identity: int, input, dim, keepdim, dtype, axis) -> Tensor:
    x = as_tensor(input)
    dims = _dims(x, _dim(dim, axis, op), op)
    if dtype is not None:
        x = x.astype(dtype)
    elif not x.dtype.is_float:
        x = x.astype(integer_accumulator(x.dtype))
    # empty dims reach the backend too (sum → 0, prod → 1 there), so autodiff still links
    # the result to the input
    return _reduce(x, dims, keepdim, backend_op(x, _FAMILIES[op]))


_FAMILIES = {
    "sum": fam.SUM, "prod": fam.PROD, "max": fam.MAX, "min": fam.MIN, "argmax": fam.ARGMAX,
    "argmin": fam.ARGMIN, "cumsum": fam.CUMSUM, "cumprod": fam.CUMPROD, "any": fam.ANY,
    "all": fam.ALL,
}


def sum(input, dim: Dim = None, keepdim: bool = False, *, dtype=None, axis=None) -> Tensor:
    """Sum over ``dim`` (all dims by default); bool/int tensors sum in int64.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).sum(dim=0).tolist()
    [4, 6]
    """
    return _accumulate("sum", 0, input, dim, keepdim, dtype, axis)


def prod(input, dim: Dim = None, keepdim: bool = False, *, dtype=None, axis=None) -> Tensor:
    """Product over ``dim``; bool/int tensors multiply in int64 (wrapping around).

    >>> import ember
    >>> ember.tensor([2.0, 3.0, 4.0]).prod().item()
    24.0
    """
    return _accumulate("prod", 1, input, dim, keepdim, dtype, axis)


def mean(input, dim: Dim = None, keepdim: bool = False, *, dtype=None, axis=None) -> Tensor:
    """Arithmetic mean; integer tensors average in the default float dtype.

    >>> import ember
    >>> ember.tensor([1, 2]).mean().item()
    1.5
    """
    x = _to_float(as_tensor(input), dtype)
    dims = _dims(x, _dim(dim, axis, "mean"), "mean")
    if _count(x, dims) == 0:
        return _filled(x, dims, keepdim, math.nan, x.dtype)
    return _reduce(x, dims, keepdim, x.backend.float_mean)


def _correction(correction, unbiased, op: str) -> float:
    if correction is not None and unbiased is not None:
        raise TypeError(f"{op}: give either correction or unbiased, not both")
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def var(input, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, axis=None) -> Tensor:
    """Variance with Bessel's correction by default (``correction=1``, PyTorch); pass
    ``correction=0`` (or ``unbiased=False``) for the population variance (numpy's default).

    >>> import ember
    >>> ember.tensor([1.0, 2.0, 3.0]).var().item()
    1.0
    """
    if isinstance(dim, bool):  # torch's var(input, unbiased)
        dim, unbiased = None, dim
    corr = _correction(correction, unbiased, "var")
    x = _to_float(as_tensor(input))
    dims = _dims(x, _dim(dim, axis, "var"), "var")
    count = _count(x, dims)
    if count == 0:
        return _filled(x, dims, keepdim, math.nan, x.dtype)
    if count - corr <= 0:
        # no degrees of freedom left: sum of squares / 0 is inf, or NaN where it is 0 (torch)
        pop = _reduce(x, dims, keepdim, lambda p, d: x.backend.float_var(p, d, 0))
        return pop * math.inf
    return _reduce(x, dims, keepdim, lambda p, d: x.backend.float_var(p, d, corr))


def std(input, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, axis=None) -> Tensor:
    """Standard deviation: ``sqrt(var(...))`` with the same arguments.

    >>> import ember
    >>> ember.tensor([2.0, 4.0]).std(correction=0).item()
    1.0
    """
    return var(input, dim, unbiased, keepdim, correction=correction, axis=axis).sqrt()


def logsumexp(input, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` computed without overflow.

    >>> import ember
    >>> round(ember.tensor([1000.0, 1000.0]).logsumexp(0).item(), 3)
    1000.693
    """
    x = _to_float(as_tensor(input))
    dims = _dims(x, dim, "logsumexp")
    if _count(x, dims) == 0:
        return _filled(x, dims, keepdim, -math.inf, x.dtype)
    return _reduce(x, dims, keepdim, x.backend.float_logsumexp)


# ---------------------------------------------------------------- extremes
def _extreme(x: Tensor, dims: tuple[int, ...], keepdim: bool, which: str, op: str) -> Tensor:
    _check_nonempty(x, dims, op)
    if x.dtype.is_bool:  # max of bools is any, min is all
        fn = x.backend.bool_any if which == "max" else x.backend.bool_all
    else:
        fn = backend_op(x, _FAMILIES[which])
    return _reduce(x, dims, keepdim, fn)


def amax(input, dim: Dim = None, keepdim: bool = False, *, axis=None) -> Tensor:
    """Largest value over ``dim`` (one or several dims); NaN propagates.

    >>> import ember
    >>> ember.tensor([[1, 7], [4, 2]]).amax(dim=0).tolist()
    [4, 7]
    """
    x = as_tensor(input)
    return _extreme(x, _dims(x, _dim(dim, axis, "amax"), "amax"), keepdim, "max", "amax")


def amin(input, dim: Dim = None, keepdim: bool = False, *, axis=None) -> Tensor:
    """Smallest value over ``dim`` (one or several dims); NaN propagates.

    >>> import ember
    >>> ember.tensor([[3, 1], [2, 5]]).amin(dim=0).tolist()
    [2, 1]
    """
    x = as_tensor(input)
    return _extreme(x, _dims(x, _dim(dim, axis, "amin"), "amin"), keepdim, "min", "amin")


def _arg(input, dim, keepdim: bool, which: str, op: str) -> Tensor:
    x = as_tensor(input)
    if x.dtype.is_bool:
        x = x.astype(dt.int32)
    fn = backend_op(x, _FAMILIES[f"arg{which}"])
    b = x.backend
    if dim is None:  # an index into the flattened tensor
        flat = Tensor(b.reshape(x._prim, (x.numel(),)), b)
        _check_nonempty(flat, (0,), op)
        out = _reduce(flat, (0,), False, lambda p, d: fn(p, d[0]))
        return Tensor(b.reshape(out._prim, (1,) * x.ndim), b) if keepdim else out
    d = _single_dim(x, dim, op)
    _check_nonempty(x, (d,), op)
    return _reduce(x, (d,), keepdim, lambda p, ds: fn(p, ds[0]))


def _single_dim(x: Tensor, dim, op: str) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        hint = "; use amax/amin to reduce several dims" if op in ("max", "min") else ""
        raise DimensionError(f"{op}: dim must be one int, got {dim!r}{hint}")
    return normalize_dim(dim, x.ndim, op)


def argmax(input, dim: int | None = None, keepdim: bool = False, *, axis=None) -> Tensor:
    """Index (int64) of the first maximum along ``dim``; with ``dim=None`` an index into the
    flattened tensor. NaN counts as the maximum.

    >>> import ember
    >>> ember.tensor([[1, 9], [8, 2]]).argmax().item()
    1
    """
    return _arg(input, _dim(dim, axis, "argmax"), keepdim, "max", "argmax")


def argmin(input, dim: int | None = None, keepdim: bool = False, *, axis=None) -> Tensor:
    """Index (int64) of the first minimum along ``dim`` (flattened when ``dim=None``).

    >>> import ember
    >>> ember.tensor([[3, 1], [2, 5]]).argmin(dim=1).tolist()
    [1, 0]
    """
    return _arg(input, _dim(dim, axis, "argmin"), keepdim, "min", "argmin")


def _max_min(input, dim, keepdim: bool, which: str, axis):
    dim = _dim(dim, axis, which)
    if isinstance(dim, Tensor):  # torch.max(a, b) is the elementwise maximum
        return (maximum if which == "max" else minimum)(input, dim)
    x = as_tensor(input)
    if dim is None:
        return _extreme(x, _dims(x, None, which), False, which, which)
    d = _single_dim(x, dim, which)
    values = _extreme(x, (d,), keepdim, which, which)
    indices = _arg(x, d, keepdim, which, which)
    return (MaxResult if which == "max" else MinResult)(values, indices)


def max(input, dim=None, keepdim: bool = False, *, axis=None):
    """The largest element (0-d tensor); with ``dim`` a named tuple ``(values, indices)``;
    with a tensor argument the elementwise maximum (all as in PyTorch).

    >>> import ember
    >>> t = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
    >>> t.max().item(), t.max(dim=0).values.tolist(), t.max(dim=0).indices.tolist()
    (5.0, [3.0, 5.0], [1, 0])
    """
    return _max_min(input, dim, keepdim, "max", axis)


def min(input, dim=None, keepdim: bool = False, *, axis=None):
    """The smallest element; ``(values, indices)`` with ``dim``; elementwise with a tensor.

    >>> import ember
    >>> x = ember.tensor([[3, 1], [2, 5]])
    >>> x.min().item(), x.min(dim=1).values.tolist(), x.min(dim=1).indices.tolist()
    (1, [1, 2], [1, 0])
    >>> ember.min(x, ember.tensor(2)).tolist()
    [[2, 1], [2, 2]]
    """
    return _max_min(input, dim, keepdim, "min", axis)


# ---------------------------------------------------------------- logic
def _logic(input, dim, keepdim: bool, which: str, empty_value: bool, axis) -> Tensor:
    x = as_tensor(input)
    if not x.dtype.is_bool:
        x = x.astype(dt.bool_)
    dims = _dims(x, _dim(dim, axis, which), which)
    if _count(x, dims) == 0:
        return _filled(x, dims, keepdim, empty_value, dt.bool_)
    return _reduce(x, dims, keepdim, backend_op(x, _FAMILIES[which]))


def any(input, dim: Dim = None, keepdim: bool = False, *, axis=None) -> Tensor:
    """True where any element over ``dim`` is nonzero (False over an empty dim).

    >>> import ember
    >>> ember.tensor([[0, 1], [0, 0]]).any(dim=1).tolist()
    [True, False]
    """
    return _logic(input, dim, keepdim, "any", False, axis)


def all(input, dim: Dim = None, keepdim: bool = False, *, axis=None) -> Tensor:
    """True where every element over ``dim`` is nonzero (True over an empty dim).

    >>> import ember
    >>> ember.tensor([1.0, 2.0]).all().item()
    True
    """
    return _logic(input, dim, keepdim, "all", True, axis)


def count_nonzero(input, dim: Dim = None) -> Tensor:
    """Number of nonzero elements over ``dim`` (int64).

    >>> import ember
    >>> ember.tensor([0, 3, 0, 1]).count_nonzero().item()
    2
    """
    x = as_tensor(input)
    return sum(x != 0, dim)


# ---------------------------------------------------------------- scans
def _scan(op: str, input, dim: int, dtype) -> Tensor:
    x = as_tensor(input)
    if dtype is not None:
        x = x.astype(dtype)
    elif not x.dtype.is_float:
        x = x.astype(integer_accumulator(x.dtype))
    if dim is None:  # numpy's habit: scan the flattened tensor
        x, dim = Tensor(x.backend.reshape(x._prim, (x.numel(),)), x.backend), 0
    d = _single_dim(x, dim, op)
    if x.numel() == 0:
        return x
    fn = backend_op(x, _FAMILIES[op])
    return _reduce(x, (d,), True, lambda p, ds: fn(p, ds[0]))


def cumsum(input, dim: int | None = None, *, dtype=None) -> Tensor:
    """Running sum along ``dim`` (over the flattened tensor when None, as numpy); bool/int
    tensors accumulate in int64.

    >>> import ember
    >>> ember.tensor([1, 2, 3]).cumsum(0).tolist()
    [1, 3, 6]
    """
    return _scan("cumsum", input, dim, dtype)


def cumprod(input, dim: int | None = None, *, dtype=None) -> Tensor:
    """Running product along ``dim`` (flattened when None); bool/int tensors use int64.

    >>> import ember
    >>> ember.tensor([1, 2, 3, 4]).cumprod(dim=0).tolist()
    [1, 2, 6, 24]
    """
    return _scan("cumprod", input, dim, dtype)


# ---------------------------------------------------------------- norms
def norm(input, p: float | str = 2, dim: Dim = None, keepdim: bool = False, *,
         dtype=None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default): ``p`` is any number, ``inf``,
    ``-inf``, 0 (count of nonzeros) or ``'fro'`` (= 2). Like ``torch.linalg.vector_norm``,
    a tuple ``dim`` flattens those dims into one vector.

    >>> import ember
    >>> ember.tensor([3.0, -4.0]).norm().item()
    5.0
    >>> ember.tensor([3.0, -4.0]).norm(p=1).item()
    7.0
    """
    if p == "fro":
        p = 2
    if isinstance(p, str):
        raise UnsupportedOpError(
            f"norm: p={p!r} is not supported; valid: a number, inf, -inf or 'fro'"
        )
    x = _to_float(as_tensor(input), dtype)
    dims = _dims(x, dim, "norm")
    a = x.abs()
    if p == math.inf:
        return _extreme(a, dims, keepdim, "max", "norm")
    if p == -math.inf:
        return _extreme(a, dims, keepdim, "min", "norm")
    if p == 0:
        return sum(x != 0, dims, keepdim).astype(x.dtype)
    if p == 1:
        return sum(a, dims, keepdim)
    if p == 2:
        return sum(a * a, dims, keepdim).sqrt()
    return sum(a**p, dims, keepdim) ** (1.0 / p)
