"""Element-wise functions of the standard.

Most are the Tensor's own ops (each backend's kernels); the inverse hyperbolics and
``logaddexp`` are composed from them; ``copysign``, ``signbit``, ``hypot`` and
``nextafter`` have no primitive in the op contract and run on the host
(``_common.host_map``), exactly, with Python's ``math``.

>>> import ember.array_api as xp
>>> x = xp.asarray([1.0, -0.0, float("nan")])
>>> xp.signbit(x).tolist(), xp.bitwise_xor(xp.asarray([5]), 3).tolist()
([False, True, False], [6])
"""

from __future__ import annotations

import math
import struct

from .. import dtype as dt
from .. import ops
from ..ops import arithmetic
from ..tensor import Tensor
from ._common import check_array, host_map, pair, require


def _unary(fn, *kinds: str):
    def f(x: Tensor, /) -> Tensor:
        x = check_array(x, fn.__name__)
        if kinds:
            require(x, fn.__name__, *kinds)
        return fn(x)

    f.__name__ = f.__qualname__ = fn.__name__  # its own name in help() and the API pages
    return f


def _binary(fn, name: str, *kinds: str):
    def f(x1, x2, /) -> Tensor:
        a, b = pair(x1, x2, name)
        if kinds:
            require(a, name, *kinds)
            require(b, name, *kinds)
        return fn(a, b)

    f.__name__ = f.__qualname__ = name
    return f


abs = _unary(ops.abs, "i", "f")
acos = _unary(ops.acos, "f")
asin = _unary(ops.asin, "f")
atan = _unary(ops.atan, "f")
ceil = _unary(ops.ceil, "i", "f")
cos = _unary(ops.cos, "f")
cosh = _unary(ops.cosh, "f")
exp = _unary(ops.exp, "f")
expm1 = _unary(ops.expm1, "f")
floor = _unary(ops.floor, "i", "f")
isfinite = _unary(ops.isfinite, "i", "f", "b")
isinf = _unary(ops.isinf, "i", "f", "b")
isnan = _unary(ops.isnan, "i", "f", "b")
log = _unary(ops.log, "f")
log1p = _unary(ops.log1p, "f")
log2 = _unary(ops.log2, "f")
log10 = _unary(ops.log10, "f")
logical_not = _unary(ops.logical_not, "b")
negative = _unary(ops.neg, "i", "f")
reciprocal = _unary(ops.reciprocal, "f")
sign = _unary(ops.sign, "i", "f")
sin = _unary(ops.sin, "f")
sinh = _unary(ops.sinh, "f")
sqrt = _unary(ops.sqrt, "f")
square = _unary(ops.square, "i", "f")
tan = _unary(ops.tan, "f")
tanh = _unary(ops.tanh, "f")
trunc = _unary(ops.trunc, "i", "f")


def positive(x: Tensor, /) -> Tensor:
    """``+x``: the array itself (integer and float arrays).

    >>> import ember.array_api as xp
    >>> xp.positive(xp.asarray([-1, 2])).tolist()
    [-1, 2]
    """
    return check_array(x, "positive")


def round(x: Tensor, /) -> Tensor:
    """Half to even, as the standard (and IEEE 754) round.

    >>> import ember.array_api as xp
    >>> xp.round(xp.asarray([0.5, 1.5, 2.5, -0.5])).tolist()
    [0.0, 2.0, 2.0, -0.0]
    """
    return ops.round(check_array(x, "round"))


def acosh(x: Tensor, /) -> Tensor:
    """Inverse hyperbolic cosine, ``log(x + sqrt(x - 1) sqrt(x + 1))`` (float arrays).

    >>> import ember.array_api as xp
    >>> xp.acosh(xp.asarray([1.0, 0.5], dtype=xp.float64)).tolist()
    [0.0, nan]
    """
    x = check_array(x, "acosh")
    require(x, "acosh", "f")
    return ops.log(x + ops.sqrt(x - 1.0) * ops.sqrt(x + 1.0))


