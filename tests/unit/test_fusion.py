"""Fusion: fused results equal the eager results of the same inner backend (numpy, wgpu on
lavapipe) bit for bit, chains run as one program (one dispatch on wgpu), kernels are cached by
graph signature, graphs materialise at the compiler's limits, and Autodiff(Fusion(wgpu))
gradients equal numpy's."""

from __future__ import annotations

import asyncio
import os
import tracemalloc

import ember
import numpy as np
import pytest
from ember import Autodiff, Fusion, get_backend
from ember.errors import EmberError

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def _wgpu_missing() -> str | None:
    try:
        import wgpu  # noqa: F401

        get_backend("wgpu")
    except (ImportError, EmberError, RuntimeError) as e:
        return f"no wgpu adapter: {e}"
    return None


needs_wgpu = pytest.mark.skipif(_wgpu_missing() is not None, reason=str(_wgpu_missing()))
INNERS = ["numpy", pytest.param("wgpu", marks=needs_wgpu)]
SHAPE = (128, 160)
rng = np.random.default_rng(7)
X = rng.standard_normal(SHAPE).astype(np.float32)
Y = rng.uniform(0.1, 2.0, SHAPE).astype(np.float32)
ROW = rng.standard_normal(SHAPE[1]).astype(np.float32)


def fusing(inner: str) -> Fusion:
    """A fresh Fusion over ``inner`` that fuses tensors of every size (numpy's leaves small
    ones eager by default: test_numpy_fuses_only_tensors_worth_it)."""
    fusion = Fusion(get_backend(inner))
    fusion.compiler.min_elements = 0
    return fusion


def both(inner: str, fn, *arrays):
    """``fn`` on a fresh ``Fusion(inner)`` and on ``inner`` itself: (fused, eager, fusion)."""
    fusion = fusing(inner)
    fused = fn(*(ember.tensor(a, backend=fusion) for a in arrays))
    pending = fused._prim.pending
    eager = fn(*(ember.tensor(a, backend=inner) for a in arrays))
    out = fused.numpy()
    assert pending and fusion.programs >= 1, "the chain was not recorded lazily"
    return out, eager.numpy(), fusion


def float_chain(x, y, row):
    z = x * 1.5 + row  # a broadcast leaf (stride 0) and a scalar constant
    z = (z * z - y / 3.0).tanh() + x.exp() * 0.01
    z = ember.where(z > 0.1, z, z.sin()) + ember.maximum(x, y).sqrt()
    z = z.sigmoid() - x.abs().relu() * 2.0
    return (z * 100.0).int().float() / 7.0 + y.log()  # casts through int32 and back


def bool_chain(x, y, row):
    return ((x > 0.2) & (y < 1.0)) | ~(x + row > y)


def int_chain(x, y, row):
    i = (x.abs() * 40.0).to(ember.int32)
    return (i * 3 + 7) // 2 - i % 5


def uint8_chain(x, y, row):
    u = (x.abs() * 60.0).to(ember.uint8)
    return (u + 200) * 3 - u  # wraps at every step, as eager uint8 does


def int8_chain(x, y, row):
    i = (x * 40.0).to(ember.int8)
    return (i + 100) * 3 - i.abs()


def f16_chain(x, y, row):
    h, r = x.half(), row.half()
    z = (h * 0.1 + r) * (h - 0.3)  # 0.1 is rounded to float16 first, like eager's full
    return (z.exp() / (y.half() + 1.0)).tanh() * 1000.0


CHAINS = [float_chain, bool_chain, int_chain, uint8_chain, int8_chain, f16_chain]


@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("chain", CHAINS, ids=lambda f: f.__name__)
def test_fused_chain_equals_eager(inner, chain):
    fused, eager, _ = both(inner, chain, X, Y, ROW)
    assert fused.dtype == eager.dtype
    np.testing.assert_array_equal(fused, eager)


@pytest.mark.parametrize("inner", INNERS)
def test_strided_leaves(inner):
    """Leaves that are views: transposed, stepped and reversed slices, offsets."""

    def fn(x, y):
        t = x.T[::2, 1:]  # (150, 255): strides of a transpose, a step, an offset
        u = y.flip(0).T[1::2, :-1] * 2.0
        return (t - u).exp() * t

    a, b = (rng.standard_normal((256, 300)).astype(np.float32) for _ in range(2))
    fused, eager, _ = both(inner, fn, a, b)
    np.testing.assert_array_equal(fused, eager)


