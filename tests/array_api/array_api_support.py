"""Shared strategies and comparisons of the compliance suite: numpy arrays drawn by
hypothesis (special values included), moved into ``ember.array_api`` on a backend, and the
results compared with numpy's on the same inputs (the independent reference)."""

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember.array_api as xp

FLOATS = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
NUMERIC = INTS + FLOATS
SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5]

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
nonempty = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def elements(dtype: str, lo=None, hi=None, special=True):
    d = np.dtype(dtype)
    if d.kind == "f":
        lo = -1e4 if lo is None else lo
        hi = 1e4 if hi is None else hi
        finite = st.floats(lo, hi, width=d.itemsize * 8)
        return st.one_of(finite, st.sampled_from(SPECIAL)) if special else finite
    if d.kind == "b":
        return st.booleans()
    info = np.iinfo(d)
    return st.integers(info.min if lo is None else max(lo, info.min),
                       info.max if hi is None else min(hi, info.max))


def arrays(dtype: str, shape=shapes, **kw):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **kw))


def to_ember(a: np.ndarray, device: str):
    return xp.asarray(np.array(a, copy=True), device=device)


def to_numpy(x) -> np.ndarray:
    return np.asarray(x.to_data().to_numpy())


def tolerance(dtype) -> float:
    return {"float16": 1e-3, "float32": 1e-5, "float64": 1e-10}.get(str(dtype), 0)


def assert_like(result, expected: np.ndarray, *, dtype=None, signed_zeros=True, rtol=None):
    """Values (NaN where NaN, the same infinities, signed zeros), shape and dtype."""
    got = to_numpy(result)
    expected = np.asarray(expected)
    want = str(dtype if dtype is not None else expected.dtype)
    assert str(result.dtype) == want, f"dtype {result.dtype}, expected {want}"
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    if got.dtype.kind == "f":
        tol = tolerance(got.dtype) if rtol is None else rtol
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=tol, atol=tol * 1e-3,
                                   equal_nan=True)
        if signed_zeros:
            zeros = (expected == 0)
            assert np.array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros])), \
                f"signed zeros differ: {got[zeros]} vs {expected[zeros]}"
    else:
        assert np.array_equal(got, expected.astype(got.dtype)), f"{got} != {expected}"
