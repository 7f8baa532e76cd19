"""The wasm backend beyond the conformance suite: reductions, scans, sort and indexing against
numpy float64 (and numpy's stable sort) on large, odd and strided inputs; views that share
memory; memory given back when tensors die; the typed errors raised before a kernel runs; and
a jitted training step on wasm against the eager one on numpy."""

from __future__ import annotations

import gc

import numpy as np
import pytest

pytest.importorskip("wasmtime")

import ember  # noqa: E402
from ember import dtype as dt  # noqa: E402
from ember.backends.wasm.backend import WasmBackend  # noqa: E402
from ember.errors import ShapeError, TensorIndexError  # noqa: E402
from ember.tensordata import TensorData  # noqa: E402


@pytest.fixture(scope="module")
def b():
    return WasmBackend()


@pytest.fixture
def rng():
    return np.random.default_rng(15)


def up(b, a):
    return b.from_data(TensorData.from_numpy(np.ascontiguousarray(a)))


def down(b, t) -> np.ndarray:
    return b.to_data(t).to_numpy()


def close(got, ref, dtype, scale=1.0):
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape
    tol = (2e-6 if dtype == np.float32 else 1e-12) * max(scale, 1.0)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def permuted(b, a, axes):
    """A permuted (non-contiguous) view of ``a`` uploaded, and the numpy array it shows."""
    inverse = tuple(np.argsort(axes))
    base = up(b, np.transpose(a, inverse))
    return b.permute(base, axes), a


# ---------------------------------------------------------------------- reductions
SHAPES_DIMS = [
    ((1000003,), (0,)),  # a long row: the SIMD path and its tail
    ((7, 13, 5), (1,)),  # inner > 1
    ((7, 13, 5), (0, 2)),  # scattered dims: moved to the end first
    ((3, 4, 5, 6), (1, 2)),
    ((3, 4, 5, 6), (0, 1, 2, 3)),
    ((257, 3), (0,)),
    ((4, 0, 3), (1,)),  # empty reduction
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dims", SHAPES_DIMS)
def test_float_reductions_vs_float64(b, rng, dtype, shape, dims):
    a = rng.standard_normal(shape).astype(dtype)
    x = up(b, a)
    ref = a.astype(np.float64)
    count = int(np.prod([shape[d] for d in dims]))
    n = max(count, 1)
    close(down(b, b.float_sum(x, dims)), ref.sum(axis=dims, keepdims=True), dtype, np.sqrt(n))
    with np.errstate(invalid="ignore"):  # an empty mean is NaN (0 / 0)
        mean = ref.sum(axis=dims, keepdims=True) / count
    close(down(b, b.float_mean(x, dims)), mean, dtype)
    if all(shape[d] for d in dims):
        close(down(b, b.float_max(x, dims)), ref.max(axis=dims, keepdims=True), dtype)
        close(down(b, b.float_min(x, dims)), ref.min(axis=dims, keepdims=True), dtype)
        for corr in (0, 1):
            close(down(b, b.float_var(x, dims, corr)),
                  ref.var(axis=dims, keepdims=True, ddof=corr), dtype, 10)
        lse = np.log(np.exp(ref).sum(axis=dims, keepdims=True))
        close(down(b, b.float_logsumexp(x, dims)), lse, dtype, 10)
    if n <= 1000:
        small = (a / 2 + 1).astype(dtype)
        close(down(b, b.float_prod(up(b, small), dims)),
              small.astype(np.float64).prod(axis=dims, keepdims=True), dtype, n)


def test_reductions_read_permuted_and_sliced_views(b, rng):
    a = rng.standard_normal((6, 7, 8))
    x, ref = permuted(b, a, (2, 0, 1))
    close(down(b, b.float_sum(x, (1,))), ref.sum(axis=1, keepdims=True), np.float64)
    sliced = b.slice(up(b, a), ((5, -1, -2), (0, 7, 3), (1, 8, 1)))
    close(down(b, b.float_max(sliced, (0, 2))),
          a[5::-2, 0:7:3, 1:].max(axis=(0, 2), keepdims=True), np.float64)
    expanded = b.expand(up(b, a[:, :1, :]), (6, 7, 8))
    close(down(b, b.float_sum(expanded, (1,))), 7 * a[:, :1, :], np.float64)


def test_nan_propagates_and_logsumexp_handles_infinities(b):
    a = np.array([[1.0, np.nan, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0]],
                 np.float32)
    x = up(b, a)
    assert np.isnan(down(b, b.float_max(x, (1,)))[0, 0])
    assert np.isnan(down(b, b.float_min(x, (1,)))[0, 0])
    assert np.isnan(down(b, b.float_sum(x, (1,)))[0, 0])
    lse = down(b, b.float_logsumexp(x, (1,)))[:, 0]
    assert np.isnan(lse[0]) and lse[1] == -np.inf and lse[2] == np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_min_of_long_rows_propagate_nan_anywhere(b, rng, dtype):
    a = rng.standard_normal((6, 1003)).astype(dtype)
    for row, at in enumerate((0, 5, 500, 999, 1001)):  # SIMD lanes, the scalar tail
        a[row, at] = np.nan
    x = up(b, a)
    for fn, ref in ((b.float_max, np.max), (b.float_min, np.min)):
        got = down(b, fn(x, (1,)))
        np.testing.assert_array_equal(got, ref(a, axis=1, keepdims=True))


def test_empty_reductions_have_identities_and_extremes_raise(b):
    x = up(b, np.zeros((3, 0), np.float32))
    assert down(b, b.float_sum(x, (1,))).tolist() == [[0.0]] * 3
    assert down(b, b.float_prod(x, (1,))).tolist() == [[1.0]] * 3
    e = up(b, np.zeros((2, 0), np.bool_))
    assert down(b, b.bool_any(e, (1,))).tolist() == [[False]] * 2
    assert down(b, b.bool_all(e, (1,))).tolist() == [[True]] * 2
    with pytest.raises(ShapeError, match="max: can't reduce over dims"):
        b.float_max(x, (1,))
    with pytest.raises(ShapeError, match="argmin: dim 1 of shape"):
        b.int_argmin(up(b, np.zeros((3, 0), np.int32)), 1)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64])
