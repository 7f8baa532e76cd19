"""A Python int that doesn't fit the integer dtype it is given is refused, never wrapped
(numpy 2 and PyTorch refuse too): in ``ember.tensor(..., dtype=)`` and as a weak scalar
beside an integer tensor. Casting a tensor (``astype``) still wraps, as numpy's does. The
expected values come from numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.array_api as xp
from ember.errors import DTypeError

HOST = ["numpy", "python", "wasm"]


@pytest.mark.parametrize("backend", HOST)
@pytest.mark.parametrize(("value", "dtype"), [(300, "int8"), (-1, "uint8"), ([1, 2**31], "int32"),
                                              (2**63, "int64")])
def test_tensor_refuses_a_python_int_out_of_range(backend, value, dtype):
    with pytest.raises(OverflowError):  # numpy's answer
        np.array(value, dtype=dtype)
    with pytest.raises(DTypeError, match=f"out of range for {dtype}"):
        ember.tensor(value, dtype=getattr(ember, dtype), backend=backend)


@pytest.mark.parametrize("backend", HOST)
def test_in_range_values_and_astype_keep_numpy_semantics(backend):
    x = ember.tensor([-128, 127], dtype=ember.int8, backend=backend)
    assert x.tolist() == np.array([-128, 127], dtype=np.int8).tolist()
    wrapped = ember.tensor([300, -129], backend=backend).astype(ember.int8)
    assert wrapped.tolist() == np.array([300, -129]).astype(np.int8).tolist()


@pytest.mark.parametrize("backend", HOST)
@pytest.mark.parametrize("op", ["add", "mul", "lt", "where"])
def test_a_weak_scalar_out_of_range_is_refused(backend, op):
    x = ember.tensor([1, 2], dtype=ember.int8, backend=backend)
    run = {"add": lambda: x + 300, "mul": lambda: x * -1000, "lt": lambda: x < 300,
           "where": lambda: ember.where(x > 1, x, 300)}[op]
    with pytest.raises(DTypeError, match="out of range for int8"):
        run()
    with np.errstate(over="ignore"):  # a scalar in range whose sum leaves it: wraps
        assert (x + 127).tolist() == (np.array([1, 2], np.int8) + 127).tolist() == [-128, -127]


@pytest.mark.parametrize("backend", HOST)
def test_clip_with_bounds_beyond_the_dtype_is_exact(backend):
    x = xp.asarray([-5, 1, 100], dtype=xp.int8, device=ember.get_backend(backend).device)
    got = xp.clip(x, -1000, 50).tolist()
    assert got == np.clip(np.array([-5, 1, 100], np.int8), -1000, 50).tolist()
