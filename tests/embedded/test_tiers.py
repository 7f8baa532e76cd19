"""Kernel tiers: the per-tier heap estimate in the export report, checked against the heap a
model really uses on the MicroPython unix port. The automatic tier order and the ulab tier run
on real ulab firmware: test_ulab.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from _models import seeded
from ember.export import export, load, run_on_micropython, run_reference

KB = 1024


def _mnist_cnn_file(tmp_path, int8):
    from ember.demos.mnist_model import mnist_cnn

    model = seeded(mnist_cnn(), seed=4)
    x = np.random.default_rng(0).uniform(-1, 1, (3, 1, 28, 28)).astype(np.float32)
    path = tmp_path / f"cnn{int8}.emb"
    report = export(model, path, (1, 28, 28), int8=int8, calibration=x)
    return path, report, x


def test_export_report_states_the_heap_per_tier(tmp_path):
    _, report, _ = _mnist_cnn_file(tmp_path, True)
    text = str(report)
    est = report.memory
    for tier in ("native", "ulab", "pure"):
        assert f"{tier} " in text
    assert est.heap_bytes == max(est.heap_for(t) for t in ("native", "ulab", "pure"))
    with pytest.raises(ValueError, match="unknown kernel tier 'gpu'"):
        est.ram_for("gpu")
    # a ROMFS board: any tier's figure, and the hungriest tier's
    assert est.heap_for(None, romfs=True) == max(est.heap_for(t, romfs=True)
                                                 for t in ("native", "ulab", "pure"))
    with pytest.raises(ValueError, match="romfs=True runs ember_micro's .mpy files"):
        est.heap_for("native", mpy=False, romfs=True)


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