def test_int_reductions_wrap_like_numpy(b, rng, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (5, 300), dtype=dtype, endpoint=True)
    x = up(b, a)
    for dims in ((1,), (0,), (0, 1)):
        assert np.array_equal(down(b, b.int_sum(x, dims)),
                              a.sum(axis=dims, keepdims=True, dtype=dtype))
        assert np.array_equal(down(b, b.int_prod(x, dims)),
                              a.prod(axis=dims, keepdims=True, dtype=dtype))
        assert np.array_equal(down(b, b.int_max(x, dims)), a.max(axis=dims, keepdims=True))
        assert np.array_equal(down(b, b.int_min(x, dims)), a.min(axis=dims, keepdims=True))


def test_bool_any_all_over_dims(b, rng):
    a = rng.random((4, 5, 6)) < 0.1
    x = up(b, a)
    for dims in ((0,), (2,), (0, 2), (0, 1, 2)):
        assert np.array_equal(down(b, b.bool_any(x, dims)), a.any(axis=dims, keepdims=True))
        assert np.array_equal(down(b, b.bool_all(up(b, ~a), dims)),
                              (~a).all(axis=dims, keepdims=True))


# ---------------------------------------------------------------------- arg-reductions, scans
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_argmax_argmin_first_on_ties_and_nan(b, rng, dim):
    a = rng.integers(0, 3, (5, 6, 7)).astype(np.float64)  # many ties
    a[2, 3, 4] = np.nan
    a[1, 3, 4] = np.nan
    x = up(b, a)
    assert np.array_equal(down(b, b.float_argmax(x, dim)),
                          np.expand_dims(np.argmax(a, axis=dim), dim))
    assert np.array_equal(down(b, b.float_argmin(x, dim)),
                          np.expand_dims(np.argmin(a, axis=dim), dim))
    i = rng.integers(-2, 2, (5, 6, 7))
    assert np.array_equal(down(b, b.int_argmax(up(b, i), dim)),
                          np.expand_dims(np.argmax(i, axis=dim), dim))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scans_vs_numpy(b, rng, dim):
    a = rng.standard_normal((4, 9, 5))
    x = up(b, a)
    close(down(b, b.float_cumsum(x, dim)), np.cumsum(a, axis=dim), np.float64)
    close(down(b, b.float_cumprod(x, dim)), np.cumprod(a, axis=dim), np.float64)
    i = rng.integers(-100, 100, (4, 9, 5)).astype(np.int8)
    assert np.array_equal(down(b, b.int_cumsum(up(b, i), dim)),
                          np.cumsum(i, axis=dim, dtype=np.int8))
    assert np.array_equal(down(b, b.int_cumprod(up(b, i), dim)),
                          np.cumprod(i, axis=dim, dtype=np.int8))


