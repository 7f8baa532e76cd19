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
