"""Dispatch capture and replay (``engine.capture()``, ``WgpuBackend.compile_tape``) and the
engine's submit-as-you-go overlap, on a real adapter (Mesa lavapipe on CPU-only machines).
Expected values come from numpy float64 and from ``ember.random``'s pure-Python Philox."""

from __future__ import annotations

import ember
import ember.jit
import pytest
from _wgpu import B, down, np, up
from ember.backends.wgpu.primitive import Storage, WgpuTensor

RT = B.rt
ENG = RT.engine
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def blocks(*arrays):
    """Uploaded arrays' blocks, with their primitives kept alive by the caller's list (a block
    whose primitive dies goes back to the allocator at once)."""
    prims = [up(a) for a in arrays]
    KEEP[:] = prims
    return [p.block for p in prims]


KEEP: list = []


def wrap(block, like):
    """A primitive over a block a replay returned, laid out as ``like``."""
    return WgpuTensor(Storage(block, RT.allocator), like.shape, like.strides, like.offset,
                      like.dtype)


def f64(a):
    return np.asarray(a, np.float64)


def model(x, w):
    """A few op families: elementwise (dense and strided), matmul, a reduction."""
    h = B.float_matmul(x, w)
    h = B.float_exp(B.float_neg(B.float_mul(h, h)))
    t = B.permute(h, (1, 0))
    return B.float_add(t, t), B.float_sum(h, (1,))


def reference(x, w):
    h = f64(x) @ f64(w)
    h = np.exp(-(h * h))
    return h.T + h.T, h.sum(1, keepdims=True)


class Counting:
    """Counts the adapter's submits and its eager (non-pre-built) dispatches."""

    def __init__(self, monkeypatch):
        self.submits = self.eager = 0
        ad = RT.adapter
        submit, dispatch = ad.submit, ad.dispatch

        def counted_submit():
            self.submits += 1
            submit()

        def counted_dispatch(*a):
            self.eager += 1
            dispatch(*a)

        monkeypatch.setattr(ad, "submit", counted_submit)
        monkeypatch.setattr(ad, "dispatch", counted_dispatch)


def captured(x, w):
    with ENG.capture() as program:
        outs = model(x, w)
        program.inputs, program.outputs = [x.block, w.block], [o.block for o in outs]
    return program, outs


# ---------------------------------------------------------------------- engine.capture()
def test_replay_with_new_inputs_matches_numpy():
    x, w = up(rand(5, 7)), up(rand(7, 3))
    program, outs = captured(x, w)
    for want, got in zip(reference(down(x), down(w)), outs):
        close(down(got), want)
    for _ in range(3):
        a, b = rand(5, 7), rand(7, 3)
        got = program.replay(blocks(a, b))
        for want, block, like in zip(reference(a, b), got, outs):
            close(down(wrap(block, like)), want)


def test_replay_is_one_submit_of_the_recorded_dispatches(monkeypatch):
    x, w = up(rand(5, 7)), up(rand(7, 3))
    before = ENG.dispatches
    program, outs = captured(x, w)
    assert program.dispatches == ENG.dispatches - before > 3
    ENG.flush()
    count = Counting(monkeypatch)
    before = ENG.dispatches
    a, b = rand(5, 7), rand(7, 3)
    got = program.replay(blocks(a, b))
    assert count.submits == 0  # a small program waits for the read (or a full batch)
    close(down(wrap(got[1], outs[1])), reference(a, b)[1])
    assert count.submits == 1  # the replay and the read's copy: one submit
    assert count.eager == 0  # every dispatch went through the pre-built groups
    assert ENG.dispatches - before == program.dispatches


def test_a_program_of_a_full_batch_submits_at_once(monkeypatch):
    x = up(rand(32))
    with ENG.capture() as program:
        y = x
        for _ in range(ENG.submit_every):
            y = B.float_add(y, x)
        program.inputs, program.outputs = [x.block], [y.block]
    ENG.flush()
    count = Counting(monkeypatch)
    a = rand(32)
    (got,) = program.replay(blocks(a))
    assert count.submits == 1
    close(down(wrap(got, y)), f64(a) * (ENG.submit_every + 1))


def test_outputs_of_two_replays_do_not_alias():
    x, w = up(rand(4, 6)), up(rand(6, 2))
    program, outs = captured(x, w)
    a1, b1, a2, b2 = rand(4, 6), rand(6, 2), rand(4, 6), rand(6, 2)
    first = program.replay(blocks(a1, b1))
    second = program.replay(blocks(a2, b2))
    assert not {id(b) for b in first} & {id(b) for b in second}
    for got, (a, b) in ((first, (a1, b1)), (second, (a2, b2))):  # read after both ran
        for want, block, like in zip(reference(a, b), got, outs):
            close(down(wrap(block, like)), want)


