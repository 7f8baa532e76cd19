"""Elementwise math: exp/log, trigonometry, rounding, NaN tests and clamping.

Float-only functions (``exp``, ``sin``, ``sqrt``...) on integer or bool tensors compute in the
default float dtype, as PyTorch does. Rounding, ``abs`` and ``sign`` keep integer dtypes.

>>> import ember
>>> ember.tensor([0.0, 2.0]).sqrt().tolist()
[0.0, 1.4142135381698608]
>>> ember.tensor([-2, 3]).abs().tolist()
[2, 3]
"""

from __future__ import annotations

import math as _m
import sys

from .. import dtype as dt
from ..contract import families as fam
from ..errors import DTypeError
from ..tensor import Tensor
from ._dispatch import as_tensor, binary, full_like_shape, result_dtype, unary, wrap
from .where import where

__all__ = [
    "abs",
    "absolute",
    "acos",
    "arccos",
    "arcsin",
    "arctan",
    "arctan2",
    "asin",
    "atan",
    "atan2",
    "ceil",
    "clamp",
    "clip",
    "cos",
    "cosh",
    "erf",
    "exp",
    "expm1",
    "floor",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log1p",
    "log2",
    "log10",
    "nan_to_num",
    "reciprocal",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
]


FLOAT_FUNCTIONS: dict = {}  # name -> function; each is a Tensor method too (tensor_methods)


def _float_unary(name: str, doc: str):
    """``ember.<name>``: the float-only elementwise op ``float_<name>`` of the contract
    (integer and bool inputs compute in the default float)."""

    def fn(input: Tensor) -> Tensor:
        return unary(family, input)

    family = fam.FLOAT_UNARY[name]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    FLOAT_FUNCTIONS[name] = fn
    return fn


exp = _float_unary(
    "exp", "``e ** x``.\n\n>>> import ember\n>>> ember.exp(ember.zeros(1)).tolist()\n[1.0]"
)
expm1 = _float_unary(
    "expm1",
    "``exp(x) - 1``, accurate for small ``x``."
    "\n\n>>> import ember\n"
    ">>> ember.expm1(ember.tensor([0.0, 1e-10], dtype=ember.float64)).tolist()\n"
    "[0.0, 1.00000000005e-10]",
)
log = _float_unary(
    "log",
    "Natural log: log(0) = -inf, log(x < 0) = NaN."
    "\n\n>>> import ember\n"
    ">>> ember.log(ember.tensor([1.0, 0.0, -1.0])).tolist()\n"
    "[0.0, -inf, nan]",
)
log1p = _float_unary(
    "log1p",
    "``log(1 + x)``, accurate for small ``x``."
    "\n\n>>> import ember\n"
    ">>> ember.log1p(ember.tensor([0.0, 1e-10], dtype=ember.float64)).tolist()\n"
    "[0.0, 9.999999999500001e-11]",
)
log2 = _float_unary(
    "log2",
    "Base-2 log."
    "\n\n>>> import ember\n"
    ">>> ember.log2(ember.tensor([1.0, 8.0])).tolist()\n"
    "[0.0, 3.0]",
)
sqrt = _float_unary(
    "sqrt",
    "Square root (NaN for negative inputs)."
    "\n\n>>> import ember\n"
    ">>> ember.sqrt(ember.tensor([4, 9])).tolist()\n"
    "[2.0, 3.0]",
)
rsqrt = _float_unary(
    "rsqrt",
    "``1 / sqrt(x)``."
    "\n\n>>> import ember\n"
    ">>> ember.rsqrt(ember.tensor([4.0, 0.25])).tolist()\n"
    "[0.5, 2.0]",
)
sin = _float_unary(
    "sin",
    "Sine (radians)."
    "\n\n>>> import ember, math\n"
    ">>> ember.sin(ember.tensor([0.0, math.pi / 2], dtype=ember.float64)).tolist()\n"
    "[0.0, 1.0]",
)
cos = _float_unary(
    "cos",
    "Cosine (radians)."
    "\n\n>>> import ember, math\n"
    ">>> ember.cos(ember.tensor([0.0, math.pi], dtype=ember.float64)).tolist()\n"
    "[1.0, -1.0]",
)
tan = _float_unary(
    "tan",
    "Tangent (radians)."
    "\n\n>>> import ember, math\n"
    ">>> ember.tan(ember.tensor([0.0, math.pi / 4], dtype=ember.float64)).tolist()\n"
    "[0.0, 0.9999999999999999]",
)
tanh = _float_unary(
    "tanh",
    "Hyperbolic tangent."
    "\n\n>>> import ember\n"
    ">>> ember.tanh(ember.tensor([0.0, 100.0])).tolist()\n"
    "[0.0, 1.0]",
)
sinh = _float_unary(
    "sinh",
    "Hyperbolic sine."
    "\n\n>>> import ember\n"
    ">>> ember.sinh(ember.tensor([0.0, 1.0], dtype=ember.float64)).tolist()\n"
    "[0.0, 1.1752011936438014]",
)
cosh = _float_unary(
    "cosh",
    "Hyperbolic cosine."
    "\n\n>>> import ember\n"
    ">>> ember.cosh(ember.tensor([0.0])).tolist()\n"
    "[1.0]",
)
asin = _float_unary(
    "asin",
    "Inverse sine (NaN outside [-1, 1])."
    "\n\n>>> import ember\n"
    ">>> ember.asin(ember.tensor([1.0, 2.0], dtype=ember.float64)).tolist()\n"
    "[1.5707963267948966, nan]",
)
acos = _float_unary(
    "acos",
    "Inverse cosine (NaN outside [-1, 1])."
    "\n\n>>> import ember\n"
    ">>> ember.acos(ember.tensor([1.0, -1.0], dtype=ember.float64)).tolist()\n"
    "[0.0, 3.141592653589793]",
)
atan = _float_unary(
    "atan",
    "Inverse tangent."
    "\n\n>>> import ember\n"
    ">>> ember.atan(ember.tensor([0.0, 1.0], dtype=ember.float64)).tolist()\n"
    "[0.0, 0.7853981633974483]",
)
erf = _float_unary(
    "erf",
    "The error function."
    "\n\n>>> import ember\n"
    ">>> ember.erf(ember.tensor([0.0, 1.0], dtype=ember.float64)).tolist()\n"
    "[0.0, 0.8427007929497149]",
)
sigmoid = _float_unary(
    "sigmoid",
    "``1 / (1 + exp(-x))``."
    "\n\n>>> import ember\n"
    ">>> ember.sigmoid(ember.tensor([0.0, 100.0])).tolist()\n"
    "[0.5, 1.0]",
)
arcsin = asin
arccos = acos
arctan = atan


