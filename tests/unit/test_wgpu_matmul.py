"""The wgpu matmul kernel against numpy float64: float32 and float16 (read packed, f32
accumulation) over tiny, odd, tall-skinny, batched and transposed operands, and the
autotuner's choices and their cache file (a fake timer keeps them deterministic)."""

from __future__ import annotations

import json
import warnings

import ember
import pytest
from _wgpu import B, np
from ember.backends.wgpu import compute, tuning

rng = np.random.default_rng(14)

# (batch, n, k, m): tiny, empty k, odd, ragged tiles, tall-skinny (split k), batched
SHAPES = [((), 1, 1, 1), ((), 3, 0, 4), ((), 5, 7, 3), ((), 130, 70, 66), ((), 8, 2048, 8),
          ((), 64, 600, 6), ((3,), 33, 17, 10), ((2, 2), 9, 40, 31), ((), 100, 40, 131)]


def sample(shape, dtype):
    """Samples in ``dtype`` and the same values as float64 (the reference's inputs)."""
    x = rng.standard_normal(shape).astype(dtype)
    return x, x.astype(np.float64)


def T(x):
    return ember.tensor(x, backend=B)


def check(got, want, dtype):
    got = got.numpy()
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    # float16: the result's rounding (half an ulp, 2**-11 relative) plus f32 accumulation
    tol = 1e-5 if dtype == "float32" else 1e-3
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale)


def has_f16():
    return ember.dtype.float16 in B.caps.dtypes


