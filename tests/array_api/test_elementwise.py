"""Element-wise functions of the standard, on arrays drawn by hypothesis with the special
values (±0, ±inf, NaN), against numpy on the same inputs: values, NaNs, infinities, signed
zeros and the result dtype the standard gives."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember.array_api as xp
from array_api_support import FLOATS, INTS, NUMERIC, arrays, assert_like, to_ember

# name: (numpy reference, input dtypes, relative tolerance override or None)
UNARY = {
    "abs": (np.abs, NUMERIC), "acos": (np.arccos, FLOATS), "acosh": (np.arccosh, FLOATS),
    "asin": (np.arcsin, FLOATS), "asinh": (np.arcsinh, FLOATS), "atan": (np.arctan, FLOATS),
    "atanh": (np.arctanh, FLOATS), "bitwise_invert": (np.invert, INTS + ("bool",)),
    "ceil": (np.ceil, NUMERIC), "conj": (np.conj, NUMERIC), "cos": (np.cos, FLOATS),
    "cosh": (np.cosh, FLOATS), "exp": (np.exp, FLOATS), "expm1": (np.expm1, FLOATS),
    "floor": (np.floor, NUMERIC), "imag": (np.imag, FLOATS), "isfinite": (np.isfinite, NUMERIC),
    "isinf": (np.isinf, NUMERIC), "isnan": (np.isnan, NUMERIC), "log": (np.log, FLOATS),
    "log1p": (np.log1p, FLOATS), "log2": (np.log2, FLOATS), "log10": (np.log10, FLOATS),
    "logical_not": (np.logical_not, ("bool",)), "negative": (np.negative, NUMERIC),
    "positive": (np.positive, NUMERIC), "real": (np.real, NUMERIC),
    "reciprocal": (np.reciprocal, FLOATS), "round": (np.round, NUMERIC),
    "sign": (np.sign, NUMERIC), "signbit": (np.signbit, FLOATS), "sin": (np.sin, FLOATS),
    "sinh": (np.sinh, FLOATS), "sqrt": (np.sqrt, FLOATS), "square": (np.square, NUMERIC),
    "tan": (np.tan, FLOATS), "tanh": (np.tanh, FLOATS), "trunc": (np.trunc, NUMERIC),
}
# the inverse hyperbolics are composed from other functions (a few ulps more)
LOOSE = {"acosh": 1e-4, "asinh": 1e-4, "atanh": 1e-4}

BINARY = {
    "add": (np.add, NUMERIC), "subtract": (np.subtract, NUMERIC),
    "multiply": (np.multiply, NUMERIC), "divide": (np.divide, FLOATS),
    "floor_divide": (np.floor_divide, NUMERIC), "remainder": (np.remainder, NUMERIC),
    "pow": (np.power, NUMERIC), "maximum": (np.maximum, NUMERIC),
    "minimum": (np.minimum, NUMERIC), "atan2": (np.arctan2, FLOATS),
    "hypot": (np.hypot, FLOATS), "copysign": (np.copysign, FLOATS),
    "logaddexp": (np.logaddexp, FLOATS), "nextafter": (np.nextafter, FLOATS),
    "equal": (np.equal, NUMERIC), "not_equal": (np.not_equal, NUMERIC),
    "less": (np.less, NUMERIC), "less_equal": (np.less_equal, NUMERIC),
    "greater": (np.greater, NUMERIC), "greater_equal": (np.greater_equal, NUMERIC),
    "logical_and": (np.logical_and, ("bool",)), "logical_or": (np.logical_or, ("bool",)),
    "logical_xor": (np.logical_xor, ("bool",)),
    "bitwise_and": (np.bitwise_and, INTS + ("bool",)),
    "bitwise_or": (np.bitwise_or, INTS + ("bool",)),
    "bitwise_xor": (np.bitwise_xor, INTS + ("bool",)),
    "bitwise_left_shift": (np.left_shift, INTS), "bitwise_right_shift": (np.right_shift, INTS),
}
# the standard leaves the sign of a zero picked from ±0 operands unspecified
ANY_ZERO_SIGN = {"maximum", "minimum"}
# values the standard leaves undefined for integers are kept out of the draws
INT_LIMITS = {
    "floor_divide": dict(lo=1, hi=100), "remainder": dict(lo=1, hi=100),
    "pow": dict(lo=0, hi=3), "bitwise_left_shift": dict(lo=0, hi=7),
    "bitwise_right_shift": dict(lo=0, hi=7),
}


def _unary_cases():
    return [(n, d) for n, (_, ds) in UNARY.items() for d in ds]


def _binary_cases():
    return [(n, d) for n, (_, ds) in BINARY.items() for d in ds]


@pytest.mark.parametrize("name, dtype", _unary_cases())
def test_unary(device, name, dtype):
    ref, _ = UNARY[name]

    @given(a=arrays(dtype))
    def check(a):
        with np.errstate(all="ignore"):
            expected = ref(a)
        assert_like(getattr(xp, name)(to_ember(a, device)), expected, rtol=LOOSE.get(name))

    check()


@pytest.mark.parametrize("name, dtype", _binary_cases())
def test_binary(device, name, dtype):
    ref, _ = BINARY[name]
    limits = INT_LIMITS.get(name, {}) if dtype in INTS else {}

    @given(data=st.data())
    def check(data):
        shape = data.draw(st.sampled_from([(), (3,), (2, 3)]))
        a = data.draw(arrays(dtype, shape, **({} if name in ("floor_divide", "remainder")
                                              else limits)))
        b = data.draw(arrays(dtype, data.draw(st.sampled_from([shape, shape[-1:], ()])),
                             **limits))
        with np.errstate(all="ignore"):
            expected = ref(a, b)
        assert_like(getattr(xp, name)(to_ember(a, device), to_ember(b, device)), expected,
                    signed_zeros=name not in ANY_ZERO_SIGN)

    check()


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "less", "pow", "copysign"])
def test_binary_with_python_scalar(device, name):
    """A Python scalar beside an array is weak: the array's dtype wins (2024.12)."""
    ref, _ = BINARY[name]

    @given(a=arrays("float32", (3,)), s=st.sampled_from([0.5, -2.0, 0.0, 3.0]))
    def check(a, s):
        # the scalar as a full array: numpy's scalar-exponent power takes shortcuts (x ** 0.5
        # as sqrt(x), which keeps -0's sign where the standard's pow gives +0)
        s_arr = np.full_like(a, s)
        with np.errstate(all="ignore"):
            expected, reflected = ref(a, s_arr), ref(s_arr, a)
        assert_like(getattr(xp, name)(to_ember(a, device), s), expected)
        assert_like(getattr(xp, name)(s, to_ember(a, device)), reflected)

    with np.errstate(all="ignore"):
        check()


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip(device, dtype):
    @given(a=arrays(dtype, (4,)), lo=st.floats(-10, 0, width=32), hi=st.floats(0, 10, width=32))
    def check(a, lo, hi):
        expected = np.clip(a, a.dtype.type(lo), a.dtype.type(hi))
        assert_like(xp.clip(to_ember(a, device), lo, hi), expected, signed_zeros=False)

    check()


@pytest.mark.parametrize("dtype", INTS)
def test_integer_overflow_wraps(device, dtype):
    """Integer arithmetic wraps around (two's complement), as numpy and C do."""
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min], dtype=dtype)
    x = to_ember(a, device)
    assert_like(xp.add(x, xp.asarray(np.array([1, 1], dtype=dtype), device=device)), a + 1)
