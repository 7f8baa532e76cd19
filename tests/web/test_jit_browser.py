"""ember.jit inside Pyodide in Chromium (WebGPU on SwiftShader, wasm and python backends): a
captured training step (Linear, ReLU, Dropout, Linear; cross-entropy; SGD with momentum)
replays and ends with the weights the eager path gives on CPython's numpy backend."""

from __future__ import annotations

import numpy as np
import pytest

from .harness import run_python

RNG = np.random.default_rng(5)
X = RNG.standard_normal((6, 5)).astype(np.float32).tolist()
Y = RNG.integers(0, 3, 6).tolist()

PROGRAM = f"""
import ember
from ember import nn, optim
from ember.nn.loss import cross_entropy

def run(backend, jitted):
    ember.seed(0)
    b = ember.Autodiff(ember.get_backend(backend))
    with ember.use_backend(b):
        model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 3))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = ember.tensor({X!r}, dtype="float32", backend=b)
    y = ember.tensor({Y!r}, backend=b)

    def step(x, y):
        loss = cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    fn = ember.jit(step) if jitted else step
    losses = [fn(x, y).item() for _ in range(5)]
    weights = [p.tolist() for p in model.parameters()]
    stats = fn.stats() if jitted else None
    return {{"losses": losses, "weights": weights,
             "replays": stats and stats["replays"], "traces": stats and stats["traces"]}}
"""


def _flat(nested) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(w, dtype=np.float64)) for w in nested])


@pytest.mark.parametrize("backend", ["wgpu", "wasm", "python"])
def test_jitted_training_step_in_the_browser_matches_eager_numpy(ember_page, backend):
    got = run_python(ember_page, PROGRAM + "run(BACKEND, True)", {"BACKEND": backend})
    namespace: dict = {}
    exec(PROGRAM, namespace)  # the reference: eager, numpy, on CPython
    want = namespace["run"]("numpy", False)
    assert (got["traces"], got["replays"]) == (1, 3)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_flat(got["weights"]), _flat(want["weights"]), rtol=1e-5,
                               atol=1e-6)
