"""Element-wise functions of the standard.

Most are the Tensor's own ops (each backend's kernels); the inverse hyperbolics and
``logaddexp`` are composed from them; bitwise ops, shifts, ``copysign``, ``signbit``,
``hypot`` and ``nextafter`` have no primitive in the op contract and run on the host
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
from ..errors import DTypeError
from ..tensor import Tensor
from ._common import check_array, host_map, pair, require


def _unary(fn, *kinds: str):
    def f(x: Tensor, /) -> Tensor:
        x = check_array(x, fn.__name__)
        if kinds:
            require(x, fn.__name__, *kinds)
        return fn(x)

    f.__name__ = fn.__name__
    return f


def _binary(fn, name: str):
    def f(x1, x2, /) -> Tensor:
        a, b = pair(x1, x2, name)
        return fn(a, b)

    f.__name__ = name
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
    return check_array(x, "positive")


def round(x: Tensor, /) -> Tensor:
    """Half to even, as the standard (and IEEE 754) round."""
    return ops.round(check_array(x, "round"))


def acosh(x: Tensor, /) -> Tensor:
    x = check_array(x, "acosh")
    require(x, "acosh", "f")
    return ops.log(x + ops.sqrt(x - 1.0) * ops.sqrt(x + 1.0))


def asinh(x: Tensor, /) -> Tensor:
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
    integer exponent (numpy's ``x ** 0.5`` takes a sqrt shortcut that keeps -0's sign)."""
    a, b = pair(x1, x2, "pow")
    out = ops.pow(a, b)
    if not out.dtype.is_float:
        return out
    odd = (ops.trunc(b) == b) & (ops.remainder(b, 2) == 1)
    return ops.where((out == 0) & ~odd, out + 0.0, out)


def logaddexp(x1, x2, /) -> Tensor:
    a, b = pair(x1, x2, "logaddexp")
    require(a, "logaddexp", "f")
    m = ops.maximum(a, b)
    # equal infinities give that infinity (inf - inf would be NaN)
    return ops.where(ops.isinf(m) & (a == b), m, m + ops.log1p(ops.exp(-ops.abs(a - b))))


def clip(x: Tensor, /, min=None, max=None) -> Tensor:
    """``x`` limited to ``[min, max]``; a NaN bound gives NaN, the dtype stays ``x``'s."""
    x = check_array(x, "clip")
    out = x
    for bound, pick in ((min, ops.maximum), (max, ops.minimum)):
        if bound is None:
            continue
        b = pair(x, bound, "clip")[1].astype(x.dtype)
        out = pick(out, b)
        if x.dtype.is_float:
            out = ops.where(ops.isnan(b), b, out)
    return out if out.shape == x.shape else out.broadcast_to(x.shape)


def real(x: Tensor, /) -> Tensor:
    return check_array(x, "real")


def conj(x: Tensor, /) -> Tensor:
    return check_array(x, "conj")


def imag(x: Tensor, /) -> Tensor:
    x = check_array(x, "imag")
    return ops.zeros_like(x)


# ------------------------------------------------------------------ host path
def signbit(x: Tensor, /) -> Tensor:
    x = check_array(x, "signbit")
    require(x, "signbit", "f")
    return host_map(lambda v: math.copysign(1.0, v) < 0, dt.bool_, x)


def copysign(x1, x2, /) -> Tensor:
    a, b = pair(x1, x2, "copysign")
    require(a, "copysign", "f")
    return host_map(math.copysign, dt.promote_types(a.dtype, b.dtype), a, b)


def hypot(x1, x2, /) -> Tensor:
    a, b = pair(x1, x2, "hypot")
    require(a, "hypot", "f")
    return host_map(math.hypot, dt.promote_types(a.dtype, b.dtype), a, b)


def nextafter(x1, x2, /) -> Tensor:
    """The next representable value of ``x1``'s dtype after ``x1`` towards ``x2``."""
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


def _int_binary(name: str, fn):
    def f(x1, x2, /) -> Tensor:
        a, b = pair(x1, x2, name)
        if a.dtype.is_float or b.dtype.is_float:
            raise DTypeError(f"{name}: expected integer or bool arrays, got {a.dtype}, {b.dtype}")
        d = dt.promote_types(a.dtype, b.dtype)
        return host_map(lambda u, v: _wrap(fn(int(u), int(v)), d), d, a, b)

    f.__name__ = name
    return f


def _wrap(v: int, d: dt.DType):
    """Two's-complement wrap-around into ``d`` (shifts overflow like C's)."""
    if d.is_bool:
        return bool(v)
    lo, hi = d.int_range
    return (v - lo) % (hi - lo + 1) + lo


def _shift_left(u: int, v: int) -> int:
    return u << v if v < 64 else 0


def _shift_right(u: int, v: int) -> int:
    return u >> min(v, 63)


bitwise_and = _int_binary("bitwise_and", lambda u, v: u & v)
bitwise_or = _int_binary("bitwise_or", lambda u, v: u | v)
bitwise_xor = _int_binary("bitwise_xor", lambda u, v: u ^ v)
bitwise_left_shift = _int_binary("bitwise_left_shift", _shift_left)
bitwise_right_shift = _int_binary("bitwise_right_shift", _shift_right)


def bitwise_invert(x: Tensor, /) -> Tensor:
    x = check_array(x, "bitwise_invert")
    if x.dtype.is_bool:
        return ops.logical_not(x)
    require(x, "bitwise_invert", "i")
    return host_map(lambda u: _wrap(~int(u), x.dtype), x.dtype, x)