@pytest.mark.parametrize("inner", INNERS)
def test_a_broadcast_pending_value_fuses_into_its_user(inner):
    """``x - x.mean(1)``: the mean's division, broadcast back, runs inside the subtraction's
    program (its leaf, the sum, is read through zero strides) instead of a program of its own."""

    def fn(x, y):
        m = x.sum(dim=1, keepdim=True) / 160.0
        return ((x - m) * y + m.exp()).tanh()

    fused, eager, fusion = both(inner, fn, X, Y)
    np.testing.assert_array_equal(fused, eager)
    assert fusion.programs == 1


@pytest.mark.parametrize("inner", INNERS)
def test_movement_of_a_pending_result_materialises_it(inner):
    def fn(x, y):
        return (x * 2.0 + y).T.exp() + 1.0

    fused, eager, fusion = both(inner, fn, X, Y)
    np.testing.assert_array_equal(fused, eager)
    assert fusion.programs == 2  # before the transpose, and the read


@needs_wgpu
def test_a_chain_is_one_dispatch():
    fusion = fusing("wgpu")
    engine = fusion.inner.rt.engine
    x = ember.tensor(X, backend=fusion)
    y = ember.tensor(Y, backend=fusion)
    before = engine.dispatches
    z = x
    for k in range(40):
        z = (z * 0.5 + y) if k % 2 else z.tanh()
    out = z.numpy()
    assert engine.dispatches - before == 1
    ref = X.astype(np.float64)
    for k in range(40):
        ref = (ref * 0.5 + Y) if k % 2 else np.tanh(ref)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@needs_wgpu
def test_new_scalar_values_reuse_the_compiled_kernel():
    fusion = fusing("wgpu")
    lib = fusion.inner.rt.lib
    x = ember.tensor(X, backend=fusion)
    first = ((x * 1.5 + 0.25).exp() - 2.0).numpy()
    compiled = len(lib)
    second = ((x * -3.0 + 1.0).exp() - 0.5).numpy()
    assert len(lib) == compiled
    np.testing.assert_allclose(first, np.exp(X * 1.5 + 0.25) - 2.0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(second, np.exp(X * -3.0 + 1.0) - 0.5, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inner", INNERS)
def test_materialises_at_the_node_limit(inner):
    fusion = fusing(inner)
    fusion.compiler.max_nodes = 8
    x = ember.tensor(X, backend=fusion)
    z = x
    for _ in range(20):
        z = -z.abs()
    # 40 nodes: the 9th, 17th, 25th and 33rd materialise their input; the read, the rest
    np.testing.assert_array_equal(z.numpy(), -np.abs(X))
    assert fusion.programs == 5


@needs_wgpu
def test_materialises_at_the_leaf_limit():
    fusion = fusing("wgpu")
    arrays = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(9)]
    total = ember.tensor(arrays[0], backend=fusion)
    for a in arrays[1:]:
        total = total + ember.tensor(a, backend=fusion)
    assert total._prim.leaves and len(total._prim.leaves) <= fusion.compiler.max_leaves
    out = total.numpy()
    assert fusion.programs == 2  # 6 leaves per kernel (8 storage bindings - meta - output)
    eager = ember.tensor(arrays[0], backend="wgpu")
    for a in arrays[1:]:
        eager = eager + ember.tensor(a, backend="wgpu")
    np.testing.assert_array_equal(out, eager.numpy())


@pytest.mark.parametrize("inner", INNERS)
def test_a_materialised_node_keeps_its_result(inner):
    fusion = fusing(inner)
    x = ember.tensor(X, backend=fusion)
    y = x * 2.0 + 1.0
    y.numpy()
    assert not y._prim.pending and fusion.programs == 1
    y.numpy()
    z = y.exp()
    np.testing.assert_allclose(z.numpy(), np.exp(X * 2 + 1), rtol=1e-6)
    assert fusion.programs == 2  # y was read as a leaf, not recomputed


@pytest.mark.parametrize("inner", INNERS)
def test_values_held_elsewhere_are_outputs_of_the_same_program(inner):
    """Intermediate values that are still referenced (here: by Python names) are written by
    the program that computes them in passing, in their own dtypes (float16, bool, int8 pack
    2 and 4 per word on wgpu), so reading them later runs nothing."""

    def fn(x, y):
        h = x.half() * 0.5
        b = h > 0.1
        i = (x * 10.0).to(ember.int8)
        z = h.float() + i.float() * b.float() - y
        return z, h, b, i

    fusion = fusing(inner)
    fused = fn(*(ember.tensor(a, backend=fusion) for a in (X, Y)))
    eager = fn(*(ember.tensor(a, backend=inner) for a in (X, Y)))
    np.testing.assert_array_equal(fused[0].numpy(), eager[0].numpy())
    assert fusion.programs == 1
    assert not any(t._prim.pending for t in fused)
    for f, e in zip(fused[1:], eager[1:]):
        assert f.dtype == e.dtype
        np.testing.assert_array_equal(f.numpy(), e.numpy())
    assert fusion.programs == 1


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 1025])
@needs_wgpu
def test_packed_outputs_of_any_length(n):
    """Lanes write 4 elements; float16, int8 and bool outputs pack 2 or 4 to a word."""
    fusion = fusing("wgpu")
    a = rng.standard_normal(n).astype(np.float32)
    x = ember.tensor(a, backend=fusion)
    h, b, i = x.half() * 3.0, x > 0.0, (x * 50.0).to(ember.int8)
    total = (h.float() + b.float() + i.float()).numpy()  # writes h, b and i too
    assert fusion.programs == 1
    np.testing.assert_array_equal(h.numpy(), (a.astype(np.float16) * np.float16(3.0)))
    np.testing.assert_array_equal(b.numpy(), a > 0)
    np.testing.assert_array_equal(i.numpy(), (a * np.float32(50.0)).astype(np.int8))
    np.testing.assert_array_equal(
        total, h.numpy().astype(np.float32) + (a > 0) + i.numpy().astype(np.float32))
    assert fusion.programs == 1


