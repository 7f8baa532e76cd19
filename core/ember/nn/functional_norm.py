"""Normalisation, dropout, linear, and ``pad``/``one_hot`` re-exported from ``ember.ops``."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import ShapeError
from ..ops import state as _state
from ..random import default_generator
from ..tensor import Tensor
from .functional_util import as_input, check_float, reshape, result


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale by
    ``weight`` and shift by ``bias`` (both of ``normalized_shape``, optional).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.layer_norm(ember.tensor([[1.0, 3.0]]), (2,), eps=0.0).tolist()
    [[-1.0, 1.0]]
    """
    op = "layer_norm"
    x = as_input(input, op)
    weight = None if weight is None else as_input(weight, op)
    bias = None if bias is None else as_input(bias, op)
    check_float(op, x, ("weight", weight), ("bias", bias))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or k > x.ndim or x.shape[x.ndim - k :] != shape:
        raise ShapeError(
            f"{op}: normalized_shape {shape} must match the trailing dims of input {x.shape}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise ShapeError(f"{op}: {name} must have shape {shape}, got {t.shape}")
    prim = x.backend.layer_norm(
        x._prim,
        k,
        None if weight is None else weight._prim,
        None if bias is None else bias._prim,
        float(eps),
    )
    return result(x, prim)


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation over dim 1 of (N, C, ...).

    Inference (``training=False``) uses ``running_mean``/``running_var``. With
    ``training=True`` it normalises with the batch statistics and, when running stats are
    given, updates them in place like PyTorch (``(1 - momentum) * old + momentum * new``, the
    variance unbiased).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> x = ember.tensor([[1.0], [3.0]])
    >>> F.batch_norm(x, ember.tensor([2.0]), ember.tensor([1.0]), eps=0.0).tolist()
    [[-1.0], [1.0]]
    """
    op = "batch_norm"
    x = as_input(input, op)
    stats = {
        n: None if t is None else as_input(t, op)
        for n, t in (
            ("running_mean", running_mean),
            ("running_var", running_var),
            ("weight", weight),
            ("bias", bias),
        )
    }
    check_float(op, x, *stats.items())
    if x.ndim < 2:
        raise ShapeError(f"{op}: expected an input (N, C, ...) with at least 2 dims, got {x.shape}")
    c = x.shape[1]
    for name, t in stats.items():
        if t is not None and t.shape != (c,):
            raise ShapeError(
                f"{op}: {name} must have shape ({c},) for input {x.shape}, got {t.shape}"
            )
    b = x.backend
    rm, rv = stats["running_mean"], stats["running_var"]
    if training:
        dims = (0,) + tuple(range(2, x.ndim))
        count = x.numel() // c
        if count <= 1:
            raise ShapeError(
                f"{op}: expected more than 1 value per channel when training, got input {x.shape}"
            )
        mean = b.reshape(b.float_mean(x._prim, dims), (c,))
        var = b.reshape(b.float_var(x._prim, dims, 0), (c,))
        if rm is not None:
            _set_stat(rm, _blend(b, rm._prim, mean, momentum))
        if rv is not None:
            unbiased = b.float_mul(var, b.full((c,), count / (count - 1), x.dtype))
            _set_stat(rv, _blend(b, rv._prim, unbiased, momentum))
    else:
        if rm is None or rv is None:
            raise ValueError(f"{op}: running_mean and running_var are needed when not training")
        mean, var = rm._prim, rv._prim
    w, bb = stats["weight"], stats["bias"]
    prim = b.batch_norm(
        x._prim,
        mean,
        var,
        None if w is None else w._prim,
        None if bb is None else bb._prim,
        float(eps),
    )
    return result(x, prim)


def _set_stat(stat: Tensor, prim) -> None:
    """A running statistic's new value; inside ``ember.jit`` also written in place."""
    _state.assign(stat, Tensor(prim, stat.backend))
    stat._prim = prim


def _blend(b, old, new, momentum: float):
    shape, dtype = tuple(b.shape(old)), b.dtype(old)
    return b.float_add(
        b.float_mul(old, b.full(shape, 1.0 - momentum, dtype)),
        b.float_mul(new, b.full(shape, momentum, dtype)),
    )


def dropout(
    input, p: float = 0.5, training: bool = True, inplace: bool = False, generator=None
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``; the
    identity when not ``training``. Draws from ``generator`` (default: ``ember.seed``'s).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.dropout(ember.ones(4), 0.5, training=False).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    op = "dropout"
    x = as_input(input, op)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: p must be between 0 and 1, got {p}")
    check_float(op, x)
    if not training or p == 0.0:
        return x
    b = x.backend
    if p == 1.0:
        out = b.full(x.shape, 0, x.dtype)
    else:
        seed, offset = (generator or default_generator).take(x.numel())
        u = b.random_uniform(x.shape, dt.float32, seed, offset)
        keep = b.float_le(b.full(x.shape, float(p), dt.float32), u)  # u >= p: kept w.p. 1 - p
        scale = b.full(x.shape, 1.0 / (1.0 - p), x.dtype)
        out = b.where(keep, b.float_mul(x._prim, scale), b.full(x.shape, 0, x.dtype))
    if inplace:
        x._prim = out
        return x
    return result(x, out)


def linear(input, weight, bias=None) -> Tensor:
    """``input @ weight.T + bias`` with ``weight`` (out_features, in_features) like PyTorch.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.linear(ember.ones(2, 3), ember.ones(4, 3), ember.zeros(4)).shape
    (2, 4)
    """
    op = "linear"
    x = as_input(input, op)
    weight = as_input(weight, op)
    bias = None if bias is None else as_input(bias, op)
    check_float(op, x, ("weight", weight), ("bias", bias))
    if weight.ndim != 2:
        raise ShapeError(
            f"{op}: weight must be 2-d (out_features, in_features), got {weight.shape}"
        )
    out_f, in_f = weight.shape
    if x.ndim == 0 or x.shape[-1] != in_f:
        raise ShapeError(
            f"{op}: input {x.shape} and weight {weight.shape} don't align: the input's last "
            f"dim must be in_features={in_f}"
        )
    if bias is not None and bias.shape != (out_f,):
        raise ShapeError(f"{op}: bias must have shape ({out_f},), got {bias.shape}")
    b = x.backend
    rows = x.numel() // in_f if in_f else 0
    flat = b.reshape(x._prim, (rows, in_f))
    y = b.float_matmul(flat, b.permute(weight._prim, (1, 0)))
    if bias is not None:
        y = b.float_add(y, b.expand(b.reshape(bias._prim, (1, out_f)), (rows, out_f)))
    return reshape(result(x, y), x.shape[:-1] + (out_f,))


def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """PyTorch's ``F.pad``: ``pad`` is ``(left, right, top, bottom, ...)``, last dim first
    (``ember.pad``).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.pad(ember.tensor([1.0, 2.0]), (1, 1)).tolist()
    [0.0, 1.0, 2.0, 0.0]
    """
    from ..ops.padding import pad as pad_

    return pad_(input, pad, mode=mode, value=0 if value is None else value)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim (``ember.one_hot``).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.one_hot(ember.tensor([1]), 3).tolist()
    [[0, 1, 0]]
    """
    from ..ops.indexing import one_hot as one_hot_

    return one_hot_(tensor, num_classes)
