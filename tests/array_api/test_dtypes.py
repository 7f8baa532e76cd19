"""Data type functions and type promotion against the standard's table (tests/array_api/
array_api_spec.py), for array-array operations, functions and ``result_type``."""

import itertools

import numpy as np
import pytest

import ember
import ember.array_api as xp
from array_api_spec import promotion

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
HAVE = ["bool", *INTS, "float32", "float64"]
PAIRS = [(a, b) for a, b in itertools.product(HAVE, HAVE) if promotion(a, b) is not None]


@pytest.mark.parametrize("a, b", PAIRS)
def test_result_type_follows_the_table(a, b):
    assert str(xp.result_type(getattr(xp, a), getattr(xp, b))) == promotion(a, b)


def test_uint64_with_a_signed_integer_is_refused():
    # the table has no entry (numpy gives float64): an error, not a guess
    with pytest.raises(ember.DTypeError, match="uint64 and int8 have no common integer dtype"):
        xp.result_type(xp.uint64, xp.int8)
    with pytest.raises(ember.DTypeError, match="int64"):
        xp.ones(2, dtype=xp.int64) + xp.ones(2, dtype=xp.uint64)


@pytest.mark.parametrize("a, b", PAIRS)
def test_binary_operator_promotes_like_the_table(device, a, b):
    held = ember.get_backend(device).caps.dtypes
    if not {ember.dtype.as_dtype(a), ember.dtype.as_dtype(b)} <= held:
        pytest.skip(f"{device} holds no {a} or no {b}")
    # a backend without the table's dtype computes in the narrowest one it holds with its range
    want = str(ember.dtype.holding(ember.dtype.as_dtype(promotion(a, b)), held))
    x = xp.ones((2,), dtype=getattr(xp, a), device=device)
    y = xp.ones((2,), dtype=getattr(xp, b), device=device)
    if a == "bool":
        assert str((x == y).dtype) == "bool"
        return
    assert str((x + y).dtype) == want
    assert str(xp.multiply(x, y).dtype) == want
    assert str(xp.concat([x, y]).dtype) == want


@pytest.mark.parametrize("dtype, scalar", [("int8", 3), ("uint8", 200), ("float32", 0.1),
                                           ("float64", 2), ("bool", True), ("int16", -300),
                                           ("uint16", 60000), ("uint32", 4_000_000_000),
                                           ("uint64", 2**63)])
def test_python_scalars_are_weak(device, dtype, scalar):
    x = xp.zeros((2,), dtype=getattr(xp, dtype), device=device)
    assert (x + scalar if dtype != "bool" else x & scalar).dtype == getattr(xp, dtype)
    assert xp.result_type(x, scalar) == getattr(xp, dtype)


@pytest.mark.parametrize("a, b", list(itertools.product(HAVE, HAVE)))
def test_can_cast_is_promotion_to_the_target(a, b):
    want = a == b or (promotion(a, b) == b) or (a in INTS and b.startswith("float"))
    assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_finfo(dtype):
    got, ref = xp.finfo(getattr(xp, dtype)), np.finfo(dtype)
    assert (got.bits, got.eps, got.max, got.min) == (ref.bits, float(ref.eps), float(ref.max),
                                                     float(ref.min))
    assert got.smallest_normal == float(ref.smallest_normal)
    assert got.dtype == getattr(xp, dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_iinfo(dtype):
    got, ref = xp.iinfo(getattr(xp, dtype)), np.iinfo(dtype)
    assert (got.bits, got.min, got.max) == (ref.bits, int(ref.min), int(ref.max))


def test_isdtype_kinds():
    assert xp.isdtype(xp.int8, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.uint8, ("unsigned integer", "bool"))
    assert xp.isdtype(xp.float64, "real floating") and xp.isdtype(xp.float32, "numeric")
    assert not xp.isdtype(xp.bool, "numeric") and xp.isdtype(xp.int64, xp.int64)
    assert not xp.isdtype(xp.float32, "complex floating")
    with pytest.raises(ValueError, match="unknown kind"):
        xp.isdtype(xp.int8, "whole numbers")


@pytest.mark.parametrize("src, dst", [("float64", "int32"), ("int64", "float32"),
                                      ("bool", "uint8"), ("int32", "int8"), ("float32", "bool"),
                                      ("float64", "int16"), ("int64", "uint16"),
                                      ("int32", "uint32"), ("int8", "uint64"),
                                      ("uint64", "float64"), ("uint32", "int16")])
def test_astype(device, src, dst):
    if not {ember.dtype.as_dtype(src), ember.dtype.as_dtype(dst)} <= (
            ember.get_backend(device).caps.dtypes):
        pytest.skip(f"{device} holds no {src} or no {dst}")
    values = [0, 1.75, 3.5 if src.startswith("u") else -3.5, 100]
    a = np.array(values, dtype=src) if src != "bool" else np.array([True, False])
    x = xp.asarray(a, device=device)
    got = xp.astype(x, getattr(xp, dst))
    assert got.dtype == getattr(xp, dst)
    if not (src.startswith("float") and dst in ("int8", "uint8")):
        assert np.asarray(got).tolist() == a.astype(dst).tolist()


def test_astype_copy_is_a_new_array(device):
    x = xp.asarray([1.0, 2.0], device=device)
    y = xp.astype(x, xp.float32, copy=True)
    y[0] = 5.0
    assert x.tolist() == [1.0, 2.0]