@pytest.mark.parametrize("inner", INNERS)
def test_state_carried_from_step_to_step_stays_bounded(inner):
    """An optimizer's moment (``m = 0.9 m + 0.1 g``) is computed in passing by each step's
    read; the next step keeps it instead of growing its graph by one step each time."""
    fusion = fusing(inner)
    m, p = ember.zeros(SHAPE, backend=fusion), ember.tensor(X, backend=fusion)
    ref_m, ref_p = np.zeros(SHAPE, np.float32), X.copy()
    for i in range(12):
        g = X * np.float32(i % 5)
        m = m * 0.9 + ember.tensor(g, backend=fusion) * 0.1
        p = p - m
        p.numpy()  # a read per step, like a training loss
        assert m._prim.nodes <= 6  # one step: 3 ops, at most 3 constants, over a kept m
        ref_m = ref_m * np.float32(0.9) + g * np.float32(0.1)
        ref_p = ref_p - ref_m
    np.testing.assert_allclose(p.numpy(), ref_p, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("inner", INNERS)
def test_to_data_async_materialises(inner):
    fusion = fusing(inner)
    y = ember.tensor(X, backend=fusion) * 3.0
    data = asyncio.run(fusion.to_data_async(y._prim))
    np.testing.assert_array_equal(data.to_numpy(), X * np.float32(3.0))


def test_numpy_chain_reuses_its_temporaries():
    fusion = fusing("numpy")
    a = np.ones((1024, 1024), np.float32)
    x = ember.tensor(a, backend=fusion)
    z = x
    for _ in range(50):
        z = z * 0.99 + 0.5
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = fusion.materialise(z._prim)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak <= 1.5 * a.nbytes  # the result and a block-sized temporary for 100 ops
    ref = a
    for _ in range(50):
        ref = ref * np.float32(0.99) + np.float32(0.5)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("chain", [float_chain, bool_chain, uint8_chain, f16_chain],
                         ids=lambda f: f.__name__)
def test_numpy_blocks_of_rows_equal_eager(chain):
    fusion = fusing("numpy")
    fusion.compiler.block = 4096  # 300 rows in blocks of 13, the last one shorter
    x = rng.standard_normal((300, 320)).astype(np.float32)
    y = rng.uniform(0.1, 2.0, (300, 1)).astype(np.float32)  # a column broadcast leaf
    row = rng.standard_normal(320).astype(np.float32)
    fused = chain(*(ember.tensor(a, backend=fusion) for a in (x, y, row)))
    eager = chain(*(ember.tensor(a, backend="numpy") for a in (x, y, row)))
    np.testing.assert_array_equal(fused.numpy(), eager.numpy())
    assert fusion.programs >= 1


def test_numpy_fuses_only_tensors_worth_it():
    fusion = Fusion(get_backend("numpy"))
    small = ember.ones((100, 100), backend=fusion) * 2.0 + 1.0
    assert not small._prim.pending  # eager: a ufunc call costs more than it saves here
    big = ember.ones((1024, 256), backend=fusion) * 2.0 + 1.0
    assert big._prim.pending
    assert big[0, 0].item() == small[0, 0].item() == 3.0


def test_over_a_backend_without_a_compiler_ops_pass_through():
    fusion = Fusion(get_backend("python"))
    x = ember.tensor([1.0, -2.0, 3.0], backend=fusion)
    z = (x * 2.0 + 1.0).abs()
    assert not z._prim.pending
    assert z.tolist() == [3.0, 3.0, 7.0]


def test_fusion_over_autodiff_says_where_autodiff_goes():
    with pytest.raises(EmberError, match="Autodiff outside Fusion"):
        Fusion(Autodiff(get_backend("numpy")))


@needs_wgpu
def test_autodiff_over_fusion_gradients_equal_numpy():
    a = rng.standard_normal((16, 5)).astype(np.float32)
    w0 = rng.standard_normal((5, 4)).astype(np.float32)
    b0 = rng.standard_normal(4).astype(np.float32)
    target = rng.standard_normal((16, 4)).astype(np.float32)

    def grads(backend):
        w = ember.tensor(w0, backend=backend).require_grad()
        b = ember.tensor(b0, backend=backend).require_grad()
        h = (ember.tensor(a, backend=backend) @ w + b).tanh() * 2.0 - 0.5
        d = h.sigmoid() * h - ember.tensor(target, backend=backend)
        loss = (d * d).mean()
        g = loss.backward()
        return loss.item(), g.get(w).numpy(), g.get(b).numpy()

    fused = grads(get_backend("autodiff-fusion-wgpu"))
    ref = grads(get_backend("autodiff-numpy"))
    for f, r in zip(fused, ref):
        np.testing.assert_allclose(f, r, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("inner", INNERS)
def test_training_steps_give_the_eager_weights_bit_for_bit(inner):
    """Adam steps of a small MLP: Autodiff(Fusion(inner)) ends with the weights of
    Autodiff(inner), exactly (forward, backward and the optimizer's update all fuse)."""
    from ember import nn
    from ember.nn.loss import cross_entropy
    from ember.optim import Adam

    def train(backend):
        ember.seed(0)
        with ember.use_backend(backend):
            model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))
        opt = Adam(model.parameters(), lr=1e-2)
        data = np.random.default_rng(1)
        for _ in range(3):
            x = ember.tensor(data.standard_normal((16, 20)).astype(np.float32), backend=backend)
            t = ember.tensor(data.integers(0, 5, 16), backend=backend)
            opt.step(cross_entropy(model(x), t).backward())
        return [p.numpy() for p in model.parameters()]

    fusion = fusing(inner)
    fused = train(Autodiff(fusion))
    assert fusion.programs > 0
    for f, e in zip(fused, train(Autodiff(get_backend(inner)))):
        np.testing.assert_array_equal(f, e)


