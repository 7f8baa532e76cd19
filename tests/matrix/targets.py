"""The matrix's columns: each runs one row's model on one target and returns its output as a
float64 numpy array (batch 1), or raises what the target raised.

- a backend: the module moved there with ``.to(backend)``, called eagerly;
- ``fusion+jit``: the module on ``ember.Fusion(backend)`` through ``ember.jit`` (the first
  call traces, the second replays the tape: the replay is what is checked);
- ``onnx export``: ``ember.onnx.export`` of the module, run by onnxruntime;
- ``mcu``: ``ember.export`` to a micro model file, run by ``ember_micro`` with one kernel tier:
  native (.mpy C kernels) and pure on the unix MicroPython that embedded/build_micropython.sh
  builds, ulab on the real ulab firmware in ``shared/ulab`` beside the checkout;
- ``browser``: ember in Pyodide in headless Chromium, on wasm or WebGPU (browser.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

import ember
import ember.jit
from .browser import browser_column

MCU_HEAP = "8M"  # the unix port: the matrix checks numbers, tests/embedded checks board heaps
ULAB_DIR = Path(__file__).resolve().parents[3] / "shared" / "ulab"  # beside the checkout


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


class Unavailable(Exception):
    """The target's firmware is not on this machine (the cell says so instead of a number)."""


def _ulab_firmware() -> str:
    """The real ulab firmware's common board build (2-D, float32) beside the checkout."""
    path = ULAB_DIR / "micropython-ulab-2d-f32"
    if not os.access(path, os.X_OK):
        raise Unavailable(f"real ulab firmware not found at {path} (ulab is in no package "
                          "registry; a checkout needs shared/ulab beside it)")
    return str(path)


def mcu(tier: str):
    """``ember.export`` to a micro model file, run by ember_micro's ``tier`` kernels."""

    def run(row):
        from ember.export import export, run_on_micropython

        firmware = _ulab_firmware() if tier == "ulab" else None
        with tempfile.TemporaryDirectory(prefix="ember-matrix-") as tmp:
            path = os.path.join(tmp, "model.emb")
            (x,) = row.inputs
            export(row.make(), path, x.shape[1:])
            out = run_on_micropython(path, x, tier=tier, logits=True, heapsize=MCU_HEAP,
                                     timeout=300, micropython=firmware)
        if out.tier != tier:
            raise RuntimeError(f"ember_micro ran the {out.tier} tier, not {tier}: {out.why}")
        return np.asarray(out.logits, np.float64)

    return run


#: column name -> how it runs a row
COLUMNS = {
    "numpy": eager("numpy"),
    "python": eager("python"),
    "wasm": eager("wasm"),
    "wgpu": eager("wgpu"),
    "fusion+jit wgpu": fusion_jit("wgpu"),
    "fusion+jit wasm": fusion_jit("wasm"),
    "onnx export → ort": onnx_export,
    "mcu native": mcu("native"),
    "mcu pure": mcu("pure"),
    "mcu ulab": mcu("ulab"),
    "browser wasm": browser_column("wasm"),
    "browser webgpu": browser_column("wgpu"),
}
