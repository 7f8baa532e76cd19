"""Random creation and dropout: exact Philox bits, reproducibility, the same numbers on every
backend, distribution sanity. The Philox reference below is written independently of
ember.random from the algorithm that module documents."""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F
import numpy as np
import pytest

from .backends import Unavailable, make_backend

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)


def philox_words(counters: np.ndarray, seed: int) -> np.ndarray:
    """Philox4x32-10 of 64-bit counters (high words zero) → (n, 4) uint32 words."""
    c = counters.astype(np.uint64)
    c0, c1 = c & MASK, c >> np.uint64(32)
    c2 = c3 = np.zeros_like(c0)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0 = np.uint64(M0) * c0
        p1 = np.uint64(M1) * c2
        c0, c1, c2, c3 = (
            (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
            p1 & MASK,
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
            p0 & MASK,
        )
        k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=1)


def reference_uniform(n: int, seed: int, offset: int = 0) -> np.ndarray:
    words = philox_words(np.arange(offset, offset + (n + 3) // 4), seed).reshape(-1)[:n]
    return (words >> np.uint64(8)).astype(np.float64) * 2.0**-24


def _needs(backend, dtype: str) -> None:
    if dtype not in {d.name for d in backend.caps.dtypes}:
        pytest.skip(f"backend {backend.name} has no {dtype} (caps)")


def _np(t) -> np.ndarray:
    return np.asarray(t.to_data().tolist(), dtype=np.float64)


def test_rand_matches_philox_reference(backend):
    for seed, shape in ((0, (7,)), (12345, (3, 5)), (2**40 + 3, (2, 2, 2))):
        x = ember.rand(*shape, generator=ember.Generator(seed), backend=backend)
        assert x.shape == shape and x.dtype == ember.float32
        want = reference_uniform(math.prod(shape), seed).reshape(shape)
        np.testing.assert_array_equal(_np(x), want)


def test_rand_advances_the_stream(backend):
    g = ember.Generator(9)
    a = ember.rand(5, generator=g, backend=backend)
    b = ember.rand(6, generator=g, backend=backend)
    # 5 numbers use 2 counters (4 per counter), so the second draw starts at counter 2
    np.testing.assert_array_equal(_np(b), reference_uniform(6, 9, offset=2))
    assert not np.array_equal(_np(a)[:5], _np(b)[:5])


@pytest.mark.parametrize("fn", ["rand", "randn", "randint", "bernoulli"])
def test_seed_reproducible(backend, fn):
    def draw():
        if fn == "randint":
            return ember.randint(0, 10, (20,), backend=backend)
        if fn == "bernoulli":
            return ember.bernoulli(ember.full((20,), 0.5, backend=backend))
        return getattr(ember, fn)(4, 5, backend=backend)

    ember.seed(123)
    a, a2 = draw(), draw()
    ember.seed(123)
    b = draw()
    assert a.tolist() == b.tolist()
    assert a.tolist() != a2.tolist()
    g1, g2 = ember.Generator(77), ember.Generator(77)
    kw = {"generator": g1}
    if fn == "bernoulli":
        x = ember.bernoulli(ember.full((30,), 0.5, backend=backend), **kw)
        y = ember.bernoulli(ember.full((30,), 0.5, backend=backend), generator=g2)
    elif fn == "randint":
        x = ember.randint(0, 10, (30,), backend=backend, **kw)
        y = ember.randint(0, 10, (30,), backend=backend, generator=g2)
    else:
        x = getattr(ember, fn)(30, backend=backend, **kw)
        y = getattr(ember, fn)(30, backend=backend, generator=g2)
    assert x.tolist() == y.tolist()


def _other_backend(backend):
    for name in ("numpy", "python"):
        try:
            other = make_backend(name)
        except Unavailable:
            continue
        if other is not backend:
            return other
    pytest.skip("needs a second backend (python or numpy) to compare with")


@pytest.mark.parametrize("fn", ["rand", "randn", "randint", "bernoulli", "rand_f64", "rand_f16"])
def test_same_numbers_on_every_backend(backend, fn):
    other = _other_backend(backend)
    if fn.startswith("rand_f"):
        _needs(backend, "float64" if fn == "rand_f64" else "float16")

    def draw(b):
        g = ember.Generator(2024)
        if fn == "randint":
            return ember.randint(-5, 1000, (64,), generator=g, backend=b)
        if fn == "bernoulli":
            return ember.bernoulli(ember.full((64,), 0.3, backend=b), generator=g)
        if fn == "rand_f64":
            return ember.rand(64, generator=g, dtype="float64", backend=b)
        if fn == "rand_f16":
            return ember.rand(64, generator=g, dtype="float16", backend=b)
        return getattr(ember, fn)(8, 8, generator=g, backend=b)

    a, b = draw(backend), draw(other)
    assert a.dtype == b.dtype and a.shape == b.shape
    if fn == "randn":  # Box-Muller goes through log/cos: allow the last float32 bit
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(_np(a), _np(b))


N = 20000


def test_rand_distribution(backend):
    x = _np(ember.rand(N, generator=ember.Generator(1), backend=backend))
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005
    hist = np.histogram(x, bins=10, range=(0, 1))[0]
    assert hist.min() > N / 10 * 0.9


def test_rand_f16_below_one(backend):
    _needs(backend, "float16")
    x = _np(ember.rand(N, generator=ember.Generator(2), dtype="float16", backend=backend))
    assert x.min() >= 0.0 and x.max() < 1.0


def test_randn_distribution(backend):
    x = ember.randn(N, generator=ember.Generator(3), backend=backend)
    assert x.dtype == ember.float32
    v = _np(x)
    assert np.isfinite(v).all()
    assert abs(v.mean()) < 0.03 and abs(v.std() - 1) < 0.03
    assert abs(np.mean(np.abs(v) < 1) - 0.6827) < 0.02
    odd = _np(ember.randn(3, 5, generator=ember.Generator(3), backend=backend))
    assert odd.shape == (3, 5)


def test_randint_distribution(backend):
    x = ember.randint(-3, 7, (N,), generator=ember.Generator(4), backend=backend)
    assert x.dtype == ember.int64
    v = np.asarray(x.tolist())
    counts = np.bincount(v + 3, minlength=10)
    assert v.min() == -3 and v.max() == 6 and len(counts) == 10
    assert counts.min() > N / 10 * 0.85
    y = ember.randint(5, (4, 2), generator=ember.Generator(4), dtype="int32", backend=backend)
    assert y.shape == (4, 2) and y.dtype == ember.int32


def test_bernoulli_distribution(backend):
    p = ember.tensor(np.array([0.0, 0.3, 1.0] * (N // 3), "float32"), backend=backend)
    x = ember.bernoulli(p, generator=ember.Generator(5))
    assert x.dtype == ember.float32
    v = np.asarray(x.tolist()).reshape(-1, 3)
    assert set(np.unique(v)) <= {0.0, 1.0}
    assert (v[:, 0] == 0).all() and (v[:, 2] == 1).all()
    assert abs(v[:, 1].mean() - 0.3) < 0.02


def test_dropout_statistics(backend):
    x = ember.tensor(np.full((N,), 2.0, "float32"), backend=backend)
    y = F.dropout(x, 0.25, training=True, generator=ember.Generator(6))
    assert y.dtype == ember.float32 and y.shape == (N,)
    v = _np(y)
    kept = v != 0
    np.testing.assert_allclose(v[kept], 2.0 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.015
    assert abs(v.mean() - 2.0) < 0.05  # scaling keeps the expectation


def test_dropout_reproducible(backend):
    x = ember.tensor(np.arange(64, dtype="float32"), backend=backend)
    a = F.dropout(x, 0.5, generator=ember.Generator(8))
    b = F.dropout(x, 0.5, generator=ember.Generator(8))
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_dropout_eval_identity(backend, p):
    x = np.linspace(-3, 3, 12).astype("float32").reshape(3, 4)
    y = F.dropout(ember.tensor(x, backend=backend), p, training=False)
    np.testing.assert_array_equal(_np(y), x)


def test_dropout_edges(backend):
    x = ember.tensor(np.linspace(1, 2, 10).astype("float32"), backend=backend)
    np.testing.assert_array_equal(_np(F.dropout(x, 0.0)), _np(x))
    assert (_np(F.dropout(x, 1.0)) == 0).all()


def test_dropout_module_eval(backend):
    nn = pytest.importorskip("ember.nn")
    drop = nn.Dropout(0.5)
    drop.eval()
    x = ember.tensor(np.arange(6, dtype="float32"), backend=backend)
    np.testing.assert_array_equal(_np(drop(x)), np.arange(6))