def test_replay_without_inputs_reuses_the_traced_ones():
    x, w = up(rand(3, 3)), up(rand(3, 3))
    program, outs = captured(x, w)
    (block, _) = program.replay()
    close(down(wrap(block, outs[0])), reference(down(x), down(w))[0])


def test_feed_rewrites_an_uploaded_value_per_replay():
    x = up(rand(8))
    with ENG.capture() as program:
        s = up(np.float32(2.0))
        y = B.float_mul(x, B.expand(B.reshape(s, (1,)), (8,)))
        feed = program.feed(s.block)
        program.outputs = [y.block]
    close(down(y), f64(down(x)) * 2.0)
    got = []
    for value in (3.0, -0.5):  # both replays before any read: a feed must not overtake
        program.write_feed(feed, np.float32(value).tobytes())
        got.append((value, program.replay()[0]))
    for value, block in got:
        close(down(wrap(block, y)), f64(down(x)) * value)
    with pytest.raises(ember.EmberError, match="bytes"):
        program.write_feed(feed, np.zeros(2, np.float32).tobytes())


def test_feed_needs_an_upload_in_the_capture():
    x = up(rand(4))
    with pytest.raises(ember.EmberError, match="uploaded"), ENG.capture() as program:
        program.feed(x.block)


def test_patched_meta_words_change_the_random_numbers():
    from ember.random import philox_uniform

    n = 37
    with ENG.capture() as program:
        u = B.random_uniform((n,), ember.float32, 5, 0)
        program.outputs = [u.block]
    assert program.words(0)[2:6] == [0, 0, 5, 0]  # [n, blocks, offset lo/hi, seed lo/hi]
    got = []
    for seed, offset in ((5, 0), (7, 3), (2**40 + 9, 2**33 + 1)):  # reads after all replays
        program.patch(0, 2, [offset & 0xFFFFFFFF, offset >> 32, seed & 0xFFFFFFFF, seed >> 32])
        got.append((seed, offset, program.replay()[0]))
    for seed, offset, block in got:
        want = np.array(philox_uniform(n, seed, offset), np.float32)
        np.testing.assert_array_equal(down(wrap(block, u)), want)


def test_pinned_blocks_survive_allocations_and_empty_cache_between_replays():
    x, w = up(rand(6, 6)), up(rand(6, 6))
    program, outs = captured(x, w)
    pinned = {id(b) for b in program._pinned}
    for _ in range(3):
        # churn every size class the program uses: uploads of garbage, kernels, frees
        junk = [up(np.full((6, 6), 1e9, np.float32)) for _ in range(20)]
        junk += [B.float_add(j, j) for j in junk]
        assert not pinned & {id(j.block) for j in junk}
        del junk
        RT.allocator.empty_cache()
        a, b = rand(6, 6), rand(6, 6)
        got = program.replay(blocks(a, b))
        for want, block, like in zip(reference(a, b), got, outs):
            close(down(wrap(block, like)), want)


def test_close_hands_the_pinned_blocks_back():
    x = up(rand(16))
    with ENG.capture() as program:
        y = B.float_exp(B.float_add(x, x))
        program.outputs = [y.block]
    del y
    ENG.flush()
    assert B.memory_stats()["pinned"] > 0
    parked = B.memory_stats()["pinned"]
    program.close()
    assert B.memory_stats()["pinned"] == 0
    assert B.memory_stats()["cached"] >= parked


def test_upload_into_a_recycled_block_keeps_its_place_in_the_order():
    """An upload lands in a block the trace used before (recycled after a submit); a replay
    must not let it overwrite that earlier use (one submit: a queue write would land first)."""
    x = up(rand(64))
    with ENG.capture() as program:
        t = B.float_add(x, x)
        first = B.float_sum(t, (0,))
        recycled = t.block
        del t
        ENG.flush()
        c = up(np.full(64, 3.0, np.float32))
        assert c.block is recycled
        y = B.float_mul(x, c)
        program.inputs, program.outputs = [x.block], [first.block, y.block]
    a = rand(64)
    s, m = program.replay(blocks(a))
    close(down(wrap(s, first)), (2 * f64(a)).sum(keepdims=True))
    close(down(wrap(m, y)), 3 * f64(a))


def test_captures_do_not_nest():
    with pytest.raises(ember.EmberError, match="nest"), ENG.capture(), ENG.capture():
        pass
    assert ENG.recording is None


