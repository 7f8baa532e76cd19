"""The browser adapter's own machinery in the page (WebGPU on SwiftShader): bind groups built
in JavaScript from flat (buffer, offset, size) arguments, and the GPU timer (timestamp
queries) that benchmarks/bench_browser.py reads. References: numpy float64 on CPython."""

from __future__ import annotations

import numpy as np

from .harness import run_python

A = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
C = np.cos(np.arange(12, dtype=np.float32)).reshape(3, 4)

BIND_GROUPS = f"""
import ember
adapter = ember.get_backend("wgpu").rt.adapter
a = ember.tensor({A.tolist()!r}, dtype="float32", backend="wgpu")
c = ember.tensor({C.tolist()!r}, dtype="float32", backend="wgpu")
# several eager dispatches in one batch: meta words at growing arena offsets, 2-4 bindings each
y = ember.where(a > 0, a * c + c, c - a).sum(1)
{{"values": y.tolist(), "errors": list(adapter.errors)}}
"""

TIMER = f"""
import ember
adapter = ember.get_backend("wgpu").rt.adapter
adapter.start_gpu_timer()
y = (ember.tensor({A.tolist()!r}, dtype="float32", backend="wgpu").exp() * 2.0).sum(1)
values = y.tolist()
timed, again = adapter.gpu_seconds(), adapter.gpu_seconds()
adapter.stop_gpu_timer()
after = (ember.tensor([1.0], backend="wgpu") + 1).tolist()
{{"values": values, "timed": timed, "again": again, "after": after,
  "errors": list(adapter.errors)}}
"""


def _on_webgpu(page) -> None:
    assert page.ember_info["backend"] == "wgpu", page.ember_info["reason"]


def test_eager_dispatches_bind_what_they_were_given(ember_page):
    _on_webgpu(ember_page)
    got = run_python(ember_page, BIND_GROUPS)
    assert got["errors"] == []
    a, c = A.astype(np.float64), C.astype(np.float64)
    np.testing.assert_allclose(got["values"], np.where(a > 0, a * c + c, c - a).sum(1),
                               rtol=1e-5, atol=1e-6)


def test_gpu_timer_stamps_passes_and_resets(ember_page):
    _on_webgpu(ember_page)
    got = run_python(ember_page, TIMER)
    assert got["errors"] == []
    np.testing.assert_allclose(got["values"], (np.exp(A.astype(np.float64)) * 2).sum(1),
                               rtol=1e-5)
    assert got["after"] == [2.0]
    assert got["timed"] > 0.0  # some stamped pass ran (not a speed check)
    assert got["again"] == 0.0  # read and reset: nothing ran since