reciprocal = _float_unary(
    "reciprocal",
    "``1 / x`` (integers give the default float, as in PyTorch)."
    "\n\n>>> import ember\n"
    ">>> ember.reciprocal(ember.tensor([4, 8])).tolist()\n"
    "[0.25, 0.125]",
)
log10 = _float_unary(
    "log10",
    "Base-10 log.\n\n>>> import ember\n"
    ">>> ember.log10(ember.tensor([100.0, 0.001], dtype=ember.float64)).tolist()\n[2.0, -3.0]",
)


def atan2(input: Tensor, other) -> Tensor:
    """Angle of the point ``(other, input)`` in (-pi, pi], like ``numpy.arctan2(y, x)``.

    >>> import ember
    >>> ember.atan2(ember.tensor([0.0, 1.0]), ember.tensor([-1.0, 0.0])).tolist()
    [3.1415927410125732, 1.5707963705062866]
    """
    target = result_dtype("atan2", input, other)
    return binary(fam.ATAN2, input, other, target if target.is_float else dt.default_float)


arctan2 = atan2


# ---------------------------------------------------------------- kind-preserving ops
def _keep_int(input: Tensor, name: str) -> Tensor:
    x = as_tensor(input)
    if x.dtype.is_float:
        return unary(fam.FLOAT_UNARY[name], x)
    return Tensor(x._prim, x.backend)  # integers are already whole numbers


def floor(input: Tensor) -> Tensor:
    """Round down; integer tensors come back unchanged.

    >>> import ember
    >>> ember.floor(ember.tensor([-1.5, 1.5])).tolist()
    [-2.0, 1.0]
    """
    return _keep_int(input, "floor")


def ceil(input: Tensor) -> Tensor:
    """Round up; integer tensors come back unchanged.

    >>> import ember
    >>> ember.ceil(ember.tensor([-1.5, 1.2])).tolist()
    [-1.0, 2.0]
    """
    return _keep_int(input, "ceil")


def trunc(input: Tensor) -> Tensor:
    """Round toward zero; integer tensors come back unchanged.

    >>> import ember
    >>> ember.trunc(ember.tensor([-1.7, 1.7])).tolist()
    [-1.0, 1.0]
    """
    return _keep_int(input, "trunc")


