"""Data type functions and type promotion against the standard's table (tests/array_api/
array_api_spec.py), for array-array operations, functions and ``result_type``."""

import itertools

import numpy as np
import pytest

import ember.array_api as xp
from array_api_spec import promotion

HAVE = ["bool", "int8", "int32", "int64", "uint8", "float32", "float64"]
PAIRS = [(a, b) for a, b in itertools.product(HAVE, HAVE) if promotion(a, b) is not None]
# the standard's int16 for uint8 with int8 is missing: the narrowest type Ember has that
# holds both ranges stands in
SUBSTITUTE = {"int16": "int32"}


@pytest.mark.parametrize("a, b", PAIRS)
def test_result_type_follows_the_table(a, b):
    want = SUBSTITUTE.get(promotion(a, b), promotion(a, b))
    assert str(xp.result_type(getattr(xp, a), getattr(xp, b))) == want


@pytest.mark.parametrize("a, b", PAIRS)
def test_binary_operator_promotes_like_the_table(device, a, b):
    want = SUBSTITUTE.get(promotion(a, b), promotion(a, b))
    x = xp.ones((2,), dtype=getattr(xp, a), device=device)
    y = xp.ones((2,), dtype=getattr(xp, b), device=device)
    if a == "bool":
        assert str((x == y).dtype) == "bool"
        return
    assert str((x + y).dtype) == want
    assert str(xp.multiply(x, y).dtype) == want
    assert str(xp.concat([x, y]).dtype) == want


@pytest.mark.parametrize("dtype, scalar", [("int8", 3), ("uint8", 200), ("float32", 0.1),
                                           ("float64", 2), ("bool", True)])
def test_python_scalars_are_weak(device, dtype, scalar):
    x = xp.zeros((2,), dtype=getattr(xp, dtype), device=device)
    assert (x + scalar if dtype != "bool" else x & scalar).dtype == getattr(xp, dtype)
    assert xp.result_type(x, scalar) == getattr(xp, dtype)


@pytest.mark.parametrize("a, b", list(itertools.product(HAVE, HAVE)))
def test_can_cast_is_promotion_to_the_target(a, b):
    want = a == b or (promotion(a, b) == b) or (a in ("int8", "int32", "int64", "uint8")
                                                 and b.startswith("float"))
    assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_finfo(dtype):
    got, ref = xp.finfo(getattr(xp, dtype)), np.finfo(dtype)
    assert (got.bits, got.eps, got.max, got.min) == (ref.bits, float(ref.eps), float(ref.max),
                                                     float(ref.min))
    assert got.smallest_normal == float(ref.smallest_normal)
    assert got.dtype == getattr(xp, dtype)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
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
                                      ("bool", "uint8"), ("int32", "int8"), ("float32", "bool")])
def test_astype(device, src, dst):
    a = np.array([0, 1.75, -3.5, 100], dtype=src) if src != "bool" else np.array([True, False])
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
