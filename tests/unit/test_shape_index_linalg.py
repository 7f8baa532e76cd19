"""Shape ops, indexing, linear algebra and sorting against numpy (float64 references), on the
numpy and pure-Python backends."""

from __future__ import annotations

import ember
import numpy as np
import pytest
from _python_ready import python_ready
from ember.errors import DimensionError, DTypeError, ShapeError, TensorIndexError

BACKENDS = [
    "numpy",
    pytest.param("python", marks=pytest.mark.skipif(
        not python_ready(), reason="python backend not complete yet")),
]


@pytest.fixture(params=BACKENDS)
def bk(request):
    return request.param


def T(arr, bk, dtype=None):
    arr = np.asarray(arr)
    return ember.tensor(arr if dtype is None else arr.astype(dtype), backend=bk)


def check(got, ref, exact=False):
    assert isinstance(got, ember.Tensor)
    ref = np.asarray(ref)
    out = got.numpy()
    assert out.shape == ref.shape, (out.shape, ref.shape)
    if exact or ref.dtype.kind in "biu":
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64), rtol=1e-6,
                                   atol=1e-9, equal_nan=True)


RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4, 5))  # float64 reference data
IA = np.arange(60).reshape(3, 4, 5)


# ====================================================================== shape ops
def test_reshape_view_flatten(bk):
    x = T(IA, bk)
    check(x.reshape(4, -1), IA.reshape(4, -1))
    check(x.reshape((5, 12)), IA.reshape(5, 12))
    check(x.view(-1), IA.reshape(-1))
    check(ember.reshape(x, (2, 30)), IA.reshape(2, 30))
    check(x.flatten(), IA.flatten())
    check(x.flatten(1), IA.reshape(3, 20))
    check(x.flatten(0, -2), IA.reshape(12, 5))
    check(T(5.0, bk).flatten(), np.array([5.0]))
    check(x.unflatten(2, (5, 1)), IA.reshape(3, 4, 5, 1))
    check(T(np.zeros((0, 3)), bk).reshape(-1, 1, 3), np.zeros((0, 1, 3)))
    # non-contiguous input
    check(x.transpose(0, 2).reshape(5, -1), IA.transpose(2, 1, 0).reshape(5, -1))
    with pytest.raises(ShapeError, match=r"shape \(3, 4, 5\) \(60 elements\) into shape"):
        x.reshape(7, -1)
    with pytest.raises(ShapeError, match="only one dim can be -1"):
        x.reshape(-1, -1)


def test_squeeze_unsqueeze(bk):
    z = np.zeros((1, 3, 1, 2))
    x = T(z, bk)
    assert x.squeeze().shape == (3, 2)
    assert x.squeeze(0).shape == (3, 1, 2)
    assert x.squeeze(1).shape == (1, 3, 1, 2)  # PyTorch: not size 1 → unchanged
    assert x.squeeze((0, -2)).shape == (3, 2)
    assert x.unsqueeze(-1).shape == (1, 3, 1, 2, 1)
    assert x.unsqueeze(0).shape == (1, 1, 3, 1, 2)
    assert T(1.0, bk).unsqueeze(0).shape == (1,)
    with pytest.raises(DimensionError, match=r"dim 5 is out of range .* \(valid: -5 to 4\)"):
        x.unsqueeze(5)
    with pytest.raises(DimensionError):
        x.squeeze(4)


def test_permute_transpose_T_movedim(bk):
    x = T(A, bk)
    check(x.permute(2, 0, 1), A.transpose(2, 0, 1))
    check(x.permute((1, 2, 0)), A.transpose(1, 2, 0))
    check(x.transpose(0, -1), A.swapaxes(0, -1))
    check(ember.swapaxes(x, 1, 2), A.swapaxes(1, 2))
    check(x.T, A.T)
    check(x.mT, A.swapaxes(-1, -2))
    check(x[0].t(), A[0].T)
    check(x.movedim(0, -1), np.moveaxis(A, 0, -1))
    check(ember.movedim(x, (0, 1), (2, 0)), np.moveaxis(A, (0, 1), (2, 0)))
    check(T(3.0, bk).T, np.array(3.0))
    with pytest.raises(DimensionError, match="not a permutation"):
        x.permute(0, 0, 1)
    with pytest.raises(DimensionError, match="dim 3 is out of range"):
        x.transpose(0, 3)
    with pytest.raises(DimensionError, match="mT"):
        T([1.0], bk).mT


