"""``NumpyBackend.compile_tape``: tapes compiled to closures over arrays, with single-use
fresh values reused in place, against numpy float64 and ``compile_generic``."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.contract.program import Slot, Step, Tape, compile_generic
from ember.jit import benefits


def _runner(f):
    (entry,) = f.entries.values()
    return entry.run


def test_a_bias_relu_chain_is_computed_in_place_and_matches_float64():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    wt, bt = ember.tensor(w), ember.tensor(b)
    f = ember.jit(lambda x: ((x @ wt + bt).relu() * 2.0).tanh())
    for k in range(4):
        x = rng.standard_normal((3, 5)).astype(np.float32)
        xt = ember.tensor(x)
        got = f(xt).numpy()
        want = np.tanh(np.maximum(x.astype(np.float64) @ w + b, 0) * 2)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(xt.numpy(), x)  # the input is never written
    np.testing.assert_array_equal(wt.numpy(), w)
    np.testing.assert_array_equal(bt.numpy(), b)
    # add, relu, mul, tanh each write into the value the step before made
    assert _runner(f).reused == 4


def test_a_value_read_twice_or_returned_is_not_overwritten():
    f = ember.jit(lambda x: (lambda y: (y.exp() + y, y))(x * 3.0))
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for _ in range(3):
        s, y = f(ember.tensor(x))
    want_y = x.astype(np.float64) * 3
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-6)
    np.testing.assert_allclose(s.numpy(), np.exp(want_y) + want_y, rtol=1e-6)
    # y is read by exp and by add, and returned: only add writes in place (into exp's result)
    assert _runner(f).reused == 1


def test_outputs_of_two_calls_do_not_share_memory():
    f = ember.jit(lambda x: (x + 1.0).sqrt())
    x = ember.ones(3)
    outs = [f(x) for _ in range(4)]
    assert not np.shares_memory(outs[-1]._prim, outs[-2]._prim)
    np.testing.assert_allclose(outs[-2].numpy(), [2.0 ** 0.5] * 3, rtol=1e-6)


def test_a_matmul_by_a_broadcast_constant_runs_as_one_matrix_and_matches():
    b = ember.get_backend("numpy")
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 7)).astype(np.float32)
    # a weight expanded over the batch (stride 0), as a folded ``expand`` leaves it
    tape = Tape(b, [0], {1: np.broadcast_to(w, (4, 6, 7))},
                [Step("float_matmul", (Slot(0), Slot(1)), {}, 2, "op"),
                 Step("float_add", (Slot(2), Slot(2)), {}, 3, "op")], [3], None)
    run, generic = b.compile_tape(tape), compile_generic(tape)
    for _ in range(3):
        x = rng.standard_normal((4, 2, 6)).astype(np.float32)
        (got,), (ref,) = run([x]), generic([x])
        np.testing.assert_allclose(got, 2 * (x.astype(np.float64) @ w), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
        assert got.shape == (4, 2, 7)


def test_a_smaller_batch_times_a_broadcast_constant_keeps_the_constants_batch():
    b = ember.get_backend("numpy")
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    tape = Tape(b, [0], {1: np.broadcast_to(w, (5, 3, 4))},
                [Step("float_matmul", (Slot(0), Slot(1)), {}, 2, "op")], [2], None)
    run = b.compile_tape(tape)
    x = np.ones((1, 2, 3), np.float32)
    for _ in range(2):
        (got,) = run([x])
        assert got.shape == (5, 2, 4)
        np.testing.assert_array_equal(got[4], x[0] @ w)


def test_assign_feed_and_multi_output_steps_match_compile_generic():
    b = ember.get_backend("numpy")
    state = np.zeros(3, np.float32)
    lr = [0.5]
    tape = Tape(b, [0], {1: state},
                [Step("from_data", (), {}, 2, "feed",
                      fn=lambda: (ember.TensorData.from_list([lr[0]] * 3),)),
                 Step("float_mul", (Slot(0), Slot(2)), {}, 3, "op"),
                 Step("float_sort", (Slot(3), 0, True), {}, (4, 5), "op"),
                 Step("copy_into", (Slot(1), Slot(4)), {}, None, "assign")], [4, 5], None)
    run = b.compile_tape(tape)
    x = np.array([1.0, 3.0, 2.0], np.float32)
    for k in range(3):
        lr[0] = k + 1.0
        values, idx = run([x])
        np.testing.assert_array_equal(values, np.sort(x)[::-1] * (k + 1))
        np.testing.assert_array_equal(idx, [1, 2, 0])
        np.testing.assert_array_equal(state, values)


@pytest.mark.parametrize("name", ["numpy", "python"])
def test_ember_jit_on_numpy_is_not_on_by_default(name):
    # numpy's compiler still runs Python per op: the Learner and demos keep eager there
    assert not benefits(ember.get_backend(name))


def _conv2d_float64(x, w, pad):
    """A direct 3x3/1x1 stride-1 convolution in float64 (the reference)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    co, _, kh, kw = w.shape
    out = np.zeros((n, co, h - kh + 1, wd - kw + 1))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, i:i + out.shape[2], j:j + out.shape[3]],
                             w[:, :, i, j].astype(np.float64))
    return out