def round(input: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` places (negative: to tens, hundreds...), like torch.

    >>> import ember
    >>> ember.round(ember.tensor([0.5, 1.5, 1.234]), decimals=0).tolist()
    [0.0, 2.0, 1.0]
    >>> ember.tensor([1.25, 1234.0]).round(decimals=-2).tolist()
    [0.0, 1200.0]
    """
    x = as_tensor(input)
    if not x.dtype.is_float:
        if decimals >= 0:
            return Tensor(x._prim, x.backend)
        x = x.astype(dt.default_float)
        return _round_decimals(x, decimals).astype(input.dtype)
    return _round_decimals(x, decimals)


_ROUND = fam.FLOAT_UNARY["round"]


def _round_decimals(x: Tensor, decimals: int) -> Tensor:
    if decimals == 0:
        return unary(_ROUND, x)
    # torch's formula: scale, round half to even, unscale (dividing by 10**-d is more exact)
    if decimals > 0:
        scale = 10.0**decimals
        return unary(_ROUND, x * scale) / scale
    scale = 10.0 ** (-decimals)
    return unary(_ROUND, x / scale) * scale


def round_builtin(self: Tensor, ndigits: int | None = None) -> Tensor:
    """``round(t)`` and ``round(t, ndigits)``."""
    return round(self, ndigits or 0)


def abs(input: Tensor) -> Tensor:
    """Absolute value (keeps the dtype; ``abs(t)`` works too).

    >>> import ember
    >>> abs(ember.tensor([-1.5, 2.0])).tolist()
    [1.5, 2.0]
    """
    x = as_tensor(input)
    if x.dtype.is_bool:
        return Tensor(x._prim, x.backend)
    return unary(fam.ABS, x, float_only=False)


absolute = abs


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (NaN stays NaN); keeps the dtype.

    >>> import ember
    >>> ember.sign(ember.tensor([-3, 0, 7])).tolist()
    [-1, 0, 1]
    """
    x = as_tensor(input)
    if x.dtype.is_bool:
        return Tensor(x._prim, x.backend)
    return unary(fam.SIGN, x, float_only=False)


def square(input: Tensor) -> Tensor:
    """``x * x`` (integers stay integers; bool becomes int64).

    >>> import ember
    >>> ember.square(ember.tensor([3, -2])).tolist()
    [9, 4]
    """
    x = as_tensor(input)
    return x * x


# ---------------------------------------------------------------- NaN / inf tests
def _const_bool(x: Tensor, value: bool) -> Tensor:
    return full_like_shape(x, value, dt.bool_)


def isnan(input: Tensor) -> Tensor:
    """True where the element is NaN (never for integer tensors).

    >>> import ember
    >>> ember.isnan(ember.tensor([1.0, float("nan")])).tolist()
    [False, True]
    """
    x = as_tensor(input)
    if not x.dtype.is_float:
        return _const_bool(x, False)
    return wrap(x, x.backend.float_isnan(x._prim))


def isinf(input: Tensor) -> Tensor:
    """True where the element is +inf or -inf.

    >>> import ember, math
    >>> ember.isinf(ember.tensor([1.0, math.inf, -math.inf, math.nan])).tolist()
    [False, True, True, False]
    """
    x = as_tensor(input)
    if not x.dtype.is_float:
        return _const_bool(x, False)
    return wrap(x, x.backend.float_isinf(x._prim))


def isfinite(input: Tensor) -> Tensor:
    """True where the element is neither NaN nor infinite (always for integer tensors).

    >>> import ember
    >>> ember.isfinite(ember.tensor([1.0, float("inf"), float("nan")])).tolist()
    [True, False, False]
    """
    x = as_tensor(input)
    if not x.dtype.is_float:
        return _const_bool(x, True)
    b = x.backend
    bad = b.bool_or(b.float_isnan(x._prim), b.float_isinf(x._prim))
    return wrap(x, b.bool_not(bad))


_FLOAT_MAX = {
    dt.float16: 65504.0,
    dt.float32: (2.0 - 2.0**-23) * 2.0**127,
    dt.float64: sys.float_info.max,
}


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """Replace NaN with ``nan`` and ±inf with ``posinf``/``neginf`` (default: the dtype's
    largest/smallest finite value, as numpy and PyTorch do).

    >>> import ember
    >>> ember.nan_to_num(ember.tensor([float("nan"), float("-inf"), 1.0]), neginf=-9.0).tolist()
    [0.0, -9.0, 1.0]
    """
    x = as_tensor(input)
    if not x.dtype.is_float:
        return Tensor(x._prim, x.backend)
    big = _FLOAT_MAX[x.dtype]
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    out = where(x == _m.inf, posinf, x)
    out = where(x == -_m.inf, neginf, out)
    return where(isnan(x), nan, out).astype(x.dtype)


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]``; either bound may be None, a scalar or a tensor
    (broadcast). NaN stays NaN; where ``min > max`` the result is ``max`` (PyTorch).

    >>> import ember
    >>> ember.clamp(ember.tensor([-2.0, 0.5, 3.0]), min=0.0, max=1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' and 'max' must be given")
    x = as_tensor(input)
    if x.dtype.is_bool:
        raise DTypeError("clamp: not defined for bool tensors; cast to an integer dtype first")
    bounds = [v for v in (min, max) if v is not None]
    target = result_dtype("clamp", x, *bounds)
    out = x.astype(target)
    # x where it is within the bounds (inclusive), so at x == bound the gradient goes to x as
    # in PyTorch (maximum/minimum would share it); the bound's maximum/minimum keeps NaN rules.
    if min is not None:
        out = where(out >= min, out, binary(fam.MAXIMUM, out, min, target))
    if max is not None:
        out = where(out <= max, out, binary(fam.MINIMUM, out, max, target))
    return out


clip = clamp