def asinh(x: Tensor, /) -> Tensor:
    """Inverse hyperbolic sine, accurate near 0 and for huge ``|x|``; odd: asinh(-0) is -0.

    >>> import math, ember.array_api as xp
    >>> xp.asinh(xp.asarray([1.0, -0.0], dtype=xp.float64)).tolist() == [math.asinh(1.0), -0.0]
    True
    """
    x = check_array(x, "asinh")
    require(x, "asinh", "f")
    a = ops.abs(x)
    # log1p(|x| + x²/(1 + sqrt(1 + x²))) keeps precision near 0; the sign is copied back
    # so asinh(-0.0) is -0.0; huge |x| goes through log(|x|) + ln 2 (x² would overflow)
    small = ops.log1p(a + a * a / (1.0 + ops.sqrt(a * a + 1.0)))
    big = ops.log(a) + math.log(2.0)
    mag = ops.where(a > 1e18, big, small)
    return copysign(mag, x)


def atanh(x: Tensor, /) -> Tensor:
    """Inverse hyperbolic tangent, ``log1p(2x / (1 - x)) / 2`` (float arrays).

    >>> import ember.array_api as xp
    >>> xp.atanh(xp.asarray([0.0, 1.0, -1.0])).tolist()
    [0.0, inf, -inf]
    """
    x = check_array(x, "atanh")
    require(x, "atanh", "f")
    return ops.log1p(2.0 * x / (1.0 - x)) * 0.5


add = _binary(ops.add, "add")
subtract = _binary(ops.sub, "subtract")
multiply = _binary(ops.mul, "multiply")
divide = _binary(ops.div, "divide")
floor_divide = _binary(ops.floor_divide, "floor_divide")
remainder = _binary(ops.remainder, "remainder")
maximum = _binary(ops.maximum, "maximum")
minimum = _binary(ops.minimum, "minimum")
atan2 = _binary(ops.atan2, "atan2")
equal = _binary(ops.eq, "equal")
not_equal = _binary(ops.ne, "not_equal")
less = _binary(ops.lt, "less")
less_equal = _binary(ops.le, "less_equal")
greater = _binary(ops.gt, "greater")
greater_equal = _binary(ops.ge, "greater_equal")
logical_and = _binary(ops.logical_and, "logical_and")
logical_or = _binary(ops.logical_or, "logical_or")
logical_xor = _binary(ops.logical_xor, "logical_xor")


def pow(x1, x2, /) -> Tensor:
    """``x1 ** x2``; a zero result has the sign the standard gives: -0 only for an odd
    integer exponent (numpy's ``x ** 0.5`` takes a sqrt shortcut that keeps -0's sign).

    >>> import ember.array_api as xp
    >>> xp.pow(xp.asarray([2.0, -0.0, -0.0]), xp.asarray([3.0, 0.5, 3.0])).tolist()
    [8.0, 0.0, -0.0]
    """
    a, b = pair(x1, x2, "pow")
    out = ops.pow(a, b)
    if not out.dtype.is_float:
        return out
    odd = (ops.trunc(b) == b) & (ops.remainder(b, 2) == 1)
    return ops.where((out == 0) & ~odd, out + 0.0, out)


