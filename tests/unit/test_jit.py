"""ember.jit: jitted results equal eager ones (numpy float64, or the eager path of another
backend, as the reference), re-tracing, the signature key, captured training steps (forward,
backward, Dropout, Adam / SGD with momentum, an LR scheduler) against eager training, the
error for reading values inside a trace, the tape optimisations, and the backend left clean
after an error. On numpy, python and wgpu (Mesa lavapipe), and over Fusion where registered."""

from __future__ import annotations

import os

import pytest

np = pytest.importorskip("numpy")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import ember
from ember import nn, optim
from ember.contract import registry
from ember.errors import EmberError
from ember.jit import JitError
from ember.ops import state
from ember.nn.loss import cross_entropy

PLAIN = ["numpy", "python", "wasm", "wgpu", "fusion-numpy", "fusion-wgpu"]


def backend(name: str):
    if name not in ember.available_backends():
        pytest.skip(f"backend {name} is not registered")
    try:
        return ember.get_backend(name)
    except (EmberError, ImportError, RuntimeError) as e:  # no wgpu adapter / driver
        pytest.skip(f"backend {name} unavailable: {e}")


def reference_name(name: str) -> str:
    """The eager reference runs on another backend than the jitted code."""
    return "python" if name == "numpy" else "numpy"


def shadowed(b) -> list[str]:
    """Op methods a tracer left on the backend instance (none outside a trace)."""
    inner = b
    while inner.inner is not None:
        inner = inner.inner
    return [op.name for op in registry.ops() if op.name in vars(inner)]


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


# ---------------------------------------------------------------------- forward
@pytest.mark.parametrize("name", PLAIN)
def test_jitted_forward_equals_numpy_float64(name):
    b = backend(name)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    wt = ember.tensor(w, backend=b)

    @ember.jit
    def f(x, bias):
        h = (x @ wt + bias).relu()
        return h.softmax(dim=1), ember.where(h > 0.5, h * 2, h - 1).sum(dim=0)

    for _ in range(4):
        x = rng.standard_normal((5, 4)).astype(np.float32)
        bias = rng.standard_normal(3).astype(np.float32)
        soft, total = f(ember.tensor(x, backend=b), ember.tensor(bias, backend=b))
        h = np.maximum(x.astype(np.float64) @ w + bias, 0)
        e = np.exp(h - h.max(axis=1, keepdims=True))
        close(soft.numpy(), e / e.sum(axis=1, keepdims=True))
        close(total.numpy(), np.where(h > 0.5, h * 2, h - 1).sum(axis=0))
    assert (f.traces, f.replays) == (1, 2)
    assert shadowed(b) == []


@pytest.mark.parametrize("name", PLAIN)
def test_an_output_made_without_any_op_is_replayed(name):
    """A literal the traced function returns as it is (an ONNX Shape node's result): the
    tape keeps it as a constant output."""
    b = backend(name)
    f = ember.jit(lambda x: (ember.tensor(list(x.shape), dtype=ember.int64, backend=b), x + 1),
                  warmup=0)
    for k in range(3):
        shape, y = f(ember.full((2, 3), float(k), backend=b))
        assert shape.tolist() == [2, 3] and y.tolist() == [[k + 1.0] * 3] * 2
    assert (f.traces, f.replays) == (1, 2)


@pytest.mark.parametrize("name", ["numpy", "python"])
def test_new_shape_traces_again_and_old_shapes_replay(name):
    b = backend(name)
    f = ember.jit(lambda x: (x * x).sum(dim=-1))
    for n in (2, 3, 2, 3, 2, 3, 2):
        x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
        close(f(ember.tensor(x, backend=b)).numpy(), (x.astype(np.float64) ** 2).sum(-1))
    stats = f.stats()
    assert (stats["signatures"], stats["traces"], stats["replays"]) == (2, 2, 3)


def test_non_tensor_arguments_are_part_of_the_key():
    f = ember.jit(lambda x, scale, mode="add": x * scale + 1 if mode == "add" else x * scale)
    x = ember.tensor([1.0, 2.0])
    for _ in range(3):
        assert f(x, 2.0).tolist() == [3.0, 5.0]
        assert f(x, 3.0).tolist() == [4.0, 7.0]
        assert f(x, 3.0, mode="mul").tolist() == [3.0, 6.0]
    assert f.stats()["signatures"] == 3 and f.traces == 3
    with pytest.raises(JitError, match="neither a tensor nor hashable"):
        f(x, {2.0, 3.0})  # a set: neither container nor hashable