# ---------------------------------------------------------------------- reductions and matmul
# On wgpu a reduction of a pending graph evaluates the graph where it reduces (one kernel: the
# eager reduction's, so the same accumulation order), and a matmul's elementwise users run in
# its store. The eager wgpu backend is the reference bit for bit (same kernels, same order);
# numpy float64 checks the values themselves.
SOFT = (rng.standard_normal((48, 300)) * 3).astype(np.float32)
A = rng.standard_normal((40, 96)).astype(np.float32)
W = rng.standard_normal((96, 24)).astype(np.float32)
BIAS = rng.standard_normal(24).astype(np.float32)


def softmax_pieces(x):
    e = (x - x.amax(1, keepdim=True)).exp()
    return e / e.sum(1, keepdim=True)


def log_softmax_pieces(x):
    s = x - x.amax(-1, keepdim=True)
    return s - s.exp().sum(-1, keepdim=True).log()


def norm_pieces(x):
    """layer_norm without its affine part: two means of pending graphs."""
    d = x - x.mean(-1, keepdim=True)
    return d / ((d * d).mean(-1, keepdim=True) + 1e-5).sqrt()


def linear_relu(x, w, b):
    return (x @ w + b).relu() * 0.5


def _np_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _np_log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def _np_norm(x):
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)


