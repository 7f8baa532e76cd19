"""The dense fast path of the wgpu map kernel (``map_flat.wgsl``): vec4 loads, unaligned
offsets, broadcast values and packed outputs, each against numpy, at sizes that are not
multiples of 4. Skipped when wgpu-py or an adapter is missing."""

from __future__ import annotations

import pytest
from _wgpu import B, down, np, up
from ember import dtype as dt

RNG = np.random.default_rng(7)
SIZES = [1, 3, 4, 5, 255, 1027]


def flat_dispatches(fn):
    """Run ``fn`` and return how many map_flat pipelines the cache gained (compile check)."""
    before = {k for k in B.rt.lib._pipelines if k[0] == "map_flat"}
    out = fn()
    after = {k for k in B.rt.lib._pipelines if k[0] == "map_flat"}
    return out, after - before


@pytest.mark.parametrize("n", SIZES)
def test_dense_float_add_and_int_mul(n):
    a, b = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(down(B.float_add(up(a), up(b))), a + b)
    i, j = RNG.integers(-1000, 1000, n, dtype=np.int32), RNG.integers(-9, 9, n, dtype=np.int32)
    np.testing.assert_array_equal(down(B.int_mul(up(i), up(j))), i * j)


@pytest.mark.parametrize("start", [1, 2, 3, 4])
def test_unaligned_and_aligned_offsets(start):
    a = RNG.standard_normal(1030).astype(np.float32)
    b = RNG.standard_normal(1030).astype(np.float32)
    n = 1021
    pa = B.slice(up(a), ((start, start + n, 1),))
    pb = B.slice(up(b), ((0, n, 1),))
    np.testing.assert_array_equal(down(B.float_sub(pa, pb)), a[start:start + n] - b[:n])


@pytest.mark.parametrize("n", SIZES)
def test_broadcast_value(n):
    a = RNG.standard_normal(n).astype(np.float32)
    s = up(np.array([2.5], np.float32))
    got = down(B.float_mul(up(a), B.expand(s, (n,))))
    np.testing.assert_array_equal(got, a * np.float32(2.5))
    # a slice of one element (offset 3) broadcast
    v = B.slice(up(np.arange(8, dtype=np.float32)), ((3, 4, 1),))
    np.testing.assert_array_equal(down(B.float_add(up(a), B.expand(v, (n,)))), a + 3)


@pytest.mark.parametrize("n", SIZES)
def test_packed_outputs_and_inputs(n):
    a, b = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    lt, _ = flat_dispatches(lambda: B.float_lt(up(a), up(b)))
    np.testing.assert_array_equal(down(lt), a < b)
    np.testing.assert_array_equal(down(B.bool_xor(lt, up(a > 0))), (a < b) ^ (a > 0))
    i8 = RNG.integers(-128, 128, n, dtype=np.int8)
    j8 = RNG.integers(-128, 128, n, dtype=np.int8)
    np.testing.assert_array_equal(down(B.int_add(up(i8), up(j8))), i8 + j8)
    np.testing.assert_array_equal(down(B.cast(up(i8), dt.float32)), i8.astype(np.float32))
    if dt.float16 in B.caps.dtypes:
        h = RNG.standard_normal(n).astype(np.float16)
        np.testing.assert_array_equal(down(B.float_add(up(h), up(h))), h + h)
        np.testing.assert_array_equal(down(B.cast(up(a), dt.float16)), a.astype(np.float16))


def test_strided_views_still_use_the_general_kernel(monkeypatch):
    from ember.backends.wgpu import launch

    taken = []
    real = launch._map_flat
    monkeypatch.setattr(launch, "_map_flat", lambda *a: taken.append(real(*a)) or taken[-1])
    a = RNG.standard_normal((33, 17)).astype(np.float32)
    np.testing.assert_array_equal(down(B.float_neg(B.permute(up(a), (1, 0)))), -a.T)
    assert taken == []  # more than one dim after collapsing: not even tried
    np.testing.assert_array_equal(down(B.float_neg(up(a))), -a)
    assert taken == [True]
