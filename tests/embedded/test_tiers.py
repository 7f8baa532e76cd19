"""Kernel tiers: the automatic order (native, then ulab, then pure), ember_micro.info(), the
ulab tier under real firmware limits, and the per-tier heap estimate against measurements.

The ulab tier runs on CPython with numpy standing in for ulab.numpy (_ulab_standin.py: no
reverse operators, ulab's float-returning dot, float32 or float64 firmware); real ulab is in no
registry here. Its memory is measured there: tracemalloc's peak over one inference (numpy
arrays plus CPython's own objects, so an overestimate of ulab's) and the stand-in's count of
every array allocated.
"""

from __future__ import annotations

import sys
import tracemalloc
import types
from array import array

import numpy as np
import pytest
from _models import seeded
from ember.export import export, load, run_on_micropython, run_reference

KB = 1024


@pytest.fixture
def fresh_tiers():
    """ember_micro.kernels with nothing cached, and a fake native module on demand."""
    import ember_micro
    from ember_micro import kernels

    def reset():
        kernels._cache.clear()
        kernels._why.clear()
        for name in ("_ulab", "_native"):
            sys.modules.pop("ember_micro." + name, None)
            if hasattr(ember_micro, name):  # `from . import _native` would find it there
                delattr(ember_micro, name)
        sys.modules.pop("ember_kernels", None)

    reset()
    yield kernels
    import _ulab_standin

    _ulab_standin.uninstall()
    reset()


def _fake_native():
    """The pure kernels registered as `ember_kernels`: stands in for the C module's presence."""
    from ember_micro import _pure

    mod = types.ModuleType("ember_kernels")
    for name in ("act", "add", "conv", "conv_q", "copy", "dense", "dense_q", "gap", "load_u8",
                 "pool", "quantize"):
        setattr(mod, name, getattr(_pure, name))
    sys.modules["ember_kernels"] = mod


def test_automatic_order_is_native_then_ulab_then_pure(fresh_tiers):
    import _ulab_standin
    import ember_micro

    _ulab_standin.install(reverse=False)
    _fake_native()
    assert fresh_tiers.get().name == "native"
    info = ember_micro.info()
    assert info["tier"] == "native" and info["available"] == ["native", "ulab", "pure"]
    assert info["why"] == "native: the fastest tier, it imports"
    fresh_tiers._cache.clear()
    sys.modules.pop("ember_kernels")
    sys.modules.pop("ember_micro._native")
    delattr(ember_micro, "_native")
    info = ember_micro.info()
    assert info["tier"] == "ulab" and info["why"].startswith("ulab: faster tiers unavailable: "
                                                             "native (")


def test_double_precision_firmware_falls_back_with_the_reason(fresh_tiers, tmp_path):
    import _ulab_standin
    import ember_micro
    from ember import nn

    _ulab_standin.install(double=True)
    info = ember_micro.info()
    assert info["tier"] == "pure"
    assert "single-precision float firmware" in info["skipped"]["ulab"]
    assert "ulab (ulab tier needs single-precision" in info["why"]
    path = tmp_path / "m.emb"
    export(seeded(nn.Sequential(nn.Linear(4, 3))), path, (4,))
    assert ember_micro.Model(str(path)).tier == "pure"
    with pytest.raises(ImportError, match=r"kernel tier 'ulab' unavailable: ulab tier needs "
                       r"single-precision float firmware \(this ulab's float is 8 bytes"):
        ember_micro.Model(str(path), "ulab")


def test_the_standin_refuses_reverse_operators(ulab_standin):
    from ulab import numpy as unp

    a = unp.zeros(3, dtype=unp.float)
    assert list(a - 1.0) == [-1.0] * 3
    for expr in (lambda: 1.0 - a, lambda: 1.0 + a, lambda: 2.0 * a, lambda: 1.0 / (a + 1.0)):
        with pytest.raises(TypeError, match="REVERSE_SPECIAL_METHODS=0"):
            expr()
    q = unp.frombuffer(bytes([200, 100]), dtype=unp.int8)
    assert unp.dot(q, q) == 56.0 ** 2 + 100.0 ** 2  # float, as ulab's dot; no int8 wrap


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_ulab_tier_without_the_out_keyword(fresh_tiers, tmp_path, int8):
    """Every layer kind (sigmoid and tanh included) on a ulab build whose tanh takes no out=,
    against the numpy simulation of the file."""
    import _ulab_standin
    import ember_micro
    from _models import zoo

    _ulab_standin.install(reverse=False, out_keyword=False)
    from ember_micro import _ulab

    assert not _ulab.OUT
    model, shape = zoo()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, *shape)).astype(np.float32)
    path = tmp_path / "zoo.emb"
    export(model, path, shape, int8=int8, calibration=x)
    m = ember_micro.Model(str(path), "ulab", resident=256, chunk=200)
    got = np.array([list(m.run(array("f", xi.ravel().tolist()))) for xi in x])
    np.testing.assert_allclose(got, run_reference(load(path), x), rtol=1e-4, atol=2e-5)


