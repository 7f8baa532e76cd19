"""Special cases the standard states for NaN, infinities and signed zeros, one row each,
with the value the specification gives (not a library's output)."""

import math

import numpy as np
import pytest

import ember.array_api as xp

INF, NAN, PI = math.inf, math.nan, math.pi

UNARY = [
    ("abs", -0.0, 0.0), ("negative", 0.0, -0.0), ("square", -0.0, 0.0), ("sqrt", -0.0, -0.0),
    ("sqrt", -1.0, NAN), ("exp", -INF, 0.0), ("expm1", -0.0, -0.0), ("log", 0.0, -INF),
    ("log", -1.0, NAN), ("log1p", -1.0, -INF), ("log2", INF, INF), ("log10", -0.0, -INF),
    ("tanh", -0.0, -0.0), ("tanh", -INF, -1.0), ("sinh", -0.0, -0.0), ("cosh", -INF, INF),
    ("asinh", -0.0, -0.0), ("atanh", 1.0, INF), ("atanh", -0.0, -0.0), ("acosh", 1.0, 0.0),
    ("acosh", 0.5, NAN), ("asin", -0.0, -0.0), ("atan", -INF, -PI / 2), ("sin", INF, NAN),
    ("ceil", -0.5, -0.0), ("floor", -0.0, -0.0), ("trunc", -0.5, -0.0), ("round", 2.5, 2.0),
    ("round", -0.5, -0.0), ("round", 3.5, 4.0), ("reciprocal", -0.0, -INF),
    ("sign", NAN, NAN), ("sign", -3.0, -1.0), ("signbit", -0.0, True), ("signbit", NAN, False),
    ("isfinite", INF, False), ("isinf", -INF, True), ("isnan", NAN, True),
]

BINARY = [
    ("add", -0.0, -0.0, -0.0), ("add", -0.0, 0.0, 0.0), ("add", INF, -INF, NAN),
    ("subtract", -0.0, 0.0, -0.0), ("multiply", -0.0, 1.0, -0.0), ("multiply", INF, 0.0, NAN),
    ("divide", 1.0, -0.0, -INF), ("divide", 0.0, 0.0, NAN), ("divide", -1.0, INF, -0.0),
    ("floor_divide", 1.0, 0.0, INF), ("floor_divide", -1.0, 0.0, -INF),
    ("floor_divide", 7.0, 2.0, 3.0), ("floor_divide", -7.0, 2.0, -4.0),
    ("remainder", 5.0, INF, 5.0), ("remainder", -1.0, 3.0, 2.0), ("remainder", 1.0, -3.0, -2.0),
    ("remainder", INF, 2.0, NAN), ("remainder", 1.0, 0.0, NAN),
    ("pow", NAN, 0.0, 1.0), ("pow", 1.0, NAN, 1.0), ("pow", -0.0, 3.0, -0.0),
    ("pow", -0.0, 0.5, 0.0), ("pow", 0.0, -1.0, INF), ("pow", -0.0, -3.0, -INF),
    ("pow", -INF, -3.0, -0.0), ("pow", -INF, 2.0, INF), ("pow", -1.0, INF, 1.0),
    ("pow", 0.5, INF, 0.0), ("pow", -2.0, 0.5, NAN),
    ("atan2", 0.0, -0.0, PI), ("atan2", -0.0, -0.0, -PI), ("atan2", -0.0, 0.0, -0.0),
    ("atan2", 1.0, INF, 0.0), ("atan2", INF, -INF, 3 * PI / 4),
    ("maximum", NAN, 1.0, NAN), ("minimum", 1.0, NAN, NAN),
    ("hypot", INF, NAN, INF), ("hypot", NAN, -INF, INF), ("hypot", 3.0, 4.0, 5.0),
    ("copysign", 1.0, -0.0, -1.0), ("copysign", -2.0, NAN, 2.0),
    ("logaddexp", INF, INF, INF), ("logaddexp", -INF, -INF, -INF), ("logaddexp", 0.0, -INF, 0.0),
    ("nextafter", 1.0, 1.0, 1.0), ("nextafter", NAN, 1.0, NAN),
    ("equal", NAN, NAN, False), ("equal", -0.0, 0.0, True), ("not_equal", NAN, NAN, True),
    ("less", -INF, INF, True), ("greater_equal", NAN, 0.0, False),
]


def _check(got, want):
    value = got.tolist()
    if isinstance(want, bool):
        assert value is want
    elif math.isnan(want):
        assert math.isnan(value), value
    else:
        assert value == pytest.approx(want, rel=1e-6) and \
            math.copysign(1, value) == math.copysign(1, want), (value, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, x, want", UNARY, ids=lambda v: repr(v))
def test_unary_special_case(device, dtype, name, x, want):
    _check(getattr(xp, name)(xp.asarray(x, dtype=getattr(xp, dtype), device=device)), want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, x1, x2, want", BINARY, ids=lambda v: repr(v))
def test_binary_special_case(device, dtype, name, x1, x2, want):
    d = getattr(xp, dtype)
    got = getattr(xp, name)(xp.asarray(x1, dtype=d, device=device),
                            xp.asarray(x2, dtype=d, device=device))
    _check(got, want)


@pytest.mark.parametrize("dtype, smallest", [("float32", float(np.nextafter(np.float32(0),
                                                                              np.float32(1)))),
                                             ("float64", 5e-324)])
def test_nextafter_steps_one_ulp(device, dtype, smallest):
    d = getattr(xp, dtype)
    got = xp.nextafter(xp.asarray([0.0, 1.0], dtype=d, device=device),
                       xp.asarray([1.0, 2.0], dtype=d, device=device))
    assert got.tolist() == [smallest, float(np.nextafter(np.dtype(dtype).type(1), 2))]