def test_expand_broadcast_repeat_tile(bk):
    v = np.array([[1.0], [2.0]])
    x = T(v, bk)
    check(x.expand(2, 3), np.broadcast_to(v, (2, 3)))
    check(x.expand(4, -1, 3), np.broadcast_to(v, (4, 2, 3)))
    check(x.expand_as(T(np.zeros((2, 5)), bk)), np.broadcast_to(v, (2, 5)))
    check(ember.broadcast_to(x, (3, 2, 2)), np.broadcast_to(v, (3, 2, 2)))
    a, b = ember.broadcast_tensors(x, T(np.arange(3.0), bk))
    check(a, np.broadcast_to(v, (2, 3)))
    check(b, np.broadcast_to(np.arange(3.0), (2, 3)))
    with pytest.raises(ShapeError, match=r"expand: shape \(2, 1\) can't expand to \(3, 3\)"):
        x.expand(3, 3)
    with pytest.raises(ShapeError):
        ember.broadcast_to(T(np.zeros(3), bk), (1,))
    check(x.repeat(2, 3), np.tile(v, (2, 3)))
    check(x.repeat(2, 1, 2), np.tile(v, (2, 1, 2)))
    check(T(A, bk).repeat(1, 2, 1), np.tile(A, (1, 2, 1)))
    check(x.tile(2), np.tile(v, 2))
    check(x.tile(2, 1, 1), np.tile(v, (2, 1, 1)))
    # an expanded (broadcast) tensor fed to repeat and to an arithmetic op
    e = x.expand(2, 3)
    check(e.repeat(2, 1) + 1, np.tile(np.broadcast_to(v, (2, 3)), (2, 1)) + 1)
    with pytest.raises(ShapeError, match="repeat"):
        x.repeat(2)


