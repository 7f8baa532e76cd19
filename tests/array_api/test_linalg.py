"""The ``linalg`` extension and the main namespace's linear algebra, against numpy.linalg in
float64 (decompositions are checked through what defines them: Q R = A, U S Vᵀ = A, ...)."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import ember.array_api as xp
from array_api_support import assert_like, to_ember, to_numpy

la = xp.linalg


def matrices(n_max=4, batch=True, square=True):
    shape = st.tuples(*([st.integers(1, 2)] if batch else []),
                      st.integers(1, n_max), st.integers(1, n_max))
    if square:
        shape = shape.map(lambda s: s[:-1] + (s[-2],))
    return shape.flatmap(lambda s: hnp.arrays(np.float64, s,
                                              elements=st.floats(-3, 3, width=64)))


def _well_conditioned(a):
    return np.all(np.linalg.cond(a) < 1e6)


@given(a=matrices())
def _inverse_family(device, a):
    if not _well_conditioned(a):
        return
    x = to_ember(a, device)
    assert_like(la.inv(x), np.linalg.inv(a), rtol=1e-6)
    assert_like(la.det(x), np.linalg.det(a), rtol=1e-6)
    sign, logabs = la.slogdet(x)
    want_sign, want_log = np.linalg.slogdet(a)
    assert_like(sign, want_sign)
    assert_like(logabs, want_log, rtol=1e-6)
    b = a[..., :1] + 1.0
    assert_like(la.solve(x, to_ember(b, device)), np.linalg.solve(a, b), rtol=1e-6)
    assert_like(la.matrix_power(x, 3), np.linalg.matrix_power(a, 3), rtol=1e-6)
    # the sign of an exact zero an elimination leaves is an accident of its order of
    # operations (LAPACK's inv and a matrix power of it differ): the values are compared
    assert_like(la.matrix_power(x, -1), np.linalg.inv(a), rtol=1e-6, signed_zeros=False)


def test_inverse_family(device):
    _inverse_family(device)


@given(a=matrices(batch=False, square=False))
def _decompositions(device, a):
    x = to_ember(a, device)
    q, r = (to_numpy(t) for t in la.qr(x))
    np.testing.assert_allclose(q @ r, a, atol=1e-9)
    u, s, vh = (to_numpy(t) for t in la.svd(x, full_matrices=False))
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-9)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-9)
    assert_like(la.svdvals(x), np.linalg.svd(a, compute_uv=False), rtol=1e-8)
    assert_like(la.matrix_rank(x), np.asarray(np.linalg.matrix_rank(a), dtype=np.int64))
    assert_like(la.pinv(x), np.linalg.pinv(a), rtol=1e-6)
    sym = a.T @ a + np.eye(a.shape[1])
    w, v = (to_numpy(t) for t in la.eigh(to_ember(sym, device)))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sym @ v, v * w, atol=1e-8)
    assert_like(la.cholesky(to_ember(sym, device)), np.linalg.cholesky(sym), rtol=1e-8)
    assert_like(la.cholesky(to_ember(sym, device), upper=True), np.linalg.cholesky(sym).T,
                rtol=1e-8)


def test_decompositions(device):
    _decompositions(device)


@pytest.mark.parametrize("ord", [2, 1, np.inf, -np.inf, 0, 3])
def test_vector_norm(device, ord):
    a = np.array([[3.0, -4.0, 0.0], [1e200, 1e200, 0.0]])
    got = la.vector_norm(to_ember(a, device), axis=1, ord=ord)
    # the 2-norm is exact past the float range's square root: math.hypot as the reference
    # (numpy's norm overflows to inf there)
    refs = {2: np.array([math.hypot(*row) for row in a]),
            3: np.array([np.sum(np.abs(a[0]) ** 3) ** (1 / 3), np.inf])}
    with np.errstate(over="ignore"):
        want = refs[ord] if ord in refs else np.linalg.norm(a, axis=1, ord=ord)
    assert_like(got, want, rtol=1e-12)


@pytest.mark.parametrize("ord", ["fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"])
def test_matrix_norm(device, ord):
    a = np.array([[[1.0, -2.0], [3.0, 4.0]], [[0.5, 0.0], [0.0, -7.0]]])
    assert_like(la.matrix_norm(to_ember(a, device), ord=ord), np.linalg.norm(a, ord=ord,
                                                                             axis=(-2, -1)),
                rtol=1e-9)


def test_products(device):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))
    x, y = to_ember(a, device), to_ember(b, device)
    assert_like(xp.matmul(x, y), a @ b, rtol=1e-12)
    assert_like(xp.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=1e-12)
    assert_like(xp.tensordot(x, x, axes=([1, 2], [1, 2])), np.tensordot(a, a, ([1, 2], [1, 2])),
                rtol=1e-12)
    assert_like(xp.vecdot(x, x), np.sum(a * a, axis=-1), rtol=1e-12)
    assert_like(la.outer(y[0], y[1]), np.outer(b[0], b[1]), rtol=1e-12)
    c, d = rng.normal(size=(4, 3)), rng.normal(size=(3,))
    assert_like(la.cross(to_ember(c, device), to_ember(d, device)), np.cross(c, d), rtol=1e-12)
    assert_like(la.diagonal(x, offset=1), np.diagonal(a, 1, -2, -1))
    assert_like(la.trace(x), np.trace(a, axis1=-2, axis2=-1), rtol=1e-12)


def test_singular_and_non_positive_inputs_raise(device):
    with pytest.raises(ValueError, match="singular"):
        la.inv(xp.zeros((2, 2), dtype=xp.float64, device=device))
    with pytest.raises(ValueError, match="positive-definite"):
        la.cholesky(xp.asarray([[1.0, 2.0], [2.0, 1.0]], device=device))


# ------------------------------------------------------------------ edge cases (issue 36)
def test_vecdot_dtype_and_contracted_axis(device):
    a = np.array([[200, 100, 7], [1, 2, 3]], dtype=np.uint8)
    b = np.array([2, 1, 9], dtype=np.uint8)
    # the standard's dtype: uint8 wraps around (numpy's vecdot gives the same)
    assert_like(la.vecdot(to_ember(a, device), to_ember(b, device)), np.vecdot(a, b))
    f, g = np.arange(6.0).reshape(3, 2), np.array([[1.0], [-2.0], [0.5]])
    assert_like(xp.vecdot(to_ember(f, device), to_ember(g, device), axis=0),
                np.sum(f * g, axis=0))
    with pytest.raises(Exception, match="axis -1 has size 2 in x1 .* and 1 in x2"):
        xp.vecdot(to_ember(f, device), to_ember(np.ones(1), device))


def test_rank_and_pinv_take_one_rtol_per_matrix(device):
    a = np.array([[1.0, -2.0], [3.0, 4.0]])  # singular values 5.39 and 1.86
    stack, rtol = np.stack([a, a, a]), np.array([0.1, 0.3, 0.9])
    got = la.matrix_rank(to_ember(stack, device), rtol=to_ember(rtol, device))
    assert_like(got, np.linalg.matrix_rank(stack, rtol=rtol))
    assert got.tolist() == [2, 2, 1]
    pinv = la.pinv(to_ember(stack, device), rtol=to_ember(rtol, device))
    np.testing.assert_allclose(to_numpy(pinv), np.linalg.pinv(stack, rtol=rtol), atol=1e-12)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (2, 0), (0, 2, 2), (3, 0, 4)])
def test_empty_pinv_rank_solve(device, shape):
    a = np.zeros(shape)
    assert_like(la.pinv(to_ember(a, device)), np.linalg.pinv(a))
    assert_like(la.matrix_rank(to_ember(a, device)), np.linalg.matrix_rank(a))
    if shape[-1] == shape[-2]:
        b = np.zeros(shape[:-1] + (1,))
        assert_like(la.solve(to_ember(a, device), to_ember(b, device)), np.linalg.solve(a, b))
    vec = np.zeros((0,))
    assert_like(la.solve(to_ember(np.zeros((0, 0)), device), to_ember(vec, device)), vec)


@pytest.mark.parametrize("ord", [2, 1, 0, math.inf, -math.inf, 3])
def test_vector_norm_over_no_axes_is_elementwise(device, ord):
    a = np.array([[1.0, -2.0], [0.0, 4.0]])
    assert_like(la.vector_norm(to_ember(a, device), axis=(), ord=ord),
                np.linalg.vector_norm(a, axis=(), ord=ord))


def _orthonormal_columns(q):
    return np.allclose(np.swapaxes(q, -1, -2) @ q, np.eye(q.shape[-1]), atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (1, 2), (4, 1), (3, 3), (2, 4, 2), (0, 3)])
@pytest.mark.parametrize("rank_deficient", [False, True])
def test_full_svd_and_complete_qr(device, shape, rank_deficient):
    """Square U, Vᵀ (full_matrices) and Q (mode="complete"), orthonormal even where singular
    values are 0 or columns dependent, with numpy's shapes and singular values."""
    a = np.random.default_rng(3).normal(size=shape)
    if rank_deficient and shape[-1] > 1:
        a[..., 1] = 2 * a[..., 0]
    for full in (True, False):
        u, s, vh = (to_numpy(t) for t in la.svd(to_ember(a, device), full_matrices=full))
        want = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == tuple(w.shape for w in want)
        np.testing.assert_allclose(s, want[1], atol=1e-10)
        k = s.shape[-1]
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-10)
        assert _orthonormal_columns(u) and _orthonormal_columns(np.swapaxes(vh, -1, -2))
    for mode in ("reduced", "complete"):
        q, r = (to_numpy(t) for t in la.qr(to_ember(a, device), mode=mode))
        assert (q.shape, r.shape) == tuple(w.shape for w in np.linalg.qr(a, mode=mode))
        np.testing.assert_allclose(q @ r, a, atol=1e-10)
        assert _orthonormal_columns(q) and np.array_equal(np.triu(r), r)


def test_qr_of_a_wide_matrix_with_an_exactly_dependent_column(device):
    # the second column's residual is exactly 0: its Q column must still span the plane, or
    # the third column loses its component (Q R gave [[1, 1, 0], [0, 0, 0]])
    a = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    q, r = (to_numpy(t) for t in la.qr(to_ember(a, device)))
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    assert _orthonormal_columns(q)