def test_a_jitted_method_is_bound_and_keyed_by_its_instance():
    class Scale:
        def __init__(self, k):
            self.k = k

        @ember.jit
        def __call__(self, x):
            return x * self.k

    two, three = Scale(2.0), Scale(3.0)
    x = ember.tensor([1.0, 2.0])
    for _ in range(3):
        assert (two(x).tolist(), three(x).tolist()) == ([2.0, 4.0], [3.0, 6.0])
    assert Scale.__call__.stats()["signatures"] == 2


def test_random_numbers_are_drawn_afresh_at_each_replay_as_eager_draws_them():
    def draw(x):
        return x + ember.rand(3)

    ember.seed(7)
    eager = [draw(ember.zeros(3)).tolist() for _ in range(5)]
    ember.seed(7)
    jitted = ember.jit(draw)
    assert [jitted(ember.zeros(3)).tolist() for _ in range(5)] == eager
    assert jitted.replays == 3 and len({tuple(r) for r in eager}) == 5


# ---------------------------------------------------------------------- training
def _trainer(b, kind: str, jitted: bool):
    ember.seed(0)
    with ember.use_backend(b):
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 3))
    if kind == "adam":
        opt = optim.Adam(model.parameters(), lr=0.02, weight_decay=1e-3)
    else:
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def step(x, y):
        loss = cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    return model, opt, sched, (ember.jit(step) if jitted else step)


def _train(name: str, kind: str, jitted: bool, steps: int = 7):
    b = ember.Autodiff(backend(name))
    model, opt, sched, step = _trainer(b, kind, jitted)
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(steps):
        x = ember.tensor(rng.standard_normal((8, 6)).astype(np.float32), backend=b)
        y = ember.tensor(rng.integers(0, 3, 8), backend=b)
        losses.append(step(x, y).item())
        sched.step()
    return model, opt, step, losses


@pytest.mark.parametrize("kind", ["adam", "sgd"])
@pytest.mark.parametrize("name", PLAIN)
def test_captured_training_step_gives_the_eager_weights(name, kind):
    model, opt, step, losses = _train(name, kind, jitted=True)
    ref_model, ref_opt, _, ref_losses = _train(reference_name(name), kind, jitted=False)
    assert (step.traces, step.replays) == (1, 5)
    close(losses, ref_losses)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        close(p.numpy(), q.numpy())
    mine, ref = opt.state_dict(), ref_opt.state_dict()
    assert mine["steps"] == ref["steps"] == 7
    assert [g["lr"] for g in mine["param_groups"]] == [g["lr"] for g in ref["param_groups"]]
    for i, s in ref["state"].items():
        for k, v in s.items():
            if isinstance(v, ember.Tensor):
                close(mine["state"][i][k].numpy(), v.numpy())
            else:
                assert mine["state"][i][k] == v
    assert shadowed(model[0].weight.backend) == []


@pytest.mark.parametrize("name", ["numpy", "wasm", "wgpu"])
def test_batchnorm_running_statistics_are_updated_at_each_replay(name):
    def run(backend_name, jitted):
        b = ember.Autodiff(backend(backend_name))
        ember.seed(1)
        with ember.use_backend(b):
            model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
        opt = optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            loss = cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss

        fn = ember.jit(step) if jitted else step
        rng = np.random.default_rng(2)
        for _ in range(5):
            fn(ember.tensor(rng.standard_normal((8, 4)).astype(np.float32), backend=b),
               ember.tensor(rng.integers(0, 2, 8), backend=b))
        return model.state_dict(), fn

    state, fn = run(name, True)
    want, _ = run(reference_name(name), False)
    assert fn.replays == 3 and set(state) == set(want)
    for key, value in want.items():
        close(state[key].numpy(), value.numpy())
    assert int(state["1.num_batches_tracked"].item()) == 5


def test_eager_training_after_replays_continues_from_the_replayed_state():
    model, opt, step, _ = _train("numpy", "adam", jitted=True, steps=4)
    ref_model, ref_opt, ref_step, _ = _train("python", "adam", jitted=False, steps=4)
    generator = ember.random.default_generator.get_state()  # both runs left it here
    for run, m in ((step.fn, model), (ref_step, ref_model)):  # step.fn: the eager function
        ember.random.default_generator.set_state(generator)
        b = m[0].weight.backend
        run(ember.ones(2, 6, backend=b), ember.tensor([0, 1], backend=b))
    for p, q in zip(model.parameters(), ref_model.parameters()):
        close(p.numpy(), q.numpy())


