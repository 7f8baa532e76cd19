"""The browser columns: a row's model run by ember inside Pyodide in headless Chromium (Debian's,
WebGPU on SwiftShader), through tests/web's harness, on the page's wasm or WebGPU backend.

The page has no numpy: the row's ``page_builder`` builds the float architecture there, the
weights travel as the record ``ember.save`` writes (an ``ember.quantize`` model as its int8
record, rebuilt by ``ember.quantize.load`` as the int8 demo page does), served by the harness's
local server under ``/matrix/<row>/`` and fetched by the page (MiniLM's is 90 MB: too much
for page.evaluate's JSON). The inputs go as JSON with their dtypes and shapes, the output
comes back as a list. One Chromium and one page serve every cell; :func:`close` ends them.
"""

from __future__ import annotations

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
import importlib, json, os, shutil
import ember
from pyodide.http import pyfetch

async def _matrix_fetch(url, path):
    response = await pyfetch(url)
    if not response.ok:
        raise OSError(f"GET {url}: HTTP {response.status}")
    with open(path, "wb") as f:
        f.write(await response.bytes())

async def _matrix_run(spec):
    folder = "/tmp/ember_matrix/" + spec["row"]
    os.makedirs(folder, exist_ok=True)
    try:
        for name in spec["files"]:
            await _matrix_fetch(spec["url"] + name, f"{folder}/{name}")
        model = eval(spec["builder"], {"ember": ember, "importlib": importlib})
        if spec["int8"]:
            model = ember.quantize.load(model, f"{folder}/model")
        else:
            ember.io.load(model, f"{folder}/model")
    finally:
        shutil.rmtree(folder)  # the page's file system is its memory
    backend = ember.get_backend(_matrix_backend)
    model.to(backend).eval()
    xs = [ember.tensor(x["data"], dtype=x["dtype"], backend=backend).reshape(x["shape"])
          for x in spec["inputs"]]
    with ember.no_grad():
        return model(*xs).tolist()

try:
    _matrix_answer = {"out": await _matrix_run(json.loads(_matrix_spec))}
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
        records = tempfile.TemporaryDirectory(prefix="ember-matrix-records-")
        _SESSION["records"] = records
        play = sync_playwright().start()
        _SESSION["play"] = play
        _SESSION["server"] = Server(DIST, {
            "/blank.html": Path(__file__).parents[1] / "web" / "blank.html",
            "/matrix/": Path(records.name)})
        _SESSION["browser"] = launch_chromium(play, webgpu=True)
        page = blank_page(_SESSION["browser"], _SESSION["server"])
        load_ember(page, "auto")
        _SESSION["page"] = page
    return _SESSION["page"]


def _record(row) -> tuple[list[str], bool]:
    """The file names of the row's model record, written once into the served folder
    ``<records>/<row>/``, and whether it is an int8 record."""
    import ember

    written = _SESSION.setdefault("written", {})
    if row.name not in written:
        model = row.make()
        int8 = getattr(model, "scheme", None) is not None  # an ember.quantize model
        folder = Path(_SESSION["records"].name, row.name)
        folder.mkdir()
        (ember.quantize.save if int8 else ember.save)(model, str(folder / "model"))
        written[row.name] = (sorted(os.listdir(folder)), int8)
    return written[row.name]


def _input(x: np.ndarray) -> dict:
    return {"data": x.reshape(-1).tolist(), "dtype": str(x.dtype), "shape": list(x.shape)}


def browser_column(backend: str):
    """Build the row's model in the page from its record, run it on the page's ``backend``."""

    def run(row):
        from web.harness import run_python

        if row.page_builder is None:
            raise ValueError(f"browser: row {row.name} has no page_builder (list its browser "
                             "cells in capabilities.NOT_RUN with the reason)")
        page = _page()
        files, int8 = _record(row)
        spec = {"row": row.name, "builder": row.page_builder, "files": files, "int8": int8,
                "url": f"{_SESSION['server'].url}matrix/{row.name}/",
                "inputs": [_input(x) for x in row.inputs]}
        out = run_python(page, PAGE_CODE, {"_matrix_spec": json.dumps(spec),
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
        _SESSION.pop("records").cleanup()
        _SESSION.pop("written", None)
