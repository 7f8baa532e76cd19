"""Conversion: to_data, tolist, item, numpy, __array__, from_numpy, repr — on every backend."""

from __future__ import annotations

import ember
import numpy as np
import pytest

DTYPES = ["float32", "float16", "float64", "int32", "int64", "int8", "uint8", "bool"]


def _needs(backend, dtype: str) -> None:
    if dtype not in {d.name for d in backend.caps.dtypes}:
        pytest.skip(f"backend {backend.name} has no {dtype} (caps)")


def _sample(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([[True, False, True], [False, False, True]])
    if dtype in ("int8", "uint8"):
        return np.array([[0, 1, 127], [5, 100, 2]], dtype)
    return np.array(
        [[0.5, -1.25, 3.0], [1e3, -0.0, 7.0]] if dtype[0] == "f" else [[0, -1, 2**30], [5, -7, 9]],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_to_data_roundtrip(backend, dtype):
    _needs(backend, dtype)
    a = _sample(dtype)
    t = ember.tensor(a, backend=backend)
    d = t.to_data()
    assert d.shape == a.shape and d.dtype.name == dtype
    assert d.buffer == a.astype(a.dtype.newbyteorder("<")).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_and_array_protocol(backend, dtype):
    _needs(backend, dtype)
    a = _sample(dtype)
    t = ember.tensor(a, backend=backend)
    for out in (t.numpy(), np.asarray(t)):
        assert isinstance(out, np.ndarray) and out.dtype == a.dtype
        np.testing.assert_array_equal(out, a)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("dtype", DTYPES)
def test_tolist(backend, dtype):
    _needs(backend, dtype)
    a = _sample(dtype)
    got = ember.tensor(a, backend=backend).tolist()
    assert got == a.tolist()
    kind = {"f": float, "i": int, "u": int, "b": bool}[a.dtype.kind]
    assert all(type(v) is kind for row in got for v in row)


def test_tolist_0d_and_empty(backend):
    assert ember.tensor(np.float32(2.5), backend=backend).tolist() == 2.5
    assert ember.tensor(np.zeros((0,), "float32"), backend=backend).tolist() == []
    assert ember.tensor(np.zeros((2, 0), "int64"), backend=backend).tolist() == [[], []]


@pytest.mark.parametrize(
    "value,dtype,kind",
    [
        (1.5, "float32", float),
        (-3, "int64", int),
        (True, "bool", bool),
        (200, "uint8", int),
        (0.25, "float16", float),
    ],
)
def test_item(backend, value, dtype, kind):
    _needs(backend, dtype)
    t = ember.tensor(np.array(value, dtype), backend=backend)
    assert type(t.item()) is kind and t.item() == value
    one = ember.tensor(np.array([[value]], dtype), backend=backend)
    assert one.item() == value


def test_item_needs_one_element(backend):
    with pytest.raises(ember.ShapeError, match="item"):
        ember.tensor(np.zeros(3, "float32"), backend=backend).item()


def test_scalar_conversions(backend):
    _needs(backend, "float64")
    t = ember.tensor(np.array(3.75, "float64"), backend=backend)
    assert float(t) == 3.75 and int(t) == 3 and bool(t) is True


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_keeps_dtype(backend, dtype):
    _needs(backend, dtype)
    a = _sample(dtype)
    t = ember.from_numpy(a, backend=backend)
    assert t.dtype.name == dtype and t.shape == a.shape
    np.testing.assert_array_equal(t.numpy(), a)


def test_from_numpy_noncontiguous_and_big_endian(backend):
    a = np.arange(24, dtype="float32").reshape(4, 6)
    for view in (a.T, a[::2, 1::3], a[:, ::-1], np.broadcast_to(a[:1], (3, 6))):
        np.testing.assert_array_equal(ember.from_numpy(view, backend=backend).numpy(), view)
    big = np.arange(5, dtype=">i4")
    t = ember.from_numpy(big, backend=backend)
    assert t.dtype == ember.int32 and t.tolist() == [0, 1, 2, 3, 4]


def test_noncontiguous_to_numpy(backend):
    a = np.arange(12, dtype="int32").reshape(3, 4)
    t = ember.tensor(a, backend=backend)
    np.testing.assert_array_equal(t.transpose(0, 1).numpy(), a.T)
    np.testing.assert_array_equal(t[:, ::2].numpy(), a[:, ::2])
    np.testing.assert_array_equal(t[:1].expand(3, 4).numpy(), np.broadcast_to(a[:1], (3, 4)))


def test_repr(backend):
    t = ember.tensor(np.array([[1.0, 2.5], [-3.0, 0.125]], "float32"), backend=backend)
    r = repr(t)
    for s in ("2.5", "-3", "0.125"):
        assert s in r
    ri = repr(ember.tensor(np.array([7, -8], "int8"), backend=backend))
    assert "7" in ri and "-8" in ri and "int8" in ri
    assert "nan" in repr(ember.tensor(np.array([np.nan], "float32"), backend=backend))
    assert repr(ember.tensor(np.float32(4.0), backend=backend))
    big = repr(ember.tensor(np.zeros((100, 100), "float32"), backend=backend))
    assert len(big) < 2000 and "..." in big


def test_repr_same_on_every_backend(backend):
    a = np.array([[1.0, 2.5, np.inf], [-3.0, 0.125, 1e-6]], "float32")
    ref = repr(ember.tensor(a, backend="numpy")) if "numpy" in ember.available_backends() else None
    if ref is None:
        pytest.skip("needs the numpy backend")

    # the values layout is the same everywhere; only a trailing ", backend=..." may differ
    def body(r: str) -> str:
        return r.split(", backend=")[0].rstrip(")")

    assert body(repr(ember.tensor(a, backend=backend))) == body(ref)


def test_to_other_backend(backend):
    a = np.array([1.5, -2.0], "float32")
    t = ember.tensor(a, backend=backend)
    for name in ("numpy", "python"):
        if name in ember.available_backends():
            moved = t.to(name)
            assert moved.backend.name == name and moved.tolist() == a.tolist()