def _mnist_cnn_file(tmp_path, int8):
    from ember.demos.mnist_model import mnist_cnn

    model = seeded(mnist_cnn(), seed=4)
    x = np.random.default_rng(0).uniform(-1, 1, (3, 1, 28, 28)).astype(np.float32)
    path = tmp_path / f"cnn{int8}.emb"
    report = export(model, path, (1, 28, 28), int8=int8, calibration=x)
    return path, report, x


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_ulab_tier_temporaries_fit_its_estimate(ulab_standin, tmp_path, int8):
    """The int8 CNN used to widen whole weight blocks and layer inputs to float (31 KB for
    one streamed chunk of the classifier); now dot reads int8 itself and every temporary is a
    row, a row's input patch or a STEP slice."""
    import _ulab_standin
    import ember_micro

    path, report, x = _mnist_cnn_file(tmp_path, int8)
    m = ember_micro.Model(str(path), "ulab")
    inp = array("f", x[0].ravel().tolist())
    m.run(inp)  # warm: imports and first-call objects
    _ulab_standin.allocations.reset()
    tracemalloc.start()
    out = list(m.run(inp))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    np.testing.assert_allclose(out, run_reference(load(path), x[:1])[0], rtol=1e-4, atol=1e-4)
    est = report.memory
    assert peak <= est.tier_bytes["ulab"], (peak, est.tier_bytes)
    assert est.ram_for("ulab") - est.ram_for("native") == (est.tier_bytes["ulab"]
                                                           - est.tier_bytes["native"])
    # the largest single array: the second conv's gathered row patch (16 input channels x 9
    # taps x 14 columns: 8 KB in f32, 2 KB in int8), never a layer's worth of widened data
    from ember_micro import _ulab

    limit = _ulab.PATCH_BYTES + _ulab_standin.HEADER_BYTES if not int8 else 2 * KB + 64
    assert _ulab_standin.allocations.largest <= limit, _ulab_standin.allocations.largest


def test_export_report_states_the_heap_per_tier(tmp_path):
    _, report, _ = _mnist_cnn_file(tmp_path, True)
    text = str(report)
    est = report.memory
    for tier in ("native", "ulab", "pure"):
        assert f"{tier} " in text
    assert est.heap_bytes == max(est.heap_for(t) for t in ("native", "ulab", "pure"))
    with pytest.raises(ValueError, match="unknown kernel tier 'gpu'"):
        est.ram_for("gpu")


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("tier", ["native", "pure"])
def test_tier_estimate_bounds_the_measured_heap(micropython, tmp_path, tier, int8):
    """On the unix port: the live heap after loading (native: plus all one inference
    allocates) stays within ram_for(tier), and the model runs in a heap of heap_for(tier)."""
    path, report, x = _mnist_cnn_file(tmp_path, int8)
    est = report.memory
    run = run_on_micropython(path, x[:1], tier=tier, logits=True,
                             heapsize=str(est.heap_for(tier)))
    assert run.tier == tier
    assert 0 < run.heap_after_load <= est.ram_for(tier)
    if tier == "native":  # the inference's peak: live data plus everything it allocates
        assert run.heap_after_load + run.garbage_bytes <= est.ram_for(tier)
    want = run_reference(load(path), x[:1])
    assert np.abs(np.asarray(run.logits) - want).max() <= 2e-3 * np.abs(want).max()
    if tier == "native":
        assert 0 <= run.garbage_bytes <= 16 * KB


def test_int8_buffers_are_allocated_once(micropython, tmp_path):
    """array('b', bytes(n)) holds the bytes and the array at once; the loader's _zeros_b
    allocates the array alone, so a block of 60% of the heap still loads."""
    from ember.export import run_micropython_script

    script = tmp_path / "alloc.py"
    script.write_text(
        "import gc\nfrom array import array\nfrom ember_micro.model import _zeros_b\n"
        "gc.collect()\nn = gc.mem_free() * 6 // 10\n"
        "a = _zeros_b(n)\nprint('once', len(a))\ndel a\ngc.collect()\n"
        "try:\n    array('b', bytes(n))\n    print('twice ok')\n"
        "except MemoryError:\n    print('twice fails')\n")
    proc = run_micropython_script([str(script)], heapsize="64K")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "once " in proc.stdout and "twice fails" in proc.stdout, proc.stdout
