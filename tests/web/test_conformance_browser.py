"""The conformance catalog replayed inside Pyodide in headless Chromium, one pytest case per
(backend, case): ``python`` (pure-Python backend), ``wgpu`` (WebGPU through ``navigator.gpu``
on SwiftShader) and ``wasm`` (the C kernels in Chromium's WebAssembly). Expected values are the catalog's numpy float64 references, shipped as JSON.

Every backend's cases run in one Python call in the page (fast); each case's outcome is then
reported here. Known failures: tests/conformance/known_failures.py (shared with the native
run) plus tests/web/known_failures.py (browser only), as xfail(strict=True).

    pytest tests/web                        # every backend
    EMBER_WEB_BACKENDS=python pytest tests/web
"""

from __future__ import annotations

import os

import pytest
from conformance.catalog import all_cases
from conformance.known_failures import reason as native_reason

from .known_failures import BROWSER_ONLY

BACKENDS = [b for b in os.environ.get("EMBER_WEB_BACKENDS", "python,wgpu,wasm").split(",") if b]
CASE_IDS = [c.id for c in all_cases()]


def _params():
    for backend in BACKENDS:
        for cid in CASE_IDS:
            why = BROWSER_ONLY.get(backend, {}).get(cid) or native_reason(backend, cid)
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
            yield pytest.param(backend, cid, marks=marks, id=f"{backend}-{cid}")


@pytest.mark.parametrize(("web_backend", "case_id"), list(_params()))
def test_case_in_browser(conformance_results, web_backend, case_id):
    status, message, _seconds = conformance_results(web_backend)[case_id]
    if status == "skip":
        pytest.skip(message)
    assert status == "pass", message
