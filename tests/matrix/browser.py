"""The browser columns: a row's model run by ember inside Pyodide in headless Chromium (Debian's,
WebGPU on SwiftShader), through tests/web's harness, on the page's wasm or WebGPU backend.

The page has no numpy: the weights and the input go in as JSON, the output comes back as a
list. One Chromium and one page serve every cell; :func:`close` ends them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the web package

_SESSION: dict = {}

PAGE_CODE = """
import json, ember, importlib
spec = json.loads(_matrix_spec)
module, name = spec["builder"]
model = getattr(importlib.import_module(module), name)()
model.load_state_dict({k: ember.tensor(v).reshape(s) for k, (s, v) in spec["state"].items()})
backend = ember.get_backend(_matrix_backend)
model.to(backend).eval()
x = ember.tensor(spec["x"], backend=backend).reshape(spec["shape"])
with ember.no_grad():
    y = model(x)
json.dumps(y.tolist())
"""


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


def browser_column(backend: str):
    """Run ``row.page_builder()`` with the row's weights on the page's ``backend``."""

    def run(row):
        from web.harness import run_python

        model = row.make()
        spec = {"builder": row.page_builder,
                "state": {k: [list(v.shape), v.numpy().reshape(-1).tolist()]
                          for k, v in model.state_dict().items()},
                "x": row.inputs[0].reshape(-1).tolist(), "shape": list(row.inputs[0].shape)}
        out = run_python(_page(), PAGE_CODE, {"_matrix_spec": json.dumps(spec),
                                              "_matrix_backend": backend})
        return np.asarray(json.loads(out), np.float64)

    return run


def close() -> None:
    """End the page, Chromium, the server and Playwright, if they were started."""
    if "page" in _SESSION:
        _SESSION.pop("page").close()
        _SESSION.pop("browser").close()
        _SESSION.pop("server").close()
        _SESSION.pop("play").stop()
