"""``TensorData`` from Python values: the one-call path for plain numbers stores exactly what
the per-element conversion stores (numpy's ``astype`` is the independent reference)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ember import dtype as dt
from ember.tensordata import TensorData, convert_scalar, pack

EDGES = [0, 1, -1, 2**7, 2**8 - 1, 2**15, 2**31 - 1, -(2**31), 2**53 + 1,
         0.0, -0.0, 0.1, 1.5, -2.5, 1e-45, 3.4028235e38, 3.4028236e38, 1e40, -1e40,
         math.inf, -math.inf, math.nan]


def _slow(values, dtype):
    return pack([convert_scalar(v, dtype) for v in values], dtype)


@pytest.mark.parametrize("name", ["float32", "float64", "int32", "int64", "uint8", "int8",
                                  "float16", "bool"])
def test_plain_numbers_pack_as_the_per_element_rules(name):
    dtype = dt.as_dtype(name)
    rng = np.random.default_rng(0)
    cases = [[float(v) for v in rng.standard_normal(50) * 1e3],
             [int(v) for v in rng.integers(-300, 300, 50)], [1, 2.5, 3], EDGES]
    for values in cases:
        try:
            want = _slow(values, dtype)
        except Exception as e:  # noqa: BLE001 - the fast path must fail the same way
            with pytest.raises(type(e)):
                TensorData.from_values(values, (len(values),), dtype)
            continue
        assert TensorData.from_values(values, (len(values),), dtype).buffer == want


def test_float32_rounding_matches_numpy():
    values = [0.1, 1 / 3, 3.4028235e38, 3.4028236e38, 1e40, -1e-46, 16777217.0]
    got = TensorData.from_values(values, (len(values),), dt.float32).values()
    with np.errstate(over="ignore"):
        want = np.array(values, dtype=np.float64).astype(np.float32).tolist()
    assert got == want


def test_flat_and_nested_lists_agree():
    flat = TensorData.from_list([1.0, 2.0, 3.0, 4.0])
    nested = TensorData.from_list([[1.0, 2.0], [3.0, 4.0]])
    assert flat.shape == (4,) and nested.shape == (2, 2) and flat.buffer == nested.buffer
    assert TensorData.from_list([1, 2, 3]).dtype == dt.default_int