# ---------------------------------------------------------------------- overlap
def test_long_chain_submits_before_the_read(monkeypatch):
    a = rand(256) * 0.01
    x = up(a)
    ENG.flush()
    count = Counting(monkeypatch)
    y, want = x, f64(a)
    for _ in range(100):
        y = B.float_add(B.float_mul(y, x), x)
        want = want * a + a
    assert count.submits >= 200 // ENG.submit_every  # the GPU started before the read
    close(down(y), want)
    assert count.submits <= 200 // ENG.submit_every + 1  # the read submitted once more


# ---------------------------------------------------------------------- compile_tape (ember.jit)
def test_jitted_function_replays_a_captured_program(monkeypatch):
    @ember.jit
    def f(x, w):
        h = (x @ w).relu()
        return h.softmax(dim=1), (h * h).sum()

    def want(a, b):
        h = np.maximum(f64(a) @ f64(b), 0)
        e = np.exp(h - h.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True), (h * h).sum()

    results = []
    for i in range(5):
        a, b = rand(4, 8), rand(8, 5)
        x, w = (ember.tensor(v, backend=B) for v in (a, b))
        if i == 4:
            ENG.flush()
            count = Counting(monkeypatch)
        results.append(((a, b), f(x, w)))
        if i == 4:
            results[-1][1][1].numpy()
            assert count.submits == 1 and count.eager == 0  # the call and a read: one submit
    assert f.stats()["replays"] == 3
    for (a, b), (p, s) in results:  # read at the end: no call's outputs were overwritten
        p_want, s_want = want(a, b)
        close(p.numpy(), p_want)
        close(s.numpy(), s_want, rtol=1e-4)


def test_jitted_input_layouts_and_repeated_tensor():
    f = ember.jit(lambda x, y: x * 2 + y)
    a = rand(3, 4)
    for _ in range(4):
        x = ember.tensor(a.T.copy(), backend=B).T  # a strided view as input
        y = ember.tensor(a, backend=B)
        close(f(x, y).numpy(), 3 * f64(a))
    y = ember.tensor(a, backend=B)
    close(f(y, y).numpy(), 3 * f64(a))  # the same tensor twice


def test_jitted_random_draws_fresh_numbers_like_eager():
    g = ember.Generator(seed=11)
    twin = ember.Generator(seed=11)
    f = ember.jit(lambda x: x + ember.rand(3, 5, generator=g, backend=B))
    x = ember.zeros(3, 5, backend=B)
    got = [f(x).numpy() for _ in range(5)]
    want = [ember.rand(3, 5, generator=twin, backend="numpy").numpy() for _ in range(5)]
    assert f.stats()["replays"] == 3
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert len({a.tobytes() for a in got}) == 5


def test_jitted_feed_changes_per_call():
    value = [1.0]
    x = ember.ones(4, backend=B)

    def f(x):
        return x * ember.jit.feed(lambda: value[0], x)

    f = ember.jit(f)
    for v in (1.0, 2.0, 3.0, -4.0, 0.5):
        value[0] = v
        close(f(x).numpy(), np.full(4, v))
    assert f.stats()["replays"] == 3


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_jitted_training_steps_give_the_eager_weights(optimizer):
    """N captured training steps on wgpu end with the weights N eager numpy steps give."""
    from ember import optim
    from ember.autodiff import Autodiff
    from ember.nn import Linear, ReLU, Sequential
    from ember.nn.loss import mse_loss

    data = [(rand(8, 6), rand(8, 3)) for _ in range(6)]

    def train(backend, jitted):
        ad = Autodiff(ember.get_backend(backend) if isinstance(backend, str) else backend)
        ember.seed(0)
        with ember.use_backend(ad):
            net = Sequential(Linear(6, 16), ReLU(), Linear(16, 3))
        opt = getattr(optim, optimizer)(net.parameters(), lr=0.05)

        def step(x, y):
            loss = mse_loss(net(x), y)  # (cross_entropy's gather checks indices on the host)
            opt.step(loss.backward())
            return loss

        step = ember.jit(step) if jitted else step
        losses = [step(ember.tensor(a, backend=ad), ember.tensor(b, backend=ad)).item()
                  for a, b in data]
        return [p.numpy() for p in net.parameters()], losses, step

    weights, losses, step = train(B, True)
    assert step.stats()["replays"] == len(data) - 2
    ref_weights, ref_losses, _ = train("numpy", False)
    close(np.array(losses), ref_losses, rtol=1e-4, atol=1e-5)
    for got, want in zip(weights, ref_weights):
        close(got, want, rtol=1e-4, atol=1e-5)
