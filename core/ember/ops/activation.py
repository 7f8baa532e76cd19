"""The activations that are also Tensor methods: ``relu``, ``softmax``, ``log_softmax``.

The rest of the activations live in :mod:`ember.nn.functional`, which re-exports these.
"""

from __future__ import annotations

import warnings

from .. import dtype as dt
from ..errors import DTypeError
from ..shape import normalize_dim
from ..tensor import Tensor
from ._dispatch import as_input, check_float, wrap
from .arithmetic import maximum


def relu(input, inplace: bool = False) -> Tensor:
    """``max(x, 0)``; integer tensors stay integer.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.relu(ember.tensor([-1.0, 0.5])).tolist()
    [0.0, 0.5]
    """
    x = as_input(input, "relu")
    if x.dtype.is_int:
        out = maximum(x, 0)
    else:
        check_float("relu", x)
        out = wrap(x, x.backend.relu(x._prim))
    if inplace:
        x._prim = out._prim
        return x
    return out


def _softmax(op: str, input, dim, dtype, fn_name: str) -> Tensor:
    x = as_input(input, op)
    if dim is None:
        # PyTorch's legacy implicit dim, with its warning
        dim = 0 if x.ndim in (0, 1, 3) else 1
        warnings.warn(
            f"{op}: implicit dim is deprecated; pass dim= explicitly (using {dim})", stacklevel=3
        )
    if dtype is not None:
        x = x.astype(dt.as_dtype(dtype))
    if not x.dtype.is_float:
        raise DTypeError(
            f"{op}: needs a floating point input, got {x.dtype}; pass dtype=ember.float32"
        )
    d = normalize_dim(dim, x.ndim, op)
    fn = getattr(x.backend, fn_name)
    if x.ndim == 0:
        return wrap(x, x.backend.reshape(fn(x.backend.reshape(x._prim, (1,)), 0), ()))
    if x.shape[d] == 0:
        return x
    return wrap(x, fn(x._prim, d))


def softmax(input, dim: int | None = None, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (shifted by the max).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.softmax(ember.tensor([[1.0, 1.0]]), dim=1).tolist()
    [[0.5, 0.5]]
    """
    return _softmax("softmax", input, dim, dtype, "softmax")


def log_softmax(input, dim: int | None = None, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim`` without the overflow/underflow of the naive form.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.log_softmax(ember.tensor([0.0, 0.0]), dim=0).exp().tolist()
    [0.5, 0.5]
    """
    return _softmax("log_softmax", input, dim, dtype, "log_softmax")