# ---------------------------------------------------------------------- sort
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("shape,dim", [((3000,), 0), ((7, 37), 1), ((37, 7), 0), ((4, 5, 6), 1)])
def test_sort_is_stable_like_numpy(b, rng, dtype, shape, dim):
    a = rng.integers(0, 10, shape).astype(dtype)  # many ties: stability shows
    if np.dtype(dtype).kind == "f":
        a[rng.random(shape) < 0.1] = np.nan
    x = up(b, a)
    sort = b.float_sort if a.dtype.kind == "f" else b.int_sort
    values, indices = sort(x, dim, False)
    order = np.argsort(a, axis=dim, kind="stable")  # NaNs last, in order
    assert np.array_equal(down(b, indices), order)
    np.testing.assert_array_equal(down(b, values), np.take_along_axis(a, order, dim))


def test_descending_sort_puts_nans_first_and_keeps_ties_in_order(b, rng):
    a = rng.integers(0, 5, 200).astype(np.float32)
    a[rng.random(200) < 0.1] = np.nan
    values, indices = b.float_sort(up(b, a), 0, True)
    # the reference: the python backend's sort (Python's stable sort with reverse=True)
    py = ember.get_backend("python")
    ref_v, ref_i = py.float_sort(py.from_data(TensorData.from_numpy(a)), 0, True)
    assert down(b, indices).tolist() == py.to_data(ref_i).to_numpy().tolist()
    np.testing.assert_array_equal(down(b, values), py.to_data(ref_v).to_numpy())
    assert np.isnan(down(b, values)[: int(np.isnan(a).sum())]).all()


# ---------------------------------------------------------------------- indexing
def test_cat_of_views_and_empties(b, rng):
    a = rng.standard_normal((3, 4))
    c = rng.standard_normal((4, 3))
    parts = [up(b, a), b.permute(up(b, c), (1, 0)), up(b, np.zeros((3, 0))),
             b.flip(up(b, a), (1,))]
    got = down(b, b.cat(parts, 1))
    assert np.array_equal(got, np.concatenate([a, c.T, np.zeros((3, 0)), a[:, ::-1]], 1))


def test_slice_assign_is_functional_with_negative_steps(b, rng):
    a = rng.standard_normal((5, 6))
    v = rng.standard_normal((3, 2))
    x = up(b, a)
    ranges = ((4, -1, -2), (1, 5, 2))
    got = down(b, b.slice_assign(x, ranges, up(b, v)))
    ref = a.copy()
    ref[4::-2, 1:5:2] = v
    assert np.array_equal(got, ref)
    assert np.array_equal(down(b, x), a)  # x unchanged


def test_gather_scatter_read_expanded_index_views(b, rng):
    a = rng.standard_normal((4, 5, 6))
    idx = rng.integers(0, 5, (4, 1, 6))
    index = b.expand(up(b, idx), (4, 3, 6))  # a stride-0 view, never copied
    full_idx = np.broadcast_to(idx, (4, 3, 6))
    got = down(b, b.gather(up(b, a), 1, index))
    assert np.array_equal(got, np.take_along_axis(a, full_idx, 1))
    src = rng.standard_normal((5, 4, 7))  # larger than index: its leading corner is read
    out = down(b, b.scatter(up(b, a), 1, index, up(b, src), "add"))
    ref = a.copy()
    np.add.at(ref, (np.arange(4)[:, None, None], full_idx, np.arange(6)), src[:4, :3, :6])
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_scatter_replace_and_add_on_ints_and_bools(b):
    x = up(b, np.zeros((2, 4), np.int8))
    index = up(b, np.array([[1, 1, 3], [0, 2, 2]]))
    src = up(b, np.array([[100, 100, 5], [-7, 1, 2]], np.int8))
    added = down(b, b.scatter(x, 1, index, src, "add"))
    assert added.tolist() == [[0, -56, 0, 5], [-7, 0, 3, 0]]  # 200 wraps to -56 like numpy
    replaced = down(b, b.scatter(x, 1, index, src, "none"))
    assert replaced.tolist() == [[0, 100, 0, 5], [-7, 0, 2, 0]]  # the last write wins
    flags = up(b, np.zeros((1, 3), np.bool_))
    ones = up(b, np.ones((1, 2), np.bool_))
    got = down(b, b.scatter(flags, 1, up(b, np.array([[2, 2]])), ones, "add"))
    assert got.tolist() == [[False, False, True]]


def test_index_select_vs_numpy(b, rng):
    a = rng.standard_normal((3, 7, 4))
    idx = np.array([6, 0, 0, 3])
    for dim in range(3):
        i = idx % a.shape[dim]
        got = down(b, b.index_select(up(b, a), dim, up(b, i)))
        assert np.array_equal(got, np.take(a, i, axis=dim))


