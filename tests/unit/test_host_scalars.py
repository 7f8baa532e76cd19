"""A 0-d tensor on a host backend joins tensors of another backend (PyTorch's rule for 0-d CPU
tensors): binary ops, comparisons, ``where`` and ``x[i] = v`` move it to the other backend.
Anything else that mixes backends still raises BackendMismatchError. Expected values are numpy
float64 on the same inputs."""

import numpy as np
import pytest

import ember
from ember.errors import BackendMismatchError

HOSTS = [b for b in ("numpy", "python", "wasm") if b in ember.available_backends()]
PAIRS = [(a, b) for a in HOSTS for b in HOSTS if a != b]
X = np.array([1.5, -2.0, 4.25])


def _vector(backend):
    return ember.tensor(X, backend=backend)


@pytest.mark.parametrize(("arrays", "scalar"), PAIRS)
def test_a_0d_host_tensor_joins_the_other_backend(arrays, scalar):
    x, s = _vector(arrays), ember.tensor(2.5, dtype="float64", backend=scalar)
    for got, want in [(x * s, X * 2.5), (s - x, 2.5 - X), (x / s, X / 2.5),
                      (ember.maximum(s, x), np.maximum(2.5, X)), (x < s, X < 2.5)]:
        assert got.backend is x.backend
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize(("arrays", "scalar"), PAIRS)
def test_where_and_setitem_take_a_0d_host_tensor(arrays, scalar):
    x = _vector(arrays)
    pick = ember.where(ember.tensor(False, backend=scalar), x, ember.tensor(-1.0, backend=scalar))
    assert pick.backend is x.backend
    np.testing.assert_array_equal(pick.numpy(), np.full(3, -1.0))
    x[1] = ember.tensor(7.0, dtype="float64", backend=scalar)
    assert x.backend.name == arrays
    np.testing.assert_array_equal(x.numpy(), [1.5, 7.0, 4.25])


@pytest.mark.parametrize(("arrays", "scalar"), PAIRS)
def test_a_0d_target_of_setitem_moves_to_the_value_backend(arrays, scalar):
    out = ember.tensor(0.25, dtype="float64", backend=scalar)
    out[ember.tensor(True, backend=scalar)] = ember.tensor([3.0], dtype="float64", backend=arrays)
    assert out.backend.name == arrays and out.item() == 3.0


def test_two_0d_tensors_meet_off_the_default_backend():
    other = next(b for b in HOSTS if b != ember.default_backend().name)
    for a, b in [(ember.tensor(3.0), ember.tensor(0.5, backend=other)),
                 (ember.tensor(3.0, backend=other), ember.tensor(0.5))]:
        got = a * b
        assert got.backend.name == other and got.item() == 1.5


@pytest.mark.parametrize(("arrays", "other"), PAIRS)
def test_tensors_with_dims_never_move(arrays, other):
    x = _vector(arrays)
    for y in (ember.tensor([2.0], backend=other), ember.tensor(X, backend=other)):
        with pytest.raises(BackendMismatchError, match=f"{arrays}.*{other}|{other}.*{arrays}"):
            x + y
        with pytest.raises(BackendMismatchError):
            ember.where(x > 0, y, x)
        with pytest.raises(BackendMismatchError):
            x[0:1] = y


def test_a_0d_tensor_recording_gradients_does_not_move():
    # moving it would cut it off its gradient record: an error, not a lost gradient
    w = ember.tensor(2.0, backend="autodiff-numpy")
    with pytest.raises(BackendMismatchError, match="autodiff-numpy"):
        ember.tensor(X, backend="python") * w
