"""Scalar float math with numpy's IEEE results instead of Python's exceptions.

``math`` raises where numpy returns inf or NaN (``math.log(0)``, ``math.exp(1000)``,
``1.0 / 0.0``, ``math.pow(-8, 1/3)``). Each op first maps the plain ``math`` function over the
values (a C loop); only when that raises does it redo the values with the slow, careful
function here, so the usual case pays nothing for the edge cases.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

from ... import dtype as dt

inf = math.inf
nan = math.nan
_ERRORS = (ValueError, OverflowError, ZeroDivisionError)


def map1(fast: Callable, safe: Callable, xs: Sequence) -> list:
    try:
        return list(map(fast, xs))
    except _ERRORS:
        return list(map(safe, xs))


def map2(fast: Callable, safe: Callable, xs: Sequence, ys: Sequence) -> list:
    try:
        return list(map(fast, xs, ys))
    except _ERRORS:
        return list(map(safe, xs, ys))


def _is_odd_int(y: float) -> bool:
    return math.isfinite(y) and y == math.floor(y) and math.fmod(y, 2.0) != 0.0


# ---------------------------------------------------------------------- binary
def div(x: float, y: float) -> float:
    try:
        return x / y
    except ZeroDivisionError:
        if x == 0 or math.isnan(x):
            return nan
        return math.copysign(inf, x) * math.copysign(1.0, y)


def pow_(x: float, y: float) -> float:
    """C ``pow``: ``math.pow`` raises for 0**negative, negative**fraction and overflow."""
    try:
        return math.pow(x, y)
    except ValueError:
        if x == 0:
            return math.copysign(inf, x) if _is_odd_int(y) else inf
        return nan
    except OverflowError:
        return -inf if x < 0 and _is_odd_int(y) else inf


def floor_divide(x: float, y: float) -> float:
    """numpy's floor_divide: Python's ``//`` (the same divmod algorithm), x // 0 is x / 0."""
    try:
        return x // y
    except ZeroDivisionError:
        return div(x, y)


def remainder(x: float, y: float) -> float:
    """numpy's remainder: Python's ``%`` (sign of the divisor); x % 0 is NaN."""
    try:
        return x % y
    except ZeroDivisionError:
        return nan


def maximum(x: float, y: float) -> float:
    return x if x > y or math.isnan(x) else y


def minimum(x: float, y: float) -> float:
    return x if x < y or math.isnan(x) else y


# ---------------------------------------------------------------------- unary
def exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return inf


def expm1(x: float) -> float:
    try:
        return math.expm1(x)
    except OverflowError:
        return inf


def _log_with(fn: Callable) -> Callable:
    def log(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return -inf if x == 0 else nan

    return log


log = _log_with(math.log)
log2 = _log_with(math.log2)


def log1p(x: float) -> float:
    try:
        return math.log1p(x)
    except ValueError:
        return -inf if x == -1 else nan


def _nan_on_error(fn: Callable) -> Callable:
    """For functions whose only errors are domain errors (sqrt(-1), sin(inf), asin(2))."""

    def safe(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return nan

    return safe


sqrt = _nan_on_error(math.sqrt)
sin = _nan_on_error(math.sin)
cos = _nan_on_error(math.cos)
tan = _nan_on_error(math.tan)
asin = _nan_on_error(math.asin)
acos = _nan_on_error(math.acos)


def sinh(x: float) -> float:
    try:
        return math.sinh(x)
    except OverflowError:
        return math.copysign(inf, x)


def cosh(x: float) -> float:
    try:
        return math.cosh(x)
    except OverflowError:
        return inf


def reciprocal(x: float) -> float:
    return div(1.0, x)


def rsqrt(x: float) -> float:
    return div(1.0, sqrt(x))


def sigmoid(x: float) -> float:
    """Never overflows: exp of a non-positive number only."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = exp(x)  # NaN comes here too and stays NaN
    return e / (1.0 + e)


def _integral(fn: Callable) -> Callable:
    """floor/ceil/trunc/round as floats: non-finite values pass through and the sign of a
    zero result follows the input (numpy's ``ceil(-0.5)`` is ``-0.0``)."""

    def op(x: float) -> float:
        if x - x != 0:  # inf or NaN
            return x
        return math.copysign(float(fn(x)), x)

    return op


floor = _integral(math.floor)
ceil = _integral(math.ceil)
trunc = _integral(math.trunc)
round_half_even = _integral(round)


def sign(x: float) -> float:
    """numpy's sign: +0.0 for either zero, NaN for NaN."""
    return 1.0 if x > 0 else -1.0 if x < 0 else x if x != x else 0.0


# ---------------------------------------------------------------------- float → int casts
def float_to_int(x: float, dtype: dt.DType) -> int:
    """numpy's (x86) float → int conversion, before the wrap to ``dtype``: truncate, through a
    64-bit conversion for int64, uint32 and uint64 (up to the dtype's maximum), a 32-bit one
    for narrower types; NaN, inf and values outside that range give its most negative value.
    (For uint32 and uint64 those cases are undefined in C: numpy's own results vary with the
    CPU and the position in the array.)"""
    wide = dtype.bits == 64 or dtype is dt.uint32
    lo, hi = (-(1 << 63), dtype.int_range[1]) if wide else (-(1 << 31), (1 << 31) - 1)
    if x - x != 0:
        return lo
    v = math.trunc(x)
    return v if lo <= v <= hi else lo


# operator aliases, so the backend reads uniformly
add, sub, mul = operator.add, operator.sub, operator.mul
