"""The matrix's columns: each runs one row's model on one target and returns its output as a
float64 numpy array (batch 1), or raises what the target raised.

- a backend: the module moved there with ``.to(backend)``, called eagerly;
- ``fusion+jit``: the module on ``ember.Fusion(backend)`` through ``ember.jit`` (the first
  call traces, the second replays the tape: the replay is what is checked);
- ``onnx export``: ``ember.onnx.export`` of the module, run by onnxruntime;
- ``mcu``: ``ember.export`` to a micro model file, run by ``ember_micro`` on the unix
  MicroPython that embedded/build_micropython.sh builds (its native kernels when they load);
- ``browser``: ember in Pyodide in headless Chromium, on wasm or WebGPU (browser.py).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

import ember
import ember.jit
from browser import browser_column

MCU_HEAP = "8M"  # the unix port: the matrix checks numbers, tests/embedded checks board heaps


def _tensors(row, backend):
    return [ember.tensor(x, backend=backend) for x in row.inputs]


def _out(y) -> np.ndarray:
    return np.asarray(y.numpy(), np.float64)


def eager(backend_name: str):
    def run(row):
        backend = ember.get_backend(backend_name)
        model = row.make().to(backend)
        with ember.no_grad():
            return _out(model(*_tensors(row, backend)))

    return run


def fusion_jit(backend_name: str):
    def run(row):
        backend = ember.Fusion(ember.get_backend(backend_name))
        model = row.make().to(backend)
        fn = ember.jit(model.__call__)
        with ember.no_grad():
            fn(*_tensors(row, backend))  # traces
            return _out(fn(*_tensors(row, backend)))  # replays

    return run


def onnx_export(row):
    import onnxruntime as ort

    import ember.onnx

    with tempfile.TemporaryDirectory(prefix="ember-matrix-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        ember.onnx.export(row.make(), tuple(_tensors(row, "numpy")), path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = dict(zip([i.name for i in sess.get_inputs()], row.inputs))
        return np.asarray(sess.run(None, feeds)[0], np.float64)


def mcu(row):
    from ember.export import export, run_on_micropython

    with tempfile.TemporaryDirectory(prefix="ember-matrix-") as tmp:
        path = os.path.join(tmp, "model.emb")
        (x,) = row.inputs
        export(row.make(), path, x.shape[1:])
        run = run_on_micropython(path, x, logits=True, heapsize=MCU_HEAP, timeout=120)
        return np.asarray(run.logits, np.float64)


#: column name -> how it runs a row
COLUMNS = {
    "numpy": eager("numpy"),
    "python": eager("python"),
    "wasm": eager("wasm"),
    "wgpu": eager("wgpu"),
    "fusion+jit wgpu": fusion_jit("wgpu"),
    "fusion+jit wasm": fusion_jit("wasm"),
    "onnx export → ort": onnx_export,
    "mcu → ember_micro": mcu,
    "browser wasm": browser_column("wasm"),
    "browser webgpu": browser_column("wgpu"),
}
