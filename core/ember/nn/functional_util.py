"""Argument checking shared by the ``ember.nn.functional`` modules (PyTorch's conventions,
Ember's error messages)."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import ShapeError
from ..ops._dispatch import as_input, check_float  # noqa: F401 (shared with ops/)
from ..tensor import Tensor


def ints(op: str, name: str, value, n: int, minimum: int | None = None) -> tuple[int, ...]:
    """An int or a length-``n`` sequence of ints as an ``n``-tuple (PyTorch's ``_pair``)."""
    if isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    if isinstance(value, int):
        out = (value,) * n
    else:
        try:
            out = tuple(value)
        except TypeError:
            raise TypeError(
                f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}"
            ) from None
        if len(out) == 1:
            out = out * n
        if len(out) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in out):
            raise ShapeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in out):
        raise ShapeError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def reshape(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    return Tensor(t.backend.reshape(t._prim, tuple(shape)), t.backend)


def batched(op: str, x: Tensor, nd: int, allow_unbatched: bool = True) -> tuple[Tensor, bool]:
    """``x`` as (N, C, *spatial) with ``nd`` spatial dims; a (C, *spatial) input gets a batch
    dim of 1 (returns True so the caller removes it again)."""
    if x.ndim == nd + 2:
        return x, False
    if allow_unbatched and x.ndim == nd + 1:
        return reshape(x, (1,) + x.shape), True
    expected = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}.get(
        nd, f"(N, C, *{nd} spatial dims)"
    )
    also = f" or {nd + 1}-d (C, ...)" if allow_unbatched else ""
    raise ShapeError(f"{op}: expected a {nd + 2}-d input {expected}{also}, got shape {x.shape}")


def unbatch(y: Tensor, was_unbatched: bool) -> Tensor:
    return reshape(y, y.shape[1:]) if was_unbatched else y


def result(x: Tensor, prim) -> Tensor:
    return Tensor(prim, x.backend)


def default_float_like(x: Tensor) -> Tensor:
    """Integer/bool inputs of ops that promote (sigmoid, tanh) become the default float."""
    return x if x.dtype.is_float else x.astype(dt.default_float)