DTYPES = ["float32", pytest.param("float16", marks=pytest.mark.skipif(
    not has_f16(), reason="this adapter has no shader-f16: float16 is not in the caps"))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,n,k,m", SHAPES)
def test_matmul_matches_numpy(dtype, batch, n, k, m):
    a, a64 = sample(batch + (n, k), dtype)
    b, b64 = sample(batch + (k, m), dtype)
    check(T(a) @ T(b), a64 @ b64, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_and_sliced_views(dtype):
    """Strided operands are read in place (float16 ones element by element of their words)."""
    a, a64 = sample((3, 21, 37), dtype)
    b, b64 = sample((3, 19, 37), dtype)
    check(T(a) @ T(b).transpose(1, 2), a64 @ b64.transpose(0, 2, 1), dtype)
    check(T(a)[:, 1:, 3:20] @ T(b)[:, 2:19, 5:], a64[:, 1:, 3:20] @ b64[:, 2:19, 5:], dtype)


def count(fn):
    before = B.rt.engine.dispatches
    fn()
    return B.rt.engine.dispatches - before


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_matmul_is_one_dispatch_without_widening(dtype):
    """float16 operands aren't widened into f32 copies, nor the result narrowed: one kernel
    (an even width lets the kernel store float16 pairs as whole words)."""
    a, b = T(sample((4, 30, 24), dtype)[0]), T(sample((4, 24, 18), dtype)[0])
    assert count(lambda: a @ b) == 1


@pytest.mark.skipif(not has_f16(), reason="no shader-f16")
def test_float16_odd_width_and_split_k_go_through_f32():
    """An odd width (pairs would straddle rows) or split-k parts: f32, then one narrowing."""
    a, a64 = sample((6, 20), "float16")
    b, b64 = sample((20, 7), "float16")
    ta, tb = T(a), T(b)
    assert count(lambda: ta @ tb) == 2
    check(ta @ tb, a64 @ b64, "float16")


@pytest.fixture
def tuner(tmp_path, monkeypatch):
    """A fresh process tuner with a cache file under tmp_path and a fake timer: candidate
    ``fast`` is the fastest (times are its position otherwise)."""
    order = []

    def timer(rt, name, launch):
        if name == tuner.fast:
            launch()  # the chosen candidate runs while tuning too: it must work
        order.append(name)
        return 0.0 if name == tuner.fast else 1.0 + len(order)

    tuner = tuning.Tuner(timer=timer, path=tmp_path / "wgpu-tuning.json")
    tuner.fast = "64x128/4x8k16"
    tuner.order = order
    monkeypatch.setattr(tuning, "TUNER", tuner)
    monkeypatch.setenv("EMBER_WGPU_TUNE", "1")
    return tuner


def test_tuner_times_once_caches_and_reuses(tuner):
    a, a64 = sample((70, 50), "float32")
    b, b64 = sample((50, 90), "float32")
    check(T(a) @ T(b), a64 @ b64, "float32")
    assert tuner.fast in tuner.order and len(tuner.order) == tuner.timings >= 4
    data = json.loads(tuner.path.read_text())
    (choices,) = data["choices"].values()
    assert choices == {"128,128,64,1,float32": tuner.fast}
    # the same shape class again: no timing; the plan is the cached candidate
    timed = tuner.timings
    c, c64 = sample((100, 60), "float32")
    d, d64 = sample((60, 120), "float32")
    check(T(c) @ T(d), c64 @ d64, "float32")
    assert tuner.timings == timed
    assert compute.plan(B.rt, 100, 120, 60, 1, run=lambda *o: None)[0] \
        == compute._options(B.rt, 100, 120, 60, 1)[tuner.fast][0]
    # a new process (a fresh tuner) reads the file instead of timing
    fresh = tuning.Tuner(timer=tuner.timer, path=tuner.path)
    options = {tuner.fast: "fast", "other": "other"}
    assert fresh.choose(B.rt, (128, 128, 64, 1), "float32", lambda: options, None) == "fast"
    assert fresh.timings == 0


@pytest.mark.parametrize("text", ["{not json", '{"version": 99, "choices": {}}', "[1, 2]",
                                  '{"version": 1, "choices": {"gpu": {"1,1,1,1": 3}}}'])
def test_corrupt_or_foreign_cache_is_ignored_with_a_warning(tuner, text):
    tuner.path.write_text(text)
    a, a64 = sample((40, 30), "float32")
    b, b64 = sample((30, 20), "float32")
    with pytest.warns(UserWarning, match="ignoring"):
        check(T(a) @ T(b), a64 @ b64, "float32")
    assert tuner.timings > 0  # tuned anyway, and the file is rewritten as a valid one
    assert json.loads(tuner.path.read_text())["version"] == 1


def test_tune_0_and_the_default_rule_on_cpu_emulation(tuner, monkeypatch):
    a, a64 = sample((70, 50), "float32")
    b, b64 = sample((50, 90), "float32")
    monkeypatch.setenv("EMBER_WGPU_TUNE", "0")
    check(T(a) @ T(b), a64 @ b64, "float32")
    assert tuner.timings == 0 and not tuner.path.exists()
    monkeypatch.delenv("EMBER_WGPU_TUNE")
    info = B.rt.info
    assert not tuning.enabled(type(info)(name="llvmpipe (LLVM 15) via Vulkan"), 1 << 40)
    assert not tuning.enabled(type(info)(name="NVIDIA H200 via Vulkan"), 64 ** 3)
    assert tuning.enabled(type(info)(name="NVIDIA H200 via Vulkan"), 1024 ** 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(T(a) @ T(b), a64 @ b64, "float32")  # lavapipe: the default rule, no timing
    assert tuner.timings == 0 or "llvmpipe" not in info.name.lower()


def test_nothing_is_tuned_while_a_capture_records(tuner):
    a, b = T(sample((70, 50), "float32")[0]), T(sample((50, 90), "float32")[0])
    with B.rt.engine.capture():
        a @ b
    assert tuner.timings == 0


def test_shape_class_rounds_up_to_powers_of_two():
    assert tuning.shape_class((1, 2, 3, 1000, 1025, 0)) == (1, 2, 4, 1024, 2048, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_tuned_split_k_choice_is_right(tuner, dtype):
    """Tall-skinny: the tuner may pick split-k at four times the default rule's target."""
    options = compute._options(B.rt, 64, 2048, 4096, 1)
    tuner.fast = max((o for o in options if "+split" in o), key=lambda o: options[o][1])
    assert options[tuner.fast][1] > compute.plan(B.rt, 64, 2048, 4096, 1)[1] > 1
    a, a64 = sample((64, 4096), dtype)
    b, b64 = sample((4096, 2048), dtype)
    check(T(a) @ T(b), a64 @ b64, dtype)
    assert tuner.order and tuning.TUNER.choices


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_candidate_the_tuner_may_pick_is_right(dtype):
    """Ragged edges in n, m and k, a batch and a transposed operand, through each candidate
    tile (with and without split-k) that fits this device."""
    a, a64 = sample((2, 150, 530), dtype)
    b, b64 = sample((2, 70, 530), dtype)
    want = a64 @ b64.transpose(0, 2, 1)
    x, y = T(a)._prim, T(b).transpose(1, 2)._prim
    sa, sb = compute.batch_view(x), compute.batch_view(y)
    options = compute._options(B.rt, 150, 70, 530, 2)
    assert len(options) > 8 and any("+split" in name for name in options)
    for name, option in options.items():
        got = compute._run(B.rt, x, y, sa, sb, None, None, *option)
        check(ember.Tensor(got, B), want, dtype)


@pytest.mark.parametrize("stamps", [True, False])
def test_measure_with_timestamp_queries_or_wall_time(monkeypatch, stamps):
    """The real timer: GPU time from timestamp queries where the adapter has them, else wall
    time around a sync; either way a positive duration and no timer left running."""
    adapter = B.rt.adapter
    if stamps and "timestamp-query" not in adapter.info.features:
        pytest.skip("this adapter has no timestamp-query")
    if not stamps:
        monkeypatch.setattr(adapter.info, "features", frozenset())
    x, y = T(sample((40, 30), "float32")[0])._prim, T(sample((30, 50), "float32")[0])._prim
    options = compute._options(B.rt, 40, 50, 30, 1)
    launch = options["64x64/4x4k16"]
    seconds = tuning.measure(B.rt, "64x64/4x4k16",
                             lambda: compute._run(B.rt, x, y, 0, 0, None, None, *launch))
    assert seconds > 0
    assert getattr(adapter, "_timer", None) is None
