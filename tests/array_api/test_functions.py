"""Creation, manipulation, indexing, searching, sorting and set functions against numpy."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember.array_api as xp
from array_api_support import arrays, assert_like, nonempty, to_ember, to_numpy


# ------------------------------------------------------------------ creation
def test_creation_functions(device):
    assert_like(xp.arange(5, device=device), np.arange(5))
    assert_like(xp.arange(1.0, 2.0, 0.25, device=device), np.arange(1.0, 2.0, 0.25, "float32"))
    assert_like(xp.arange(10, 0, -3, device=device), np.arange(10, 0, -3))
    assert_like(xp.zeros((2, 3), device=device), np.zeros((2, 3), "float32"))
    assert_like(xp.ones(4, dtype=xp.int8, device=device), np.ones(4, "int8"))
    assert_like(xp.full((2,), True, device=device), np.full((2,), True))
    assert_like(xp.full((2,), 3, device=device), np.full((2,), 3, "int64"))
    assert_like(xp.eye(3, 4, k=1, device=device), np.eye(3, 4, k=1, dtype="float32"))
    assert_like(xp.eye(3, k=-2, dtype=xp.int32, device=device), np.eye(3, k=-2, dtype="int32"))
    assert_like(xp.linspace(0, 1, 5, device=device), np.linspace(0, 1, 5, dtype="float32"))
    assert_like(xp.linspace(0, 1, 4, endpoint=False, dtype=xp.float64, device=device),
                np.linspace(0, 1, 4, endpoint=False))
    assert xp.empty((0, 2), device=device).shape == (0, 2)
    a = np.arange(6.0).reshape(2, 3)
    x = to_ember(a, device)
    for name in ("zeros_like", "ones_like", "empty_like"):
        assert getattr(xp, name)(x).shape == (2, 3)
    assert_like(xp.full_like(x, 7, dtype=xp.int32), np.full_like(a, 7, dtype="int32"))
    assert_like(xp.tril(x, k=1), np.tril(a, 1))
    assert_like(xp.triu(x), np.triu(a))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(device, indexing):
    a, b = np.arange(3), np.arange(4.0)
    got = xp.meshgrid(to_ember(a, device), to_ember(b, device), indexing=indexing)
    for g, w in zip(got, np.meshgrid(a, b, indexing=indexing)):
        assert to_numpy(g).tolist() == w.tolist()


def test_asarray_copy_contract(device):
    x = xp.asarray([1.0, 2.0], device=device)
    assert xp.asarray(x) is x or xp.asarray(x).tolist() == x.tolist()
    assert xp.asarray(x, copy=False) is x
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1.0, 2.0], copy=False, device=device)
    y = xp.asarray(x, copy=True)
    y[0] = 9.0
    assert x.tolist() == [1.0, 2.0]
    assert xp.asarray([[True, False]], device=device).dtype == xp.bool
    assert xp.asarray(2**40, device=device).dtype == xp.int64


# ------------------------------------------------------------------ manipulation
@given(a=arrays("int32", nonempty, special=False), data=st.data())
def _manipulation(device, a, data):
    x = to_ember(a, device)
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    perm = data.draw(st.permutations(range(a.ndim)))
    assert_like(xp.flip(x, axis=ax), np.flip(a, ax))
    assert_like(xp.flip(x), np.flip(a))
    assert_like(xp.permute_dims(x, perm), np.transpose(a, perm))
    assert_like(xp.roll(x, 2, axis=ax), np.roll(a, 2, ax))
    assert_like(xp.roll(x, -1), np.roll(a, -1))
    assert_like(xp.expand_dims(x, axis=0), np.expand_dims(a, 0))
    assert_like(xp.reshape(x, (-1,)), a.reshape(-1))
    assert_like(xp.moveaxis(x, ax, 0), np.moveaxis(a, ax, 0))
    assert_like(xp.repeat(x, 2, axis=ax), np.repeat(a, 2, ax))
    assert_like(xp.repeat(x, 3), np.repeat(a, 3))
    assert_like(xp.tile(x, (2,) * a.ndim), np.tile(a, (2,) * a.ndim))
    assert_like(xp.concat([x, x], axis=ax), np.concatenate([a, a], ax))
    assert_like(xp.concat([x, x], axis=None), np.concatenate([a, a], None))
    assert_like(xp.stack([x, x], axis=ax), np.stack([a, a], ax))
    for got, want in zip(xp.unstack(x, axis=ax), np.moveaxis(a, ax, 0)):
        assert_like(got, want)
    assert_like(xp.broadcast_to(x, (2,) + a.shape), np.broadcast_to(a, (2,) + a.shape))
    assert_like(xp.matrix_transpose(x) if a.ndim > 1 else x, np.swapaxes(a, -1, -2)
                if a.ndim > 1 else a)


def test_manipulation(device):
    _manipulation(device)


def test_squeeze_and_broadcast_arrays(device):
    a = np.zeros((1, 3, 1))
    x = to_ember(a, device)
    assert xp.squeeze(x, axis=(0, 2)).shape == (3,)
    with pytest.raises(ValueError):
        xp.squeeze(x, axis=1)
    b = xp.broadcast_arrays(x, xp.ones((2, 1, 1), device=device))
    assert [t.shape for t in b] == [(2, 3, 1), (2, 3, 1)]
    assert_like(xp.repeat(to_ember(np.array([1, 2, 3]), device),
                          xp.asarray([0, 2, 1], device=device)), np.repeat([1, 2, 3], [0, 2, 1]))


# ------------------------------------------------------------------ indexing
def test_take(device):
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([2, 0, -1])
    x = to_ember(a, device)
    assert_like(xp.take(x, to_ember(idx, device), axis=1), np.take(a, idx, axis=1))
    assert_like(xp.take(to_ember(a[0], device), to_ember(idx, device)), np.take(a[0], idx))
    ind = np.argsort(a, axis=0)[::-1]
    assert_like(xp.take_along_axis(x, to_ember(ind, device), axis=0),
                np.take_along_axis(a, ind, axis=0))


# ------------------------------------------------------------------ searching
@given(a=arrays("float64", nonempty, special=False, lo=-5, hi=5), data=st.data())
def _searching(device, a, data):
    x = to_ember(a, device)
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    keep = data.draw(st.booleans())
    assert_like(xp.argmax(x, axis=ax, keepdims=keep), np.argmax(a, axis=ax, keepdims=keep))
    assert_like(xp.argmin(x, axis=ax, keepdims=keep), np.argmin(a, axis=ax, keepdims=keep))
    assert_like(xp.argmax(x), np.argmax(a))
    assert_like(xp.count_nonzero(x, axis=ax, keepdims=keep),
                np.count_nonzero(a, axis=ax, keepdims=keep).astype(np.int64))
    for got, want in zip(xp.nonzero(x), np.nonzero(a)):
        assert_like(got, want.astype(np.int64))
    assert_like(xp.where(x > 0, x, 0.0), np.where(a > 0, a, 0.0))


def test_searching(device):
    _searching(device)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(device, side):
    s = np.array([0.0, 1.0, 1.0, 2.5, 7.0])
    v = np.array([[-1.0, 1.0], [2.5, 9.0]])
    got = xp.searchsorted(to_ember(s, device), to_ember(v, device), side=side)
    assert_like(got, np.searchsorted(s, v, side=side).astype(np.int64))
    order = np.array([4, 0, 2, 1, 3])
    shuffled = np.empty_like(s)
    shuffled[order] = s
    got = xp.searchsorted(to_ember(shuffled, device), to_ember(v, device), side=side,
                          sorter=to_ember(np.argsort(shuffled), device))
    assert_like(got, np.searchsorted(s, v, side=side).astype(np.int64))


# ------------------------------------------------------------------ sorting
@given(a=arrays("int32", nonempty, lo=-3, hi=3), descending=st.booleans())
def _sorting(device, a, descending):
    x = to_ember(a, device)
    key = -a.astype(np.int64) if descending else a
    assert_like(xp.argsort(x, descending=descending), np.argsort(key, kind="stable"))
    want = np.sort(a)[..., ::-1] if descending else np.sort(a)
    assert_like(xp.sort(x, axis=-1, descending=descending), want)
    assert_like(xp.sort(x, axis=0), np.sort(a, axis=0))


def test_sorting(device):
    _sorting(device)


def test_sort_puts_nan_last(device):
    a = np.array([3.0, np.nan, -np.inf, 1.0])
    assert_like(xp.sort(to_ember(a, device)), np.sort(a))


# ------------------------------------------------------------------ sets
@given(a=arrays("float64", nonempty, lo=-2, hi=2))
def _sets(device, a):
    a = np.round(a)
    x = to_ember(a, device)
    values, indices, inverse, counts = xp.unique_all(x)
    # numpy collapses NaNs unless equal_nan=False; the standard counts each NaN apart
    want_v, want_i, want_inv, want_c = np.unique(a, return_index=True, return_inverse=True,
                                                 return_counts=True, equal_nan=False)
    assert_like(values, want_v)
    assert_like(indices, want_i.astype(np.int64))
    assert_like(inverse, want_inv.reshape(a.shape).astype(np.int64))
    assert_like(counts, want_c.astype(np.int64))
    assert_like(xp.unique_values(x), want_v)
    assert_like(xp.unique_counts(x).counts, want_c.astype(np.int64))
    assert_like(xp.unique_inverse(x).inverse_indices, want_inv.reshape(a.shape).astype(np.int64))


def test_sets(device):
    _sets(device)


# ------------------------------------------------------------------ edge cases (issue 36)
def test_clip_bounds_broadcast_beyond_x(device):
    x, lo = np.array([1.0, 5.0, -1.0]), np.array([[0.0], [2.0]])
    assert_like(xp.clip(to_ember(x, device), to_ember(lo, device), 3.0), np.clip(x, lo, 3.0))
    assert_like(xp.clip(to_ember(x, device), max=to_ember(lo, device)), np.clip(x, None, lo))


def test_eye_with_a_diagonal_outside_the_matrix(device):
    for k in (2**40, -2**62, 3, -4):
        assert_like(xp.eye(3, 4, k=k, device=device), np.eye(3, 4, k=k, dtype="float32"))


@pytest.mark.parametrize("shape, mask", [((0, 3), (0, 3)), ((2, 0), (2,)), ((0,), (0,)),
                                         ((3, 2), (3,))])
def test_zero_size_boolean_masks(device, shape, mask):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    m = np.zeros(mask, dtype=bool)
    assert_like(to_ember(a, device)[to_ember(m, device)], a[m])


def test_sign_of_signed_zeros_and_nan(device):
    a = np.array([-0.0, 0.0, np.nan, -2.5, 3.0])
    assert_like(xp.sign(to_ember(a, device)), np.sign(a))