@pytest.mark.parametrize("op", ["gather", "scatter", "index_select"])
def test_out_of_range_indices_raise_before_the_kernel(b, op):
    x = up(b, np.zeros((2, 3), np.float32))
    bad = up(b, np.array([[0, 3]]) if op != "index_select" else np.array([1, -1]))
    with pytest.raises(TensorIndexError, match=r"index (3|-1) is out of range .*valid: 0 to 2"):
        if op == "gather":
            b.gather(x, 1, bad)
        elif op == "scatter":
            b.scatter(x, 1, bad, up(b, np.ones((1, 2), np.float32)))
        else:
            b.index_select(x, 1, bad)


def test_scatter_names_the_valid_reductions(b):
    x = up(b, np.zeros((2,), np.float32))
    with pytest.raises(ValueError, match="reduce must be 'none' or 'add', got 'mul'"):
        b.scatter(x, 0, up(b, np.array([0])), up(b, np.ones(1, np.float32)), "mul")


def test_int_pow_rejects_negative_exponents_like_numpy(b):
    a = up(b, np.array([2, 3, 4], np.int32))
    with pytest.raises(ValueError, match="negative integer powers"):
        b.int_pow(a, up(b, np.array([1, -1, 2], np.int32)))
    assert down(b, b.int_pow(a, up(b, np.array([3, 0, 16], np.int32)))).tolist() == \
        np.power(np.array([2, 3, 4], np.int32), np.array([3, 0, 16], np.int32)).tolist()


# ---------------------------------------------------------------------- views and memory
def test_views_share_the_block(b, rng):
    x = up(b, rng.standard_normal((4, 6)))
    views = [b.permute(x, (1, 0)), b.slice(x, ((1, 3, 1), (0, 6, 2))), b.flip(x, (0,)),
             b.reshape(x, (2, 12)), b.expand(b.reshape(x, (1, 4, 6)), (3, 4, 6))]
    assert all(v.block is x.block for v in views)
    c = b.reshape(b.permute(x, (1, 0)), (24,))  # reshape of a non-contiguous view copies
    assert c.block is not x.block
    assert np.array_equal(down(b, c), down(b, x).T.reshape(24))


def test_views_of_twenty_dims(b, rng):
    """Strided walks of any rank (the kernels' index arrays are sized by the rank)."""
    a = rng.standard_normal((2,) * 20)
    axes = tuple(range(19, -1, -1))
    x, ref = b.permute(up(b, a), axes), np.transpose(a, axes)
    assert np.array_equal(down(b, b.float_add(x, x)), ref + ref)
    assert np.array_equal(down(b, b.cat([x, x], 3)), np.concatenate([ref, ref], 3))
    close(down(b, b.float_sum(x, (0, 7, 19))), ref.sum(axis=(0, 7, 19), keepdims=True),
          np.float64, 8)


def test_copy_into_writes_a_strided_view_in_place(b, rng):
    base = up(b, np.zeros((3, 4)))
    target = b.permute(b.slice(base, ((0, 3, 1), (0, 4, 2))), (1, 0))  # (2, 3), strided
    src = rng.standard_normal((3, 2))
    b.copy_into(target, b.permute(up(b, src), (1, 0)))
    ref = np.zeros((3, 4))
    ref[:, ::2] = src
    assert np.array_equal(down(b, base), ref)


def test_memory_is_given_back_when_tensors_die(b, rng):
    host = b.rt.host
    a = up(b, rng.standard_normal((256, 256)).astype(np.float32))
    for _ in range(3):  # warm up the allocator
        b.float_sum(b.cat([a, a], 0), (0,))
    gc.collect()
    before = host.memory_size()
    for _ in range(200):  # 200 x 512 KiB of temporaries: far more than the memory holds
        big = b.cat([a, a], 0)
        b.float_sum(b.permute(big, (1, 0)), (1,))
        b.gather(big, 1, b.expand(up(b, np.zeros((1, 1), np.int64)), (512, 256)))
    gc.collect()
    assert host.memory_size() == before