def test_a_parameter_replaced_outside_the_trace_makes_it_trace_again():
    lin = nn.Linear(3, 2)
    f = ember.jit(lambda x: lin(x))
    x = ember.ones(1, 3)
    for _ in range(3):
        f(x)
    nn.Linear(3, 2).weight.assign(ember.zeros(2, 3))  # another layer's: no re-trace
    f(x)
    assert (f.traces, f.replays) == (1, 2)
    lin.weight.assign(ember.zeros(2, 3))
    lin.bias.assign(ember.tensor([1.0, 2.0]))
    assert f(x).tolist() == [[1.0, 2.0]]
    assert (f.traces, f.replays) == (2, 2)


@pytest.mark.parametrize("name", ["numpy", "wasm", "wgpu"])
def test_two_batch_shapes_trace_once_each_and_share_the_state(name):
    """An epoch's short last batch is a second signature: it traces once, into the state the
    first tape updates (no re-trace at each switch), and the weights stay the eager ones."""
    def run(jitted: bool):
        b = ember.Autodiff(backend(name) if jitted else backend(reference_name(name)))
        model, _, _, step = _trainer(b, "adam", jitted)
        rng = np.random.default_rng(5)
        for i in range(12):
            n = 3 if i % 4 == 3 else 8
            x = ember.tensor(rng.standard_normal((n, 6)).astype(np.float32), backend=b)
            step(x, ember.tensor(rng.integers(0, 3, n), backend=b))
        return model, step

    model, step = run(True)
    ref_model, _ = run(False)
    assert (step.traces, step.replays) == (2, 9)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        close(p.numpy(), q.numpy())


def test_a_forward_traced_before_the_training_step_reads_the_trained_weights():
    """The training step's trace gives the parameters private copies: a jitted forward that
    read the old ones traces again (once) and sees the updates."""
    b = ember.Autodiff(backend("numpy"))
    model, _, _, step = _trainer(b, "sgd", jitted=True)
    model.eval()
    forward = ember.jit(lambda x: model(x))
    x = ember.ones(4, 6, backend=b)
    for _ in range(3):
        forward(x)
    model.train()
    for _ in range(4):
        step(x, ember.tensor([0, 1, 2, 0], backend=b))
    model.eval()
    for _ in range(3):
        got = forward(x)
    with ember.no_grad():
        close(got.numpy(), model(x).numpy())
    assert forward.traces == 2


def test_clones_taken_before_a_jitted_step_keep_their_values():
    model, opt, sched, step = _trainer(ember.Autodiff(backend("numpy")), "sgd", jitted=True)
    before = model[0].weight.clone()
    saved = before.numpy().copy()
    x, y = ember.ones(4, 6, backend=model[0].weight.backend), None
    y = ember.tensor([0, 1, 2, 0], backend=x.backend)
    for _ in range(4):
        step(x, y)
    np.testing.assert_array_equal(before.numpy(), saved)
    assert not np.array_equal(model[0].weight.numpy(), saved)


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_gradient_norm_clipping_is_captured(norm_type):
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(5).astype(np.float32), np.array([3.0, -4.0], np.float32)]
    clip = ember.jit(lambda a, b: optim.clip_grad_norm([a, b], 0.7, norm_type))
    for _ in range(3):  # warm-up, trace, replay
        got = clip(*(ember.tensor(g) for g in grads))
    flat = np.concatenate(grads).astype(np.float64)
    total = np.abs(flat).max() if norm_type == float("inf") else np.sqrt((flat**2).sum())
    for g, want in zip(got, grads):
        close(g.numpy(), want * min(1.0, 0.7 / (total + 1e-6)))
    assert clip.replays == 1


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize("name", ["numpy", "python"])
def test_reading_a_value_inside_the_trace_names_the_op_and_leaves_the_backend_clean(name):
    b = backend(name)

    def f(x):
        if x.sum() > 0:  # data-dependent Python control flow
            return x
        return -x

    jitted = ember.jit(f)
    x = ember.ones(3, backend=b)
    assert jitted(x).tolist() == [1.0, 1.0, 1.0]  # warm-up: eager
    with pytest.raises(JitError, match=r"float_gt .*ember\.where") as info:
        jitted(x)
    assert isinstance(info.value, EmberError)
    assert shadowed(b) == [] and state.active() is None
    assert (x * 2).tolist() == [2.0, 2.0, 2.0]

    g = ember.jit(lambda t: t.sum().item())
    g(x)
    with pytest.raises(JitError, match="float_sum"):
        g(x)


