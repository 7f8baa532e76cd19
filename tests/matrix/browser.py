"""The browser columns: a row's model run by ember inside Pyodide in headless Chromium (Debian's,
WebGPU on SwiftShader), through tests/web's harness, on the page's wasm or WebGPU backend.

The page has no numpy: the row's ``page_builder`` builds the float architecture there, the
weights travel as the record ``ember.save`` writes (an ``ember.quantize`` model as its int8
record, rebuilt by ``ember.quantize.load`` as the int8 demo page does), the input as JSON, and
the output comes back as a list. One Chromium and one page serve every cell; :func:`close`
ends them.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the web package

_SESSION: dict = {}

# the page answers {"out": [...]} or {"error": "Type: message"} (not a JS stack trace)
PAGE_CODE = """
import base64, importlib, json, os
import ember

def _matrix_run(spec):
    folder = "/tmp/ember_matrix/" + spec["row"]
    os.makedirs(folder, exist_ok=True)
    for name, data in spec["files"].items():
        with open(f"{folder}/{name}", "wb") as f:
            f.write(base64.b64decode(data))
    model = eval(spec["builder"], {"ember": ember, "importlib": importlib})
    if spec["int8"]:
        model = ember.quantize.load(model, f"{folder}/model")
    else:
        ember.io.load(model, f"{folder}/model")
    backend = ember.get_backend(_matrix_backend)
    model.to(backend).eval()
    x = ember.tensor(spec["x"], backend=backend).reshape(spec["shape"])
    with ember.no_grad():
        return model(x).tolist()

try:
    _matrix_answer = {"out": _matrix_run(json.loads(_matrix_spec))}
except Exception as e:
    _matrix_answer = {"error": f"{type(e).__name__}: {e}"}
json.dumps(_matrix_answer)
"""


class PageError(Exception):
    """What ember raised inside the page."""


def _page():
    if "page" not in _SESSION:
        from playwright.sync_api import sync_playwright
        from web.harness import DIST, Server, blank_page, ensure_dist, launch_chromium, load_ember

        ensure_dist()
        play = sync_playwright().start()
        _SESSION["play"] = play
        _SESSION["server"] = Server(DIST, {"/blank.html": Path(__file__).parents[1] / "web" /
                                           "blank.html"})
        _SESSION["browser"] = launch_chromium(play, webgpu=True)
        page = blank_page(_SESSION["browser"], _SESSION["server"])
        load_ember(page, "auto")
        _SESSION["page"] = page
    return _SESSION["page"]


def _record(model) -> tuple[dict, bool]:
    """The files of ``model``'s record (base64), and whether it is an int8 record."""
    import ember

    int8 = getattr(model, "scheme", None) is not None  # an ember.quantize model
    with tempfile.TemporaryDirectory(prefix="ember-matrix-") as tmp:
        (ember.quantize.save if int8 else ember.save)(model, os.path.join(tmp, "model"))
        files = {name: base64.b64encode(Path(tmp, name).read_bytes()).decode()
                 for name in os.listdir(tmp)}
    return files, int8


def browser_column(backend: str):
    """Build the row's model in the page from its record, run it on the page's ``backend``."""

    def run(row):
        from web.harness import run_python

        if row.page_builder is None:
            raise ValueError(f"browser: row {row.name} has no page_builder (list its browser "
                             "cells in capabilities.NOT_RUN with the reason)")
        files, int8 = _record(row.make())
        spec = {"row": row.name, "builder": row.page_builder, "files": files, "int8": int8,
                "x": row.inputs[0].reshape(-1).tolist(), "shape": list(row.inputs[0].shape)}
        out = run_python(_page(), PAGE_CODE, {"_matrix_spec": json.dumps(spec),
                                              "_matrix_backend": backend})
        answer = json.loads(out)
        if "error" in answer:
            raise PageError(answer["error"])
        return np.asarray(answer["out"], np.float64)

    return run


def close() -> None:
    """End the page, Chromium, the server and Playwright, if they were started."""
    if "page" in _SESSION:
        _SESSION.pop("page").close()
        _SESSION.pop("browser").close()
        _SESSION.pop("server").close()
        _SESSION.pop("play").stop()