def _np_linear_relu(x, w, b):
    return np.maximum(x @ w + b, 0) * 0.5


def run_counted(fn, backend, *arrays):
    """``fn`` of the arrays on ``backend``: its result and the dispatches it took (the read
    included; the uploads not)."""
    engine = get_backend("wgpu").rt.engine
    xs = [ember.tensor(a, backend=backend) for a in arrays]
    for x in xs:
        x.numpy()
    before = engine.dispatches
    out = fn(*xs).numpy()
    return out, engine.dispatches - before


@needs_wgpu
@pytest.mark.parametrize("fn, ref, arrays, fused_count, eager_count", [
    (softmax_pieces, _np_softmax, (SOFT,), 3, 5),          # max, exp+sum, divide
    (log_softmax_pieces, _np_log_softmax, (SOFT,), 3, 6),  # max, exp+sum, log+subtract
    (norm_pieces, _np_norm, (SOFT,), 3, 9),                # sum, square+sum, normalise
    (linear_relu, _np_linear_relu, (A, W, BIAS), 1, 4),    # matmul+bias+relu+scale
])
def test_reduction_prologues_and_matmul_epilogues_fuse(fn, ref, arrays, fused_count,
                                                       eager_count):
    fusion = fusing("wgpu")
    fused, n_fused = run_counted(fn, fusion, *arrays)
    eager, n_eager = run_counted(fn, get_backend("wgpu"), *arrays)
    np.testing.assert_array_equal(fused, eager)
    np.testing.assert_allclose(fused, ref(*(a.astype(np.float64) for a in arrays)), rtol=2e-5,
                               atol=2e-6)
    assert (n_fused, n_eager) == (fused_count, eager_count)


@needs_wgpu
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "mean"])
def test_every_float_reduction_fuses_over_strided_leaves(op):
    """All dims, one dim, two dims; a transposed leaf and a broadcast row."""
    def fn(x, y, row):
        z = (x.T * 0.25 + row[:128]).tanh() * y.T + 1.0
        return [getattr(z, op)(dim=d) for d in ((0,), (1,), (0, 1))]

    fusion = fusing("wgpu")
    engine = get_backend("wgpu").rt.engine
    args = [ember.tensor(a, backend=fusion) for a in (X, Y, ROW)]
    before = engine.dispatches
    fused = [r.numpy() for r in fn(*args)]
    # one per reduction (the graph is never stored), and mean's division when it is read
    assert engine.dispatches - before == (6 if op == "mean" else 3)
    eager = [r.numpy() for r in fn(*(ember.tensor(a, backend="wgpu") for a in (X, Y, ROW)))]
    for f, e in zip(fused, eager):
        np.testing.assert_array_equal(f, e)


@needs_wgpu
def test_a_reduced_graph_stays_pending_and_kept_values_are_written():
    fusion = fusing("wgpu")
    x = ember.tensor(X, backend=fusion)
    d = (x * 2.0).tanh()  # held here, so the reduction's kernel writes it too
    e = d * d + 1.0
    s = e.sum(1, keepdim=True)
    assert not s._prim.pending and not d._prim.pending and e._prim.pending
    ref = np.tanh(X.astype(np.float64) * 2)
    np.testing.assert_allclose(s.numpy()[:, 0], (ref * ref + 1).sum(1), rtol=1e-5)
    np.testing.assert_allclose(e.numpy(), ref * ref + 1, rtol=1e-6, atol=1e-6)


@needs_wgpu
@pytest.mark.parametrize("case, count", [
    ("batched", 1), ("transposed", 1), ("held", None), ("twice", 2), ("reduced", 2),
    ("split_k", 3), ("empty_k", 2)])