def test_cat_stack_split(bk):
    a, b = np.arange(6).reshape(2, 3), RNG.standard_normal((1, 3))
    x, y = T(a, bk), T(b, bk)
    out = ember.cat([x, y])
    assert out.dtype == ember.float64  # int64 with float64 promotes
    check(out, np.concatenate([a, b]))
    check(ember.cat([x, x.T.T], dim=-1), np.concatenate([a, a], -1))
    check(ember.concatenate([x, y], axis=0), np.concatenate([a, b]))
    check(ember.cat([x, T(np.zeros((0, 3), np.int64), bk)]), a)
    check(ember.cat([T(np.zeros(0), bk), x]), a.astype(np.float64))  # legacy empty 1-d skip
    with pytest.raises(ShapeError, match=r"cat: tensor 1 has shape \(2, 2\), expected \(2, 3\)"):
        ember.cat([x, T(np.zeros((2, 2)), bk)])
    with pytest.raises(ShapeError, match="zero-dimensional"):
        ember.cat([T(1, bk), T(2, bk)])
    check(ember.stack([x, x + 1], dim=1), np.stack([a, a + 1], 1))
    check(ember.stack([x, x], dim=-1), np.stack([a, a], -1))
    with pytest.raises(ShapeError, match="stack"):
        ember.stack([x, y])
    check(ember.hstack([x, x]), np.hstack([a, a]))
    check(ember.vstack([T([1, 2, 3], bk), x]), np.vstack([[1, 2, 3], a]))
    r = np.arange(7)
    parts = T(r, bk).split(3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6]]
    parts = ember.split(T(IA, bk), [1, 3], dim=1)
    check(parts[0], IA[:, :1])
    check(parts[1], IA[:, 1:])
    with pytest.raises(ShapeError, match="sum to the size"):
        T(r, bk).split([2, 2])
    assert [p.tolist() for p in T(r, bk).chunk(3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [p.shape for p in T(np.zeros((2, 6)), bk).chunk(4, dim=1)] == [(2, 2)] * 3
    u = T(IA, bk).unbind(1)
    assert len(u) == 4
    check(u[2], IA[:, 2])


def test_flip_roll(bk):
    x = T(A, bk)
    check(x.flip(0), A[::-1])
    check(x.flip((0, 2)), A[::-1, :, ::-1])
    check(x[0].fliplr(), np.fliplr(A[0]))
    check(x.flipud(), np.flipud(A))
    check(ember.flip(T(2.0, bk), ()), np.array(2.0))
    check(x.roll(2), np.roll(A, 2))
    check(x.roll(-1, 1), np.roll(A, -1, 1))
    check(x.roll((1, 7), (0, 2)), np.roll(A, (1, 7), (0, 2)))
    check(x.transpose(0, 1).roll(1, 0), np.roll(A.swapaxes(0, 1), 1, 0))


@pytest.mark.parametrize(
    "pad,mode,np_mode",
    [((1, 2), "constant", "constant"), ((1, 1, 2, 0), "constant", "constant"),
     ((2, 1, 1, 2), "reflect", "reflect"), ((3, 1), "replicate", "edge"),
     ((2, 3, 1, 1), "circular", "wrap")],
)
def test_pad(bk, pad, mode, np_mode):
    x = A[0]
    widths = [(0, 0)] * 2
    for i in range(len(pad) // 2):
        widths[-1 - i] = (pad[2 * i], pad[2 * i + 1])
    kw = {"constant_values": 7.5} if mode == "constant" else {}
    ref = np.pad(x, widths, mode=np_mode, **kw)
    check(ember.pad(T(x, bk), pad, mode=mode, value=7.5), ref)


def test_pad_crop_and_errors(bk):
    x = T(IA[0], bk)
    check(ember.pad(x, (-1, 2, 0, -2)), np.pad(IA[0, :2, 1:], ((0, 0), (0, 2))))
    with pytest.raises(ShapeError, match="reflect padding"):
        ember.pad(x, (5, 0), mode="reflect")
    with pytest.raises(ValueError, match="unknown mode"):
        ember.pad(x, (1, 1), mode="mirror")


# ====================================================================== indexing
KEYS = [
    0, -1, (1, 2), (1, -1, 3), slice(None, None, -1), (slice(1, None, 2), slice(None, None, -2)),
    (slice(None, None, -2), slice(3, 0, -1)), (None, 0), (Ellipsis, 1), (0, Ellipsis, None),
    (slice(5, 1),), np.array([0, 2]), np.array([-1, 0, 0]), ([0, 2], [1, 3]),
    (slice(None), [0, -1]), (slice(None), np.array([[0, 1], [2, 3]]), slice(1, 3)),
    ([0, 1], slice(None), [1, 2]), (0, slice(None), [1, 2]), (slice(None), 0, [1, 2]),
    (Ellipsis, [1, 2]), ([[0], [2]], slice(None), [1, 4]), (np.array([], np.int64),),
    (slice(None), None, [2, 1], [0, 4]), (True,), (False, 0), (np.int64(1), slice(2, None)),
    ("mask_all",), ("mask_row",), ("mask_2d",), (slice(None), "mask_col"),
    (slice(None), [0, 1], Ellipsis, [1, 2]), (slice(-5, None, -2),), ([1], Ellipsis, 0),
]


def _resolve(key):
    masks = {"mask_all": IA % 3 == 0, "mask_row": np.array([True, False, True]),
             "mask_2d": (IA % 4 == 1)[:, :, 0], "mask_col": np.array([False, True, True, False])}
    key = key if isinstance(key, tuple) else (key,)
    return tuple(masks[k] if isinstance(k, str) else k for k in key)


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_getitem(bk, key):
    key = _resolve(key)
    check(T(IA, bk)[key], IA[key])


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_setitem_scalar(bk, key):
    key = _resolve(key)
    x = T(A, bk)
    ref = A.copy()
    ref[key] = -3.5
    x[key] = -3.5
    check(x, ref)


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_setitem_tensor(bk, key):
    key = _resolve(key)
    shape = IA[key].shape
    # a value broadcast along the first dim of the indexed shape, in int64 (cast to float64)
    value = np.arange(int(np.prod(shape[1:]))).reshape((1,) + shape[1:]) if shape else np.array(9)
    x = T(A, bk)
    ref = A.copy()
    ref[key] = value
    x[key] = T(value, bk)
    check(x, ref)


def test_getitem_noncontiguous_and_0d(bk):
    x = T(IA, bk).transpose(0, 2)
    check(x[1:, [0, 2], -1], IA.transpose(2, 1, 0)[1:, [0, 2], -1])
    s = T(7.0, bk)
    check(s[None], np.array([7.0]))
    check(s[...], np.array(7.0))
    assert T(IA, bk)[0][T(1, bk)].shape == (5,)  # a 0-d int tensor acts as an int


def test_index_errors(bk):
    x = T(IA, bk)
    with pytest.raises(TensorIndexError, match=r"index 3 is out of range for dim 0 with size 3"):
        x[3]
    with pytest.raises(TensorIndexError, match=r"index -6 is out of range for dim 2 with size 5"):
        x[0, 0, -6]
    with pytest.raises(TensorIndexError, match=r"index 4 is out of range for dim 1 with size 4"):
        x[:, [0, 4]]
    with pytest.raises(TensorIndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(DTypeError, match="integer or bool"):
        x[T([0.0], bk)]
    with pytest.raises(TensorIndexError, match="boolean index of shape"):
        x[T([True, False], bk)]
    with pytest.raises(ShapeError, match="can't be broadcast"):
        x[0] = T(np.zeros(3), bk)
    with pytest.raises(TensorIndexError):
        x["a"]


def test_setitem_keeps_views_and_dtype(bk):
    x = T(IA, bk)
    y = x[0]
    x[0] = 2.7  # cast to int64 (truncated) like numpy/PyTorch
    assert x.dtype == ember.int64
    assert x[0, 0, 0].item() == 2
    check(y, IA[0])  # functional: the earlier result is unchanged


def test_gather_scatter(bk):
    idx = np.array([[0, 2, -1], [1, 1, 0]])
    x = T(A[0], bk)
    check(x.gather(1, T(idx, bk)), A[0][np.arange(2)[:, None], idx % 5])  # smaller index
    idx0 = np.array([[2, 0, 1, 1, 0]])
    check(ember.gather(x, 0, T(idx0, bk)), np.take_along_axis(A[0], idx0, 0))
    with pytest.raises(TensorIndexError, match="gather: index 5 is out of range for dim 1"):
        x.gather(1, T([[5]], bk))
    with pytest.raises(DimensionError, match="same number of dims"):
        x.gather(1, T([1], bk))
    # scatter: unique positions per row
    sidx = np.array([[3, 0], [4, 1]])
    src = RNG.standard_normal((2, 2))
    ref = A[0].copy()
    np.put_along_axis(ref[:2], sidx, src, 1)
    check(x.scatter(1, T(sidx, bk), T(src, bk)), ref)
    ref = A[0].copy()
    np.put_along_axis(ref[:2], sidx, 0.5, 1)
    check(x.scatter(1, T(sidx, bk), 0.5), ref)
    # src larger than index: only its leading part is used (PyTorch)
    big = RNG.standard_normal((4, 5))
    ref = A[0].copy()
    np.put_along_axis(ref[:2], sidx, big[:2, :2], 1)
    check(x.scatter(1, T(sidx, bk), T(big, bk)), ref)
    # scatter_add with duplicates
    didx = np.array([0, 2, 0, 0, 1])
    vals = np.arange(5.0)
    ref = np.zeros(3)
    np.add.at(ref, didx, vals)
    check(T(np.zeros(3), bk).scatter_add(0, T(didx, bk), T(vals, bk)), ref)
    check(T(np.zeros(3), bk).scatter(0, T(didx, bk), T(vals, bk), reduce="add"), ref)
    check(x, A[0])  # inputs are not modified


def test_index_select_take_etc(bk):
    x = T(A, bk)
    check(x.index_select(1, T([3, -4, 3], bk)), A[:, [3, 0, 3]])
    check(ember.index_select(x, -1, [0]), A[..., [0]])
    with pytest.raises(TensorIndexError, match="index_select: index 4 is out of range for dim 1"):
        x.index_select(1, T([4], bk))
    check(x.take(T([[0, 59], [-1, 7]], bk)), A.reshape(-1)[[[0, 59], [-1, 7]]])
    ind = np.argsort(A, axis=1)
    check(x.take_along_dim(T(ind, bk), 1), np.take_along_axis(A, ind, 1))
    ind2 = np.argsort(A[:, :1, :], axis=2)  # broadcast along dim 1
    check(x.take_along_dim(T(ind2, bk), 2), np.take_along_axis(A, np.broadcast_to(ind2, A.shape),
                                                               2))
    check(x.take_along_dim(T([0, 5], bk)), A.reshape(-1)[[0, 5]])
    check(x.select(1, -1), A[:, -1])
    check(x.narrow(2, 1, 3), A[:, :, 1:4])
    ref = np.zeros((3, 4))
    np.add.at(ref, [0, 2, 0], 2 * np.ones((3, 4)))
    check(T(np.zeros((3, 4)), bk).index_add(0, T([0, 2, 0], bk), T(np.ones((3, 4)), bk), alpha=2),
          ref)


def test_masks_nonzero_one_hot(bk):
    x = T(A, bk)
    m = A > 0.3
    check(x.masked_fill(T(m, bk), -1), np.where(m, -1.0, A))
    check(x.masked_fill(T(m[0, 0], bk), T(2.0, bk)), np.where(m[0, 0], 2.0, A))  # broadcast
    check(T(IA, bk).masked_fill(T(IA > 5, bk), 1.9), np.where(IA > 5, 1, IA))  # keeps int64
    with pytest.raises(DTypeError, match="mask must be a bool"):
        x.masked_fill(T(IA, bk), 0)
    check(x.masked_select(T(m, bk)), A[m])
    check(x.masked_select(T(m[0, 0], bk)), A[np.broadcast_to(m[0, 0], A.shape)])
    nz = np.array([[0, 1.5, 0], [2, 0, 0]])
    check(T(nz, bk).nonzero(), np.argwhere(nz))
    rows, cols = ember.nonzero(T(nz, bk), as_tuple=True)
    check(rows, np.nonzero(nz)[0])
    check(cols, np.nonzero(nz)[1])
    check(T(np.zeros((0, 2)), bk).nonzero(), np.zeros((0, 2), np.int64))
    assert T(3.0, bk).nonzero().shape == (1, 0)
    w = ember.where(T(nz, bk))
    check(w[1], np.nonzero(nz)[1])
    labels = np.array([[0, 3], [1, 1]])
    check(ember.one_hot(T(labels, bk)), np.eye(4, dtype=np.int64)[labels])
    check(ember.one_hot(T(labels, bk), 6), np.eye(6, dtype=np.int64)[labels])
    with pytest.raises(TensorIndexError, match="class value 3 is out of range for num_classes 2"):
        ember.one_hot(T(labels, bk), 2)
    with pytest.raises(DTypeError):
        ember.one_hot(T([0.0], bk))


# ====================================================================== linalg
MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 2)), ((5, 1, 2, 3), (4, 3, 2)), ((2, 0), (0, 3)), ((0, 2), (2, 3)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(bk, sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    check(T(a, bk) @ T(b, bk), a @ b)
    check(ember.matmul(T(a, bk), T(b, bk)), a @ b)


def test_matmul_dtypes_and_errors(bk):
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)
    out = T(a, bk) @ T(b, bk)
    assert out.dtype == ember.int64
    check(out, a @ b)
    out = T(a, bk, np.int32) @ T(b.astype(np.float32), bk)
    assert out.dtype == ember.float32
    check(out, a @ b)
    check(T(a, bk).T @ T(a, bk), a.T @ a)  # transposed (non-contiguous) operands
    check(a.astype(np.float64) @ T(b, bk), a @ b)  # numpy on the left defers to __rmatmul__
    with pytest.raises(ShapeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) don't align: "
                                         r"3 != 4"):
        T(np.zeros((2, 3)), bk) @ T(np.zeros((4, 5)), bk)
    with pytest.raises(ShapeError, match="at least 1 dim"):
        ember.matmul(T(1.0, bk), T([1.0], bk))
    with pytest.raises(ShapeError, match="can't be broadcast"):
        T(np.zeros((2, 2, 3)), bk) @ T(np.zeros((3, 3, 1)), bk)


def test_dot_outer_mm_bmm(bk):
    u, v = RNG.standard_normal(4), RNG.standard_normal(4)
    check(T(u, bk).dot(T(v, bk)), np.dot(u, v))
    check(ember.outer(T(u, bk), T(v[:3], bk)), np.outer(u, v[:3]))
    m, n = RNG.standard_normal((2, 4)), RNG.standard_normal((4, 3))
    check(T(m, bk).mm(T(n, bk)), m @ n)
    p, q = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((3, 4, 5))
    check(ember.bmm(T(p, bk), T(q, bk)), p @ q)
    with pytest.raises(ShapeError, match="dot: sizes differ: 4 != 3"):
        T(u, bk).dot(T(v[:3], bk))
    with pytest.raises(DimensionError, match="mm"):
        T(u, bk).mm(T(n, bk))
    with pytest.raises(ShapeError, match="bmm"):
        T(p, bk).bmm(T(n, bk))


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_tril_triu_diagonal(bk, k):
    x = RNG.standard_normal((2, 3, 4))
    check(T(x, bk).tril(k), np.tril(x, k))
    check(ember.triu(T(x, bk), k), np.triu(x, k))
    check(T(x, bk).diagonal(k, 1, 2), np.diagonal(x, k, 1, 2))
    check(T(x, bk).diagonal(k, -1, 0), np.diagonal(x, k, -1, 0))
    check(T(np.ones((3, 3), bool), bk).tril(k), np.tril(np.ones((3, 3), bool), k))


def test_trace(bk):
    x = RNG.standard_normal((3, 5))
    check(T(x, bk).trace(), np.trace(x))
    check(T(IA[0], bk).trace(), np.trace(IA[0]))


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(4,), (4,)]), ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij->j", [(2, 2, 4)]), ("ij,ij->i", [(2, 3), (2, 3)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("b...,b->...", [(2, 3, 4), (2,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("abc,cd,ea->bde", [(2, 3, 4), (4, 5), (6, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("ij,kj->", [(2, 3), (4, 3)]),
    ("i,i,i->i", [(3,), (3,), (3,)]), ("ij,j->ij", [(2, 3), (1,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(bk, eq, shapes):
    arrs = [RNG.standard_normal(s) for s in shapes]
    check(ember.einsum(eq, *(T(a, bk) for a in arrs)), np.einsum(eq, *arrs))


def test_einsum_errors(bk):
    a = T(np.zeros((2, 3)), bk)
    with pytest.raises(ShapeError, match="subscript 'j' has sizes 3 and 4"):
        ember.einsum("ij,jk->ik", a, T(np.zeros((4, 2)), bk))
    with pytest.raises(ShapeError, match="has 3 subscripts but 2 dims"):
        ember.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="does not appear"):
        ember.einsum("ij->z", a)
    check(ember.einsum("ij,jk->ik", [a, T(np.ones((3, 2)), bk)]), np.zeros((2, 2)))


# ====================================================================== sorting
def test_sort_argsort(bk):
    x = np.array([[3.0, 1.0, np.nan, 1.0, -2.0], [0.0, 5.0, 5.0, -1.0, 2.0]])
    v, i = T(x, bk).sort()
    check(v, np.sort(x, axis=-1))
    check(i, np.argsort(x, axis=-1, kind="stable"))
    v, i = ember.sort(T(x, bk), dim=0, descending=True)
    ref_i = np.argsort(-np.nan_to_num(x, nan=np.inf), axis=0, kind="stable")
    check(i, ref_i)
    check(v, np.take_along_axis(x, ref_i, 0))
    r = T(x, bk).sort(descending=True)
    assert r.values.tolist()[0][0] != r.values.tolist()[0][0]  # NaN first when descending
    check(r.indices[1], [1, 2, 4, 0, 3])  # stable among the equal 5s
    check(T(IA, bk).argsort(dim=1, descending=True), np.argsort(-IA, axis=1, kind="stable"))
    b = np.array([True, False, True, False])
    v, i = T(b, bk).sort()
    assert v.dtype == ember.bool_
    check(v, np.sort(b))
    check(i, np.argsort(b, kind="stable"))
    v, i = T(2.5, bk).sort()
    assert v.item() == 2.5 and i.item() == 0
    check(T(np.zeros((0, 3)), bk).sort(0).values, np.zeros((0, 3)))
    check(ember.msort(T(A, bk)), np.sort(A, axis=0))
    check(T(A, bk).transpose(0, 2).sort(1).values, np.sort(A.transpose(2, 1, 0), axis=1))


def test_topk_kthvalue_median(bk):
    x = T(A, bk)
    v, i = x.topk(2)
    check(v, -np.sort(-A, axis=-1)[..., :2])
    check(i, np.argsort(-A, axis=-1, kind="stable")[..., :2])
    v, i = ember.topk(x, 3, dim=0, largest=False)
    check(v, np.sort(A, axis=0)[:3])
    check(i, np.argsort(A, axis=0, kind="stable")[:3])
    with pytest.raises(TensorIndexError, match="k=6 is out of range for dim 2 of size 5"):
        x.topk(6)
    v, i = x.kthvalue(2, dim=1)
    check(v, np.sort(A, axis=1)[:, 1])
    check(i, np.argsort(A, axis=1, kind="stable")[:, 1])
    assert x.kthvalue(1, keepdim=True).values.shape == (3, 4, 1)
    check(x.median(), np.sort(A.reshape(-1))[(60 - 1) // 2])
    v, i = x.median(dim=1)
    check(v, np.sort(A, axis=1)[:, 1])
    check(i, np.argsort(A, axis=1, kind="stable")[:, 1])
    check(T(IA, bk).median(dim=-1, keepdim=True).values, np.sort(IA, -1)[..., 2:3])
    nanrow = np.array([[1.0, np.nan, 3.0], [3.0, 1.0, 2.0]])
    v, i = T(nanrow, bk).median(1)
    check(v, [np.nan, 2.0])
    check(i, [1, 2])


def test_unique(bk):
    x = np.array([[3, 1, 3], [2, 1, 7]])
    check(T(x, bk).unique(), np.unique(x))
    u, inv, cnt = ember.unique(T(x, bk), return_inverse=True, return_counts=True)
    ref_u, ref_inv, ref_cnt = np.unique(x, return_inverse=True, return_counts=True)
    check(u, ref_u)
    check(inv, ref_inv.reshape(x.shape))
    check(cnt, ref_cnt)
    f = np.array([0.5, -1.0, 0.5, 2.0])
    check(T(f, bk).unique(), np.unique(f))
    check(T(np.array([True, False, True]), bk).unique(), [False, True])
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 1]])
    u, inv, cnt = T(rows, bk).unique(dim=0, return_inverse=True, return_counts=True)
    ref_u, ref_inv, ref_cnt = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    check(u, ref_u)
    check(inv, ref_inv.reshape(-1))
    check(cnt, ref_cnt)
    check(T(rows, bk).unique(dim=1), np.unique(rows, axis=1))
    check(T(np.zeros(0), bk).unique(), np.zeros(0))


# ====================================================================== mixed cases
def test_mixed_dtypes_and_backends(bk):
    a = np.array([[True, False], [True, True]])
    out = T(a, bk) @ T(a, bk)
    assert out.dtype == ember.int64
    check(out, a.astype(np.int64) @ a.astype(np.int64))
    check(ember.einsum("ij,jk->ik", T(IA[0], bk), T(IA[0].T, bk)), IA[0] @ IA[0].T)
    check(ember.stack([T(1.0, bk), T(2.0, bk)]), np.array([1.0, 2.0]))
    x = T(np.zeros((2, 3)), bk)
    x[[1, 0], [2, 2]] = T([5.0, 6.0], bk)
    ref = np.zeros((2, 3))
    ref[[1, 0], [2, 2]] = [5.0, 6.0]
    check(x, ref)
    v = RNG.standard_normal((2, 3, 4, 5))
    check(ember.pad(T(v, bk), (1, 2, 3, 1), mode="reflect"),
          np.pad(v, ((0, 0), (0, 0), (3, 1), (1, 2)), mode="reflect"))
    other = "python" if bk == "numpy" else "numpy"
    if other == "numpy" or python_ready():
        with pytest.raises(ember.BackendMismatchError):
            T(IA, bk)[ember.tensor([0], backend=other)]


def test_setitem_full_mask(bk):
    x = T(A, bk)
    x[x < 0] = 0.0
    check(x, np.where(A < 0, 0.0, A))
    y = T(IA, bk)
    y[T(IA % 2 == 0, bk)] = T([7], bk)
    check(y, np.where(IA % 2 == 0, 7, IA))