def logaddexp(x1, x2, /) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow (float arrays).

    >>> import ember.array_api as xp
    >>> xp.logaddexp(xp.asarray([1000.0, 0.0]), xp.asarray([1000.0, 0.0])).tolist()[0] > 1000
    True
    >>> import math
    >>> zero = xp.asarray([0.0], dtype=xp.float64)
    >>> xp.logaddexp(zero, zero).tolist() == [math.log(2.0)]
    True
    """
    a, b = pair(x1, x2, "logaddexp")
    require(a, "logaddexp", "f")
    m = ops.maximum(a, b)
    # equal infinities give that infinity (inf - inf would be NaN)
    return ops.where(ops.isinf(m) & (a == b), m, m + ops.log1p(ops.exp(-ops.abs(a - b))))


def clip(x: Tensor, /, min=None, max=None) -> Tensor:
    """``x`` limited to ``[min, max]``; a NaN bound gives NaN, the dtype stays ``x``'s and
    the shape is ``x``'s broadcast with the bounds' (as the standard and numpy give).

    >>> import ember.array_api as xp
    >>> xp.clip(xp.asarray([-2, 5, 10]), min=0, max=6).tolist()
    [0, 5, 6]
    >>> xp.clip(xp.asarray([1.0, 5.0]), xp.asarray([[0.0], [2.0]]), 3.0).tolist()
    [[1.0, 3.0], [2.0, 3.0]]
    >>> xp.clip(xp.asarray([1, 2], dtype=xp.int8), -1000, 1000).tolist()
    [1, 2]
    """
    x = check_array(x, "clip")
    out = x
    for bound, pick in ((min, ops.maximum), (max, ops.minimum)):
        if bound is None:
            continue
        if type(bound) is int and x.dtype.is_int:  # a bound beyond the dtype clips at its edge
            lo, hi = x.dtype.int_range
            bound = lo if bound < lo else hi if bound > hi else bound  # (min, max: the bounds)
        b = pair(x, bound, "clip")[1].astype(x.dtype)
        out = pick(out, b)
        if x.dtype.is_float:
            out = ops.where(ops.isnan(b), b, out)
    return out


def real(x: Tensor, /) -> Tensor:
    """The real part: the array itself (Ember has no complex dtypes).

    >>> import ember.array_api as xp
    >>> xp.real(xp.asarray([1.5])).tolist()
    [1.5]
    """
    return check_array(x, "real")


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate: the array itself (Ember has no complex dtypes).

    >>> import ember.array_api as xp
    >>> xp.conj(xp.asarray([1.5])).tolist()
    [1.5]
    """
    return check_array(x, "conj")


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part: zeros (Ember has no complex dtypes).

    >>> import ember.array_api as xp
    >>> xp.imag(xp.asarray([1.5])).tolist()
    [0.0]
    """
    x = check_array(x, "imag")
    return ops.zeros_like(x)


# ------------------------------------------------------------------ host path
def signbit(x: Tensor, /) -> Tensor:
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the sign bit.

    >>> import ember.array_api as xp
    >>> xp.signbit(xp.asarray([-1.0, -0.0, 0.0, 2.0])).tolist()
    [True, True, False, False]
    """
    x = check_array(x, "signbit")
    require(x, "signbit", "f")
    return host_map(lambda v: math.copysign(1.0, v) < 0, dt.bool_, x)


def copysign(x1, x2, /) -> Tensor:
    """``x1``'s magnitude with ``x2``'s sign (-0.0 counts as negative).

    >>> import ember.array_api as xp
    >>> xp.copysign(xp.asarray([1.0, 2.0]), xp.asarray([-0.0, 3.0])).tolist()
    [-1.0, 2.0]
    """
    a, b = pair(x1, x2, "copysign")
    require(a, "copysign", "f")
    return host_map(math.copysign, dt.promote_types(a.dtype, b.dtype), a, b)


def hypot(x1, x2, /) -> Tensor:
    """``sqrt(x1² + x2²)`` without overflow or underflow (float arrays).

    >>> import ember.array_api as xp
    >>> x1 = xp.asarray([3.0, 3e300], dtype=xp.float64)
    >>> x2 = xp.asarray([4.0, 4e300], dtype=xp.float64)
    >>> xp.hypot(x1, x2).tolist()  # x1² alone would overflow
    [5.0, 5e+300]
    """
    a, b = pair(x1, x2, "hypot")
    require(a, "hypot", "f")
    return host_map(math.hypot, dt.promote_types(a.dtype, b.dtype), a, b)


def nextafter(x1, x2, /) -> Tensor:
    """The next representable value of ``x1``'s dtype after ``x1`` towards ``x2``.

    >>> import ember.array_api as xp
    >>> xp.nextafter(xp.asarray([1.0], dtype=xp.float64), 2.0).tolist()
    [1.0000000000000002]
    >>> xp.nextafter(xp.asarray([1.0]), 2.0).tolist()  # float32: the step is 2 ** -23
    [1.0000001192092896]
    """
    a, b = pair(x1, x2, "nextafter")
    require(a, "nextafter", "f")
    d = dt.promote_types(a.dtype, b.dtype)
    if d == dt.float64:
        return host_map(math.nextafter, d, a, b)
    fmt = "<" + d.struct_format
    code = {2: "<H", 4: "<I"}[d.itemsize]
    sign = 1 << (d.bits - 1)

    def step(u: float, v: float) -> float:
        if u != u or v != v:
            return math.nan
        if u == v:
            return v
        if u == 0.0:
            return math.copysign(struct.unpack(fmt, struct.pack(code, 1))[0], v)
        bits = struct.unpack(code, struct.pack(fmt, u))[0]
        away = (v > u) == (u > 0)  # moving away from zero grows the magnitude
        bits = bits + 1 if away else bits - 1
        return struct.unpack(fmt, struct.pack(code, bits & (2 * sign - 1)))[0]

    return host_map(step, d, a, b)


