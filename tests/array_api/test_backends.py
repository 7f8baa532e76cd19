"""The namespace on the GPU (wgpu, lavapipe here) and the compiled browser CPU path (wasm):
one pass over every family of functions in float32/int32, against numpy."""

import numpy as np
import pytest

import ember
import ember.array_api as xp
from array_api_support import assert_like


@pytest.fixture(params=["wgpu", "wasm"])
def gpu_or_wasm(request):
    if request.param not in ember.available_backends():
        pytest.skip(f"{request.param} backend not available here")
    return request.param


def test_every_family_runs(gpu_or_wasm):
    dev = gpu_or_wasm
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    i = rng.integers(-20, 20, size=(3, 4)).astype(np.int32)
    x, n = xp.asarray(a, device=dev), xp.asarray(i, device=dev)
    assert x.backend.name == dev
    checks = [
        (xp.sin(x), np.sin(a)), (xp.add(x, 1.5), a + np.float32(1.5)),
        (xp.floor_divide(n, 3), i // 3), (xp.remainder(n, 7), i % 7),
        (xp.bitwise_and(n, 6), i & 6), (xp.bitwise_left_shift(n, 2), i << 2),
        (xp.logaddexp(x, x), np.logaddexp(a, a)), (xp.clip(x, -0.5, 0.5), np.clip(a, -0.5, 0.5)),
        (xp.sum(n, axis=1), i.sum(axis=1, dtype=np.int64)), (xp.mean(x, axis=0), a.mean(0)),
        (xp.var(x, axis=1, correction=1), a.var(1, ddof=1)), (xp.max(x), a.max()),
        (xp.cumulative_sum(x, axis=1), np.cumsum(a, axis=1)),
        (xp.sort(n, axis=1), np.sort(i, axis=1)),
        (xp.argsort(n, axis=1), np.argsort(i, axis=1, kind="stable")),
        (xp.unique_values(n), np.unique(i)), (xp.argmax(x, axis=1), a.argmax(1)),
        (xp.take(x, xp.asarray([2, 0], device=dev), axis=1), a[:, [2, 0]]),
        (xp.where(x > 0, x, 0.0), np.where(a > 0, a, np.float32(0))),
        (xp.concat([x, x], axis=0), np.concatenate([a, a])),
        (xp.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1)),
        (xp.matmul(x, xp.matrix_transpose(x)), a @ a.T),
        (xp.linalg.vector_norm(x, axis=1), np.linalg.norm(a, axis=1)),
        (xp.linalg.solve(xp.eye(3, device=dev) * 2.0, x), a / 2),
        (xp.searchsorted(xp.asarray([0.0, 1.0], device=dev), x), np.searchsorted([0.0, 1.0],
                                                                                  a)),
        (xp.linspace(0, 1, 5, device=dev), np.linspace(0, 1, 5, dtype=np.float32)),
        (xp.eye(3, k=1, device=dev), np.eye(3, k=1, dtype=np.float32)),
    ]
    for got, want in checks:
        want = np.asarray(want)
        if want.dtype.kind == "i" and want.dtype != np.int32:
            want = want.astype(got.dtype.name)
        assert got.backend.name == dev
        assert_like(got, want.astype(got.dtype.name), rtol=1e-4)


INT_DTYPES = ["int8", "uint8", "int32", "int64"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("backend", ["numpy", "python", "wasm", "wgpu"])
def test_integer_bitwise_operators(backend, dtype):
    """``~ & | ^ << >>`` on integers: numpy's values and dtype on every backend, shift counts
    outside [0, width) included (0 for <<, the sign for >>)."""
    if backend not in ember.available_backends():
        pytest.skip(f"{backend} backend not available here")
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = np.array([5, lo, hi, 0, 100, lo // 3, 1, 7], dtype=dtype)
    bits = np.iinfo(dtype).bits
    counts = np.array([0, 1, 3, bits - 1, bits, 31, 2, 5], dtype=dtype) % (hi if hi < 64 else 64)
    other = np.array([3, -1 if lo else 255, 12, 7, 0, hi, lo, 9], dtype=dtype)
    if backend == "wgpu" and dtype == "int64":  # wgpu holds int64 in 32 bits: results in range
        a = np.array([5, -3, 100, 0, -100, -7, 1, 7], dtype=dtype)
        other, counts = other.clip(-2**31, 2**31 - 1), counts.clip(0, 20)
    x, c, y = (ember.tensor(v, backend=backend) for v in (a, counts, other))
    cases = {
        "~": (~x, np.invert(a)), "&": (x & y, a & other), "|": (x | y, a | other),
        "^": (x ^ y, a ^ other), "<<": (x << c, np.left_shift(a, counts)),
        ">>": (x >> c, np.right_shift(a, counts)), "& scalar": (x & 6, a & np.array(6, dtype)),
        "scalar <<": (1 << c, np.left_shift(np.array(1, dtype), counts)),
    }
    for name, (got, want) in cases.items():
        assert got.backend.name == backend, name
        assert got.dtype.name == str(want.dtype), f"{name}: {got.dtype}, expected {want.dtype}"
        assert got.tolist() == want.tolist(), name


@pytest.mark.parametrize("backend", ["numpy", "python"])
def test_bitwise_operators_refuse_floats(backend):
    x = ember.tensor([1.5, 2.0], backend=backend)
    n = ember.tensor([1, 2], backend=backend)
    for op in (lambda: ~x, lambda: x & x, lambda: x | 1, lambda: x ^ x, lambda: x << 1,
               lambda: 1 >> x, lambda: n & 1.5):
        with pytest.raises(ember.DTypeError, match="take integer or bool operands, got "
                                                   "(float32|a Python float)"):
            op()
