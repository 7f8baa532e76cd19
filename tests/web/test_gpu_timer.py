"""The browser adapter's GPU timer (timestamp queries on SwiftShader), which
benchmarks/bench_browser.py reads: passes are stamped while it runs, the sum is read back and
reset, and timed work still computes what numpy float64 gives on CPython."""

from __future__ import annotations

import numpy as np

from .harness import run_python

A = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)

PROGRAM = f"""
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


def test_gpu_timer_stamps_passes_and_resets(ember_page):
    assert ember_page.ember_info["backend"] == "wgpu", ember_page.ember_info["reason"]
    got = run_python(ember_page, PROGRAM)
    assert got["errors"] == []
    np.testing.assert_allclose(got["values"], (np.exp(A.astype(np.float64)) * 2).sum(1),
                               rtol=1e-5)
    assert got["after"] == [2.0]
    assert got["timed"] > 0.0  # some stamped pass ran (not a speed check)
    assert got["again"] == 0.0  # read and reset: nothing ran since