bitwise_and = _binary(arithmetic.and_, "bitwise_and", "b", "i")
bitwise_or = _binary(arithmetic.or_, "bitwise_or", "b", "i")
bitwise_xor = _binary(arithmetic.xor, "bitwise_xor", "b", "i")
bitwise_left_shift = _binary(arithmetic.shift_left, "bitwise_left_shift", "i")
bitwise_right_shift = _binary(arithmetic.shift_right, "bitwise_right_shift", "i")


def bitwise_invert(x: Tensor, /) -> Tensor:
    """``~x``: the bitwise NOT of integers (two's complement), logical NOT of bools.

    >>> import ember.array_api as xp
    >>> xp.bitwise_invert(xp.asarray([0, 5, -1])).tolist()
    [-1, -6, 0]
    >>> xp.bitwise_invert(xp.asarray([True])).tolist()
    [False]
    """
    x = check_array(x, "bitwise_invert")
    require(x, "bitwise_invert", "b", "i")
    return arithmetic.invert(x)


# The docstrings of the functions made by _unary, _binary and _int_binary above: what each
# computes and an example call with its result (tests/unit/test_docstrings.py runs them).
_DOCS = {
    "abs": ("Absolute value (integer and float arrays).", "xp.asarray([-1.5, 2.0])", "[1.5, 2.0]"),
    "acos": ("Inverse cosine (float arrays).", "xp.asarray([1.0])", "[0.0]"),
    "asin": ("Inverse sine (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "atan": ("Inverse tangent (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "ceil": (
        "Round up; integers are returned as they are.",
        "xp.asarray([-1.5, 1.2])",
        "[-1.0, 2.0]",
    ),
    "cos": ("Cosine, in radians (float arrays).", "xp.asarray([0.0])", "[1.0]"),
    "cosh": ("Hyperbolic cosine (float arrays).", "xp.asarray([0.0])", "[1.0]"),
    "exp": ("``e ** x`` (float arrays).", "xp.asarray([0.0])", "[1.0]"),
    "expm1": ("``exp(x) - 1``, accurate near 0 (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "floor": (
        "Round down; integers are returned as they are.",
        "xp.asarray([-1.5, 1.2])",
        "[-2.0, 1.0]",
    ),
    "isfinite": (
        "True where the element is neither infinite nor NaN.",
        "xp.asarray([1.0, float('inf'), float('nan')])",
        "[True, False, False]",
    ),
    "isinf": (
        "True where the element is +inf or -inf.",
        "xp.asarray([1.0, float('-inf')])",
        "[False, True]",
    ),
    "isnan": ("True where the element is NaN.", "xp.asarray([1.0, float('nan')])", "[False, True]"),
    "log": ("Natural logarithm (float arrays).", "xp.asarray([1.0])", "[0.0]"),
    "log1p": ("``log(1 + x)``, accurate near 0 (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "log2": ("Base-2 logarithm (float arrays).", "xp.asarray([8.0])", "[3.0]"),
    "log10": ("Base-10 logarithm (float arrays).", "xp.asarray([1.0, 10.0])", "[0.0, 1.0]"),
    "logical_not": ("Logical NOT (bool arrays).", "xp.asarray([True, False])", "[False, True]"),
    "negative": ("``-x`` (integer and float arrays).", "xp.asarray([1, -2])", "[-1, 2]"),
    "reciprocal": ("``1 / x`` (float arrays).", "xp.asarray([4.0])", "[0.25]"),
    "sign": (
        "-1, 0 or 1 by the sign of each element.",
        "xp.asarray([-3.0, 0.0, 2.0])",
        "[-1.0, 0.0, 1.0]",
    ),
    "sin": ("Sine, in radians (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "sinh": ("Hyperbolic sine (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "sqrt": ("Square root (float arrays).", "xp.asarray([4.0, 9.0])", "[2.0, 3.0]"),
    "square": ("``x * x`` (integer and float arrays).", "xp.asarray([3, -2])", "[9, 4]"),
    "tan": ("Tangent, in radians (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "tanh": ("Hyperbolic tangent (float arrays).", "xp.asarray([0.0])", "[0.0]"),
    "trunc": (
        "Round toward zero; integers are returned as they are.",
        "xp.asarray([-1.7, 1.7])",
        "[-1.0, 1.0]",
    ),
    "add": (
        "``x1 + x2`` with broadcasting.",
        "xp.asarray([1, 2]), xp.asarray([10, 20])",
        "[11, 22]",
    ),
    "subtract": ("``x1 - x2`` with broadcasting.", "xp.asarray([5, 7]), 2", "[3, 5]"),
    "multiply": ("``x1 * x2`` with broadcasting.", "xp.asarray([1.5, 2.0]), 2.0", "[3.0, 4.0]"),
    "divide": (
        "True division: integers give a float array.",
        "xp.asarray([1, 3]), 2",
        "[0.5, 1.5]",
    ),
    "floor_divide": ("Division rounded toward -inf.", "xp.asarray([7, -7]), 2", "[3, -4]"),
    "remainder": (
        "Remainder with the sign of the divisor (Python's ``%``).",
        "xp.asarray([7, -7]), 3",
        "[1, 2]",
    ),
    "maximum": (
        "Elementwise maximum (NaN propagates).",
        "xp.asarray([1.0, 5.0]), xp.asarray([3.0, 2.0])",
        "[3.0, 5.0]",
    ),
    "minimum": (
        "Elementwise minimum (NaN propagates).",
        "xp.asarray([1.0, 5.0]), xp.asarray([3.0, 2.0])",
        "[1.0, 2.0]",
    ),
    "atan2": (
        "The angle of the point ``(x2, x1)``, in (-pi, pi].",
        "xp.asarray([0.0]), xp.asarray([1.0])",
        "[0.0]",
    ),
    "equal": (
        "``x1 == x2``, a bool array.",
        "xp.asarray([1, 2]), xp.asarray([1, 3])",
        "[True, False]",
    ),
    "not_equal": (
        "``x1 != x2``, a bool array.",
        "xp.asarray([1, 2]), xp.asarray([1, 3])",
        "[False, True]",
    ),
    "less": (
        "``x1 < x2``, a bool array.",
        "xp.asarray([1, 2]), xp.asarray([2, 2])",
        "[True, False]",
    ),
    "less_equal": (
        "``x1 <= x2``, a bool array.",
        "xp.asarray([1, 3]), xp.asarray([2, 2])",
        "[True, False]",
    ),
    "greater": (
        "``x1 > x2``, a bool array.",
        "xp.asarray([1, 3]), xp.asarray([2, 2])",
        "[False, True]",
    ),
    "greater_equal": (
        "``x1 >= x2``, a bool array.",
        "xp.asarray([1, 2]), xp.asarray([2, 2])",
        "[False, True]",
    ),
    "logical_and": (
        "Logical AND (bool arrays).",
        "xp.asarray([True, True]), xp.asarray([True, False])",
        "[True, False]",
    ),
    "logical_or": (
        "Logical OR (bool arrays).",
        "xp.asarray([True, False]), xp.asarray([False, False])",
        "[True, False]",
    ),
    "logical_xor": (
        "Logical XOR (bool arrays).",
        "xp.asarray([True, True]), xp.asarray([True, False])",
        "[False, True]",
    ),
    "bitwise_and": (
        "Bitwise AND of integer (or bool) arrays.",
        "xp.asarray([12]), xp.asarray([10])",
        "[8]",
    ),
    "bitwise_or": (
        "Bitwise OR of integer (or bool) arrays.",
        "xp.asarray([12]), xp.asarray([10])",
        "[14]",
    ),
    "bitwise_xor": (
        "Bitwise XOR of integer (or bool) arrays.",
        "xp.asarray([12]), xp.asarray([10])",
        "[6]",
    ),
    "bitwise_left_shift": (
        "``x1 << x2``, wrapping around at the dtype's width (a count >= the width gives 0).",
        "xp.asarray([1, 3]), xp.asarray([4, 1])",
        "[16, 6]",
    ),
    "bitwise_right_shift": (
        "``x1 >> x2`` (arithmetic: the sign is kept).",
        "xp.asarray([-16, 16]), xp.asarray([2, 2])",
        "[-4, 4]",
    ),
}
for _name, (_summary, _call, _out) in _DOCS.items():
    globals()[_name].__doc__ = (f"{_summary}\n\n>>> import ember.array_api as xp\n"
                                f">>> xp.{_name}({_call}).tolist()\n{_out}\n")
