"""Activations and softmax (PyTorch's names; ``hard_sigmoid``/``hard_swish`` are aliases of
``hardsigmoid``/``hardswish``). ``relu``, ``softmax`` and ``log_softmax`` are also Tensor
methods, so they live in :mod:`ember.ops.activation` (below nn) and are re-exported here."""

from __future__ import annotations


from ..ops.activation import log_softmax, relu, softmax  # noqa: F401 (re-exported)
from ..tensor import Tensor
from .functional_util import as_input, check_float, default_float_like, result


def _apply(op: str, input, fn, inplace: bool = False) -> Tensor:
    """Run ``fn(backend, prim)`` on a float input; ``inplace`` rebinds the input's value."""
    x = as_input(input, op)
    check_float(op, x)
    out = result(x, fn(x.backend, x._prim))
    if inplace:
        x._prim = out._prim
        return x
    return out


def relu6(input, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.relu6(ember.tensor([-1.0, 7.0])).tolist()
    [0.0, 6.0]
    """
    return _apply("relu6", input, lambda b, p: b.relu6(p), inplace)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x if x > 0 else negative_slope * x``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.leaky_relu(ember.tensor([-2.0, 1.0]), 0.5).tolist()
    [-1.0, 1.0]
    """
    return _apply("leaky_relu", input, lambda b, p: b.leaky_relu(p, float(negative_slope)), inplace)


def elu(input, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x if x > 0 else alpha * (exp(x) - 1)``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.elu(ember.tensor([0.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return _apply("elu", input, lambda b, p: b.elu(p, float(alpha)), inplace)


def gelu(input, approximate: str = "none") -> Tensor:
    """``x * Φ(x)`` (exact erf) or PyTorch's ``approximate='tanh'`` form.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> round(F.gelu(ember.tensor([1.0])).item(), 4)
    0.8413
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _apply("gelu", input, lambda b, p: b.gelu(p, approximate))


def silu(input, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (a.k.a. swish).

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.silu(ember.tensor([0.0])).tolist()
    [0.0]
    """
    return _apply("silu", input, lambda b, p: b.silu(p), inplace)


def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> round(F.softplus(ember.tensor([0.0])).item(), 4)
    0.6931
    """
    return _apply("softplus", input, lambda b, p: b.softplus(p, float(beta), float(threshold)))


def hardsigmoid(input, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.hardsigmoid(ember.tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return _apply("hardsigmoid", input, lambda b, p: b.hard_sigmoid(p), inplace)


def hardswish(input, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.hardswish(ember.tensor([-4.0, 4.0])).tolist()
    [-0.0, 4.0]
    """
    return _apply("hardswish", input, lambda b, p: b.hard_swish(p), inplace)


hard_sigmoid = hardsigmoid
hard_swish = hardswish


def mish(input, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.mish(ember.tensor([0.0])).tolist()
    [0.0]
    """
    return _apply("mish", input, lambda b, p: b.mish(p), inplace)


def sigmoid(input) -> Tensor:
    """``1 / (1 + exp(-x))``; integer inputs give the default float dtype.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.sigmoid(ember.tensor([0.0])).tolist()
    [0.5]
    """
    x = default_float_like(as_input(input, "sigmoid"))
    return result(x, x.backend.float_sigmoid(x._prim))


def tanh(input) -> Tensor:
    """Hyperbolic tangent; integer inputs give the default float dtype.

    >>> import ember
    >>> from ember.nn import functional as F
    >>> F.tanh(ember.tensor([0.0])).tolist()
    [0.0]
    """
    x = default_float_like(as_input(input, "tanh"))
    return result(x, x.backend.float_tanh(x._prim))