# ---------------------------------------------------------------------- through ember
def test_a_jitted_training_step_on_wasm_matches_eager_numpy():
    from ember import nn, optim
    from ember.nn.loss import cross_entropy

    def train(name: str, jitted: bool):
        bk = ember.Autodiff(ember.get_backend(name))
        ember.seed(0)
        with ember.use_backend(bk):
            model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 3))
        opt = optim.Adam(model.parameters(), lr=0.02, weight_decay=1e-3)

        def step(x, y):
            loss = cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss

        fn = ember.jit(step) if jitted else step
        rng = np.random.default_rng(3)
        losses = []
        for _ in range(6):
            x = ember.tensor(rng.standard_normal((8, 6)).astype(np.float32), backend=bk)
            y = ember.tensor(rng.integers(0, 3, 8), backend=bk)
            losses.append(fn(x, y).item())
        return model, losses, fn

    model, losses, fn = train("wasm", True)
    ref, ref_losses, _ = train("numpy", False)
    assert (fn.traces, fn.replays) == (1, 4)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


def test_jitted_sort_gather_cat_scan_match_numpy_and_replays_check_indices(rng):
    bk = ember.get_backend("wasm")

    @ember.jit
    def f(x, i):
        c = ember.cat([x.sort(dim=1).values, x.gather(1, i)], dim=1)
        return c.cumsum(dim=1).logsumexp(dim=1), x.index_select(0, i[:, 0]).var(dim=0)

    for _ in range(4):
        x = rng.standard_normal((5, 7)).astype(np.float32)
        i = rng.integers(0, 5, (5, 2))
        lse, var = f(ember.tensor(x, backend=bk), ember.tensor(i, backend=bk))
        c = np.cumsum(np.concatenate([np.sort(x, 1), np.take_along_axis(x, i, 1)], 1), 1)
        close(lse.numpy(), np.log(np.exp(c.astype(np.float64)).sum(1)), np.float32, 10)
        close(var.numpy(), x[i[:, 0]].astype(np.float64).var(0, ddof=1), np.float32, 10)
    assert f.replays >= 2
    with pytest.raises(TensorIndexError, match="gather: index 14 is out of range"):
        f(ember.tensor(x, backend=bk), ember.tensor(i + 10, backend=bk))


def test_front_end_ops_on_wasm_match_numpy(rng):
    a = rng.standard_normal((5, 8)).astype(np.float32)
    t = ember.tensor(a, backend="wasm")
    np.testing.assert_allclose(t.sort(dim=1, descending=True).values.numpy(),
                               -np.sort(-a, axis=1), rtol=0)
    np.testing.assert_allclose(t.std(dim=0).numpy(), a.astype(np.float64).std(0, ddof=1),
                               rtol=1e-5)
    assert t.argmax(dim=1).numpy().tolist() == a.argmax(1).tolist()
    assert t.dtype == dt.float32


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64])
@pytest.mark.parametrize("seed,offset,n",
                         [(0, 0, 1), (42, 7, 1001), ((1 << 64) - 3, (1 << 40) + 5, 37)])
def test_random_uniform_gives_the_philox_stream_bits(b, dtype, seed, offset, n):
    from ember.random import philox_uniform

    got = down(b, b.random_uniform((n,), dtype, seed, offset))
    ref = np.array(philox_uniform(n, seed, offset), dtype=np.float64)
    assert np.array_equal(got, ref.astype(dtype.name))


def test_coalesce_merges_the_dims_every_view_walks_as_one():
    from ember.backends.wasm.tensor import coalesce

    assert coalesce((4, 5, 6), (30, 6, 1), (30, 6, 1)) == ((120,), ((1,), (1,)))
    assert coalesce((4, 5, 6), (60, 6, 1), (30, 6, 1)) == ((4, 30), ((60, 1), (30, 1)))
    assert coalesce((4, 1, 6), (6, 6, 1), (1, 0, 4)) == ((4, 6), ((6, 1), (1, 4)))
    assert coalesce((1, 1), (1, 1)) == ((), ((),))
    assert coalesce((3, 0), (0, 1)) == ((3, 0), ((0, 1),))


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0)])
def test_softplus_vs_float64(b, beta, threshold):
    a = np.concatenate([np.linspace(-60, 60, 1001), [np.inf, -np.inf]]).astype(np.float32)
    got = down(b, b.softplus(up(b, a), beta, threshold))
    x = a.astype(np.float64)
    with np.errstate(over="ignore"):
        ref = np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)
    close(got, ref, np.float32)
    assert np.isnan(down(b, b.softplus(up(b, np.array([np.nan], np.float32)), beta, threshold)))


def test_docs_example_prints_what_it_says(capsys):
    from pathlib import Path
    import re
    import sys

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    from tests.docs.blocks import python_blocks

    example = python_blocks(root / "docs" / "wasm.md")[0]
    exec(compile(example, "docs/wasm.md", "exec"), {})
    printed = capsys.readouterr().out.strip()
    assert printed == re.search(r"# (\[.*\])", example).group(1)