@pytest.mark.parametrize("name", ["numpy", "python", "wgpu", "fusion-numpy", "fusion-wgpu"])
def test_values_every_replay_computes_alike_may_be_read(name):
    """Literals made in the trace and pure ops on them alone (shape arithmetic), and tensors
    given to ember.jit.freeze, are read; values that depend on an input or on a constant
    that may change still raise."""
    b = backend(name)
    shape = ember.jit.freeze(ember.tensor([2, 3], dtype=ember.int32, backend=b))
    scale = ember.tensor([2.0], backend=b)

    def f(x):
        rows = (ember.tensor([x.shape[0]], dtype=ember.int32, backend=b) // 3).tolist()[0]
        return x.reshape(shape.tolist()) * rows

    jitted = ember.jit(f)
    x = ember.arange(6.0, backend=b)
    for _ in range(4):  # warm-up, trace, replays
        assert jitted(x).tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert jitted.stats()["replays"] == 2
    g = ember.jit(lambda t: t * scale.tolist()[0])
    g(x)
    with pytest.raises(JitError, match="created outside"):
        g(x)


def test_an_error_in_the_traced_function_leaves_the_backend_unwrapped():
    b = backend("numpy")
    take = ember.Generator.take
    calls = []

    def f(x):
        calls.append(1)
        y = x * 2 + ember.rand(3)
        if len(calls) == 2:
            raise ValueError("boom")
        return y

    jitted = ember.jit(f)
    x = ember.ones(3, backend=b)
    jitted(x)
    with pytest.raises(ValueError, match="boom"):
        jitted(x)
    assert shadowed(b) == [] and ember.Generator.take is take and state.active() is None
    jitted(x)  # traces again, then replays
    jitted(x)
    assert (jitted.traces, jitted.replays) == (1, 1)


def test_optimizer_state_created_inside_a_trace_is_refused():
    b = ember.Autodiff(backend("numpy"))
    lin = nn.Linear(2, 1, backend=b)
    opt = optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

    @ember.jit(warmup=0)
    def step(x):
        opt.step((lin(x) ** 2).sum().backward())

    with pytest.raises(JitError, match="momentum_buffer.*warm-up"):
        step(ember.ones(1, 2, backend=b))
    assert shadowed(b) == []


def test_returning_state_from_before_its_in_place_update_is_refused():
    b = ember.Autodiff(backend("numpy"))
    lin = nn.Linear(2, 1, backend=b)
    opt = optim.SGD(lin.parameters(), lr=0.1)

    def step(x):
        before = lin.weight.detach()
        opt.step((lin(x) ** 2).sum().backward())
        return before

    jitted = ember.jit(step)
    x = ember.ones(1, 2, backend=b)
    jitted(x)
    with pytest.raises(JitError, match="updates in place"):
        jitted(x)


# ---------------------------------------------------------------------- the tape
def test_dead_steps_are_dropped_and_constants_folded():
    def f(x):
        unused = x.exp() * 2  # noqa: F841 - dead: reaches no output
        offset = ember.ones(3) * 4 + 1  # constants only: folded once
        return x + offset

    jitted = ember.jit(f)
    x = ember.tensor([1.0, 2.0, 3.0])
    for _ in range(3):
        assert jitted(x).tolist() == [6.0, 7.0, 8.0]
    (counts,) = jitted.stats()["steps"]
    # traced: exp, full(2), mul, full(1), full(4), mul, full(1), add, add
    assert counts["traced"] > counts["after_folding"] > counts["replayed"] == 1
    (tape,) = jitted.tapes()
    assert [s.name for s in tape.steps] == ["float_add"]
    assert len(tape.constants) == 1


def test_training_tape_holds_feeds_random_draws_and_in_place_updates():
    _, _, step, _ = _train("numpy", "adam", jitted=True, steps=3)
    (tape,) = step.tapes()
    kinds = [s.kind for s in tape.steps]
    assert kinds.count("random") == 1  # the Dropout mask
    assert kinds.count("assign") == 4 * 3  # 4 parameters, their two Adam moments
    assert kinds.count("feed") >= 4 and tape.hooks
