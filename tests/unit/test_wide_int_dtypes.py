"""int16, uint16, uint32 and uint64 on the backends that hold them (numpy, python): values,
wrap-around, reductions and casts against numpy on the same inputs; the backends without
them (wasm, wgpu) refuse them with DTypeError and compute uint8 with int8 in int32."""

import warnings

import numpy as np
import pytest

import ember
from ember.errors import DTypeError

WIDE = ["int16", "uint16", "uint32", "uint64"]
HOSTS = ["numpy", "python"]
RNG = np.random.default_rng(36)


def _draw(dtype, n=40):
    info = np.iinfo(dtype)
    edges = np.array([info.min, info.max, 0, 1], dtype=dtype)
    return np.concatenate([edges, RNG.integers(info.min, info.max, n, dtype=dtype,
                                               endpoint=True)])


@pytest.mark.parametrize("backend", HOSTS)
@pytest.mark.parametrize("dtype", WIDE)
def test_arithmetic_wraps_like_numpy(backend, dtype):
    a, b = _draw(dtype), _draw(dtype)[::-1].copy()
    b[b == 0] = 3
    x, y = ember.tensor(a, backend=backend), ember.tensor(b, backend=backend)
    with np.errstate(all="ignore"):
        pairs = [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x // y, a // b),
                 (x % y, a % b), (-x, -a), (x ** 3, a ** 3), (x << 5, a << np.array(5, dtype))]
    for got, want in pairs:
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("backend", HOSTS)
@pytest.mark.parametrize("dtype", WIDE)
def test_sums_accumulate_like_numpy(backend, dtype):
    a = _draw(dtype).reshape(4, 11)
    acc = np.uint64 if dtype == "uint64" else np.int64  # int64 can't hold uint64's values
    x = ember.tensor(a, backend=backend)
    for got, want in [(x.sum(), a.sum(dtype=acc)), (x.sum(dim=0), a.sum(0, dtype=acc)),
                      (x.cumsum(1), a.cumsum(1, dtype=acc)), (x.max(dim=1).values, a.max(1))]:
        assert got.dtype.name == np.dtype(got.numpy().dtype).name == np.dtype(want.dtype).name
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("backend", HOSTS)
@pytest.mark.parametrize("dtype", WIDE)
def test_casts_match_numpy(backend, dtype):
    # in-range values and negative ones numpy wraps (-1.5 → 65535 for uint16); NaN, inf and
    # out-of-range values of uint32/uint64 are left out: C leaves them undefined
    floats = np.array([0.0, -0.0, 2.75, -1.5, -70000.5, 70000.5, 65535.9, 4294967295.0,
                       1e19, -3e9], dtype=np.float64)
    info = np.iinfo(dtype)
    keep = floats[(floats > -(2.0 ** 31)) & (floats < (info.max + 1.0))]
    if dtype in ("int16", "uint16"):
        keep = floats[np.abs(floats) < 2.0 ** 31]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = keep.astype(dtype)
    got = ember.tensor(keep, backend=backend).astype(dtype)
    np.testing.assert_array_equal(got.numpy(), want)
    ints = _draw(dtype)
    for target in ("int8", "uint8", "int32", "int64", "float32", "float64", *WIDE):
        np.testing.assert_array_equal(
            ember.tensor(ints, backend=backend).astype(target).numpy(), ints.astype(target))


def test_uint64_with_a_signed_integer_is_refused():
    a = ember.tensor(np.array([2**63], dtype=np.uint64))
    with pytest.raises(DTypeError, match="uint64 and int8 have no common integer dtype"):
        a + ember.tensor(np.array([1], dtype=np.int8))


@pytest.mark.parametrize("backend", ["wasm", "wgpu"])
def test_backends_without_them_refuse_and_widen(backend):
    try:
        b = ember.get_backend(backend)
    except Exception as e:  # noqa: BLE001 - the reason is reported
        pytest.skip(f"{backend} backend not available here: {e}")
    for dtype in WIDE:
        with pytest.raises(DTypeError, match=f"has no {dtype}"):
            ember.tensor(np.zeros(2, dtype=dtype), backend=b)
        with pytest.raises(DTypeError, match=dtype):
            ember.zeros(2, dtype="int32", backend=b).astype(dtype)
    u, i = np.array([250, 3], np.uint8), np.array([-100, 7], np.int8)
    got = ember.tensor(u, backend=b) + ember.tensor(i, backend=b)
    # the standard's int16, computed in the narrowest type this backend holds with its range
    assert got.dtype == ember.int32 and got.tolist() == (u.astype(np.int32) + i).tolist()