def _conv_affine_tape(b, w, sub, mul):
    steps = [Step("conv", (Slot(0), Slot(1), None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1), {}, 4,
                  "op"),
             Step("float_sub", (Slot(4), Slot(2)), {}, 5, "op"),
             Step("float_mul", (Slot(3), Slot(5)), {}, 6, "op"),
             Step("relu", (Slot(6),), {}, 7, "op")]
    return Tape(b, [0], {1: w, 2: sub, 3: mul}, steps, [7], None)


def test_a_conv_then_per_channel_constants_folds_into_the_conv_and_matches_float64():
    b = ember.get_backend("numpy")
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    mean = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    scale = rng.uniform(0.5, 2, (1, 4, 1, 1)).astype(np.float32)
    # stored at the activations' full size, as a traced expand folds them
    full = (1, 4, 5, 6)
    tape = _conv_affine_tape(b, w, np.ascontiguousarray(np.broadcast_to(mean, full)),
                             np.ascontiguousarray(np.broadcast_to(scale, full)))
    run = b.compile_tape(tape)
    for _ in range(3):
        x = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
        (got,) = run([x])
        want = np.maximum((_conv2d_float64(x, w, 1) - mean) * scale, 0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert run.steps == 2  # conv (with the sub and mul folded in), relu


def test_a_constant_that_varies_over_space_is_not_folded():
    b = ember.get_backend("numpy")
    rng = np.random.default_rng(3)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    sub = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    mul = np.full((1, 2, 4, 4), 2.0, np.float32)
    run = b.compile_tape(_conv_affine_tape(b, w, sub, mul))
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    for _ in range(2):
        (got,) = run([x])
    np.testing.assert_allclose(got, np.maximum((_conv2d_float64(x, w, 1) - sub) * 2, 0),
                               rtol=1e-5, atol=1e-5)
    assert run.steps == 4


def _affine_chain_tape(b, constants, branch: bool):
    """x -> relu -> (- c0) * c1 * c2 + c3, the constants per channel; ``branch``: the
    second result is also an output (so the run stops there)."""
    steps = [Step("relu", (Slot(0),), {}, 10, "op"),
             Step("float_sub", (Slot(10), Slot(1)), {}, 11, "op"),
             Step("float_mul", (Slot(11), Slot(2)), {}, 12, "op"),
             Step("float_mul", (Slot(3), Slot(12)), {}, 13, "op"),
             Step("float_add", (Slot(13), Slot(4)), {}, 14, "op")]
    outputs = [14, 12] if branch else [14]
    return Tape(b, [0], dict(zip((1, 2, 3, 4), constants)), steps, outputs, None)


@pytest.mark.parametrize("branch", [False, True])
def test_a_run_of_per_channel_arithmetic_becomes_one_multiply_and_one_add(branch):
    """A BatchNormalization after a Concat (nothing to fold into), written out as
    arithmetic by per-channel constants stored at full size: x * s + t in two in-place
    passes; a value the run computes that is read elsewhere (an output) ends the run."""
    b = ember.get_backend("numpy")
    rng = np.random.default_rng(4)
    full = (1, 3, 4, 5)
    per = [rng.uniform(0.5, 2, (1, 3, 1, 1)).astype(np.float32) for _ in range(4)]
    stored = [np.broadcast_to(c, full) for c in per]  # stride 0, as a folded expand
    run = b.compile_tape(_affine_chain_tape(b, stored, branch))
    for _ in range(3):
        x = rng.standard_normal(full).astype(np.float32)
        got = run([x])
        x64, (c0, c1, c2, c3) = x.astype(np.float64), (c.astype(np.float64) for c in per)
        mid = (np.maximum(x64, 0) - c0) * c1
        np.testing.assert_allclose(got[0], c2 * mid + c3, rtol=1e-5, atol=1e-6)
        if branch:
            np.testing.assert_allclose(got[1], mid, rtol=1e-5, atol=1e-6)
    # relu, then the folded multiply and add (both in place); with a branch nothing folds,
    # and the step after the output writes a new array
    assert (run.steps, run.reused) == ((5, 3) if branch else (3, 2))
