"""Statistical and utility functions: values against numpy over drawn shapes and axes,
``keepdims``, and the standard's result dtypes (signed integer sums and products in int64,
unsigned ones in uint64)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember.array_api as xp
from array_api_support import FLOATS, NUMERIC, arrays, assert_like, nonempty, to_ember


def _axis(data, ndim):
    choice = data.draw(st.sampled_from(["none", "one", "tuple"]))
    if choice == "none" or ndim == 0:
        return None
    if choice == "one":
        return data.draw(st.integers(-ndim, ndim - 1))
    return tuple(sorted(data.draw(st.sets(st.integers(0, ndim - 1), min_size=1))))


REDUCTIONS = {
    "sum": (np.sum, NUMERIC), "prod": (np.prod, NUMERIC), "max": (np.max, NUMERIC),
    "min": (np.min, NUMERIC), "mean": (np.mean, FLOATS), "var": (np.var, FLOATS),
    "std": (np.std, FLOATS), "all": (np.all, NUMERIC + ("bool",)),
    "any": (np.any, NUMERIC + ("bool",)),
}


@pytest.mark.parametrize("name, dtype", [(n, d) for n, (_, ds) in REDUCTIONS.items()
                                         for d in ds])
def test_reduction(device, name, dtype):
    ref, _ = REDUCTIONS[name]
    small = dict(lo=-3, hi=3) if name == "prod" else dict(lo=-100, hi=100)

    @given(data=st.data())
    def check(data):
        a = data.draw(arrays(dtype, nonempty, special=False, **small))
        axis = _axis(data, a.ndim)
        keep = data.draw(st.booleans())
        accumulator = np.uint64 if dtype.startswith("uint") else np.int64
        kwargs = {"dtype": accumulator} if name in ("sum", "prod") and dtype not in FLOATS else {}
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(a, axis=axis, keepdims=keep, **kwargs))
        got = getattr(xp, name)(to_ember(a, device), axis=axis, keepdims=keep)
        assert_like(got, expected, rtol=1e-4 if dtype == "float32" else None,
                    signed_zeros=False)

    check()


@pytest.mark.parametrize("name", ["var", "std"])
def test_correction(device, name):
    a = np.arange(12.0).reshape(3, 4)
    got = getattr(xp, name)(to_ember(a, device), axis=1, correction=1)
    assert_like(got, getattr(np, name)(a, axis=1, ddof=1))


@pytest.mark.parametrize("name, ref", [("cumulative_sum", np.cumsum),
                                       ("cumulative_prod", np.cumprod)])
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_cumulative(device, name, ref, dtype):
    @given(a=arrays(dtype, nonempty, lo=-3, hi=3, special=False), include=st.booleans())
    def check(a, include):
        axis = a.ndim - 1
        expected = ref(a, axis=axis, dtype=np.int64 if dtype == "int32" else None)
        if include:
            shape = list(a.shape)
            shape[axis] = 1
            first = np.zeros(shape) if name == "cumulative_sum" else np.ones(shape)
            expected = np.concatenate([first.astype(expected.dtype), expected], axis)
        got = getattr(xp, name)(to_ember(a, device), axis=axis, include_initial=include)
        assert_like(got, expected)

    check()


def test_sum_dtype_argument(device):
    x = xp.asarray([200, 100], dtype=xp.uint8, device=device)
    assert xp.sum(x).item() == 300 and xp.sum(x).dtype == xp.uint64
    assert xp.sum(x, dtype=xp.int16).dtype == xp.int16
    assert xp.sum(xp.asarray([1.5], device=device), dtype=xp.float64).dtype == xp.float64


@pytest.mark.parametrize("n", [1, 2])
def test_diff(device, n):
    a = np.array([[1, 4, 9, 16], [2, 3, 5, 7]], dtype=np.int64)
    assert_like(xp.diff(to_ember(a, device), axis=1, n=n), np.diff(a, axis=1, n=n))
    pre = np.zeros((2, 1), dtype=np.int64)
    got = xp.diff(to_ember(a, device), axis=-1, prepend=to_ember(pre, device))
    assert_like(got, np.diff(a, axis=-1, prepend=pre))


def test_axis_empty_tuple_reduces_nothing(device):
    a = np.arange(6.0).reshape(2, 3)
    assert_like(xp.sum(to_ember(a, device), axis=()), a)