def test_matmul_epilogue_cases_equal_eager(case, count):
    """Results equal eager wgpu's; ``count``: the dispatches under Fusion."""
    a3 = rng.standard_normal((3, 20, 33)).astype(np.float32)
    w3 = rng.standard_normal((3, 33, 17)).astype(np.float32)
    wt = rng.standard_normal((24, 96)).astype(np.float32)
    long_a = rng.standard_normal((4, 4096)).astype(np.float32)
    long_b = rng.standard_normal((4096, 8)).astype(np.float32)
    cases = {
        # a bias broadcast over batch and rows (zero strides), a scalar, a sigmoid
        "batched": (lambda a, w, b: (a @ w + b[:17]).sigmoid() * 3.0, (a3, w3, BIAS)),
        # a strided (transposed) operand and a (rows, 1) leaf
        "transposed": (lambda a, w, b: (a @ w.T) * a[:, :1] - b, (A, wt, BIAS)),
        # the raw product is held: it is computed alone, its users fuse as a chain
        "held": (lambda a, w, b: _both(a @ w, lambda p: (p + b).tanh()), (A, W, BIAS)),
        # two products in one graph: one is the epilogue's host, one is computed first
        "twice": (lambda a, w, b: (a @ w) * (a @ w + b), (A, W, BIAS)),
        # a reduction of a pending product: the product first, then the fused reduction
        "reduced": (lambda a, w, b: ((a @ w + b) * 2.0).sum(0), (A, W, BIAS)),
        # a long k splits the matmul: the product first, the rest as an elementwise program
        "split_k": (lambda a, w, b: (a @ w + b[:8]).relu(), (long_a, long_b, BIAS)),
        # (the pending bias is computed first, where it is reshaped to broadcast)
        "empty_k": (lambda a, w, b: a @ w + b[:5] * 2.0,
                    (np.zeros((3, 0), np.float32), np.zeros((0, 5), np.float32), BIAS)),
    }
    fn, arrays = cases[case]
    fused, n = run_counted(fn, fusing("wgpu"), *arrays)
    eager, _ = run_counted(fn, get_backend("wgpu"), *arrays)
    np.testing.assert_array_equal(fused, eager)
    assert count is None or n == count


def _both(p, f):
    """``f(p)`` and ``p`` itself, both read (so the product is held while the graph runs)."""
    out = f(p)
    return ember.stack([out, p])


@needs_wgpu
def test_autodiff_over_fusion_gradients_equal_eager_wgpu_through_fused_kernels():
    """A linear+bias+relu layer, a norm and a softmax cross-entropy written with tensor ops:
    Autodiff(Fusion(wgpu)) gives Autodiff(wgpu)'s gradients (and numpy's, within float32)."""
    a = rng.standard_normal((32, 24)).astype(np.float32)
    w0 = (rng.standard_normal((24, 16)) * 0.3).astype(np.float32)
    b0 = rng.standard_normal(16).astype(np.float32)
    onehot = np.eye(16, dtype=np.float32)[rng.integers(0, 16, 32)]

    def grads(backend):
        w = ember.tensor(w0, backend=backend).require_grad()
        b = ember.tensor(b0, backend=backend).require_grad()
        h = norm_pieces((ember.tensor(a, backend=backend) @ w + b).relu())
        loss = -(log_softmax_pieces(h) * ember.tensor(onehot, backend=backend)).sum(1).mean()
        g = loss.backward()
        return loss.item(), g.get(w).numpy(), g.get(b).numpy()

    fused = grads(get_backend("autodiff-fusion-wgpu"))
    eager = grads(Autodiff(get_backend("wgpu")))
    ref = grads(get_backend("autodiff-numpy"))
    for f, e, r in zip(fused, eager, ref):
        np.testing.assert_array_equal(f, e)
        np.testing.assert_allclose(f, r, rtol=1e-4, atol=1e-5)


@needs_wgpu
def test_a_jitted_training_step_on_autodiff_fusion_wgpu_matches_eager():
    from ember import nn
    from ember.nn.loss import cross_entropy
    from ember.optim import Adam

    def train(backend, jitted):
        ember.seed(0)
        with ember.use_backend(backend):
            model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.LayerNorm(32),
                                  nn.Linear(32, 5))
        opt = Adam(model.parameters(), lr=1e-2)

        def step(x, t):
            loss = cross_entropy(model(x), t)
            opt.step(loss.backward())
            return loss

        fn = ember.jit(step) if jitted else step
        data = np.random.default_rng(1)
        losses = []
        for _ in range(4):
            x = ember.tensor(data.standard_normal((16, 20)).astype(np.float32), backend=backend)
            t = ember.tensor(data.integers(0, 5, 16), backend=backend)
            losses.append(fn(x, t).item())
        return losses, [p.numpy() for p in model.parameters()], fn

    fusion = fusing("wgpu")
    losses, weights, fn = train(Autodiff(fusion), True)
    ref_losses, ref_weights, _ = train(Autodiff(get_backend("wgpu")), False)
    assert (fn.traces, fn.replays) == (1, 2) and fusion.programs > 0
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
