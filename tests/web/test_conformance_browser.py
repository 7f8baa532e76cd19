"""The conformance catalog replayed inside Pyodide in headless Chromium, one pytest case per
(backend, case): ``python`` (pure-Python backend), ``wgpu`` (WebGPU through ``navigator.gpu``
on SwiftShader) and ``wasm`` (the C kernels in Chromium's WebAssembly). Expected values are the catalog's numpy float64 references, shipped as JSON.

Every backend's cases run in one Python call in the page (fast); each case's outcome is then
reported here. Known failures: tests/conformance/known_failures.py (shared with the native
run) plus tests/web/known_failures.py (browser only): a listed case must fail with the listed
exception and message (conformance/expected.py).

    pytest tests/web                        # every backend
    EMBER_WEB_BACKENDS=python pytest tests/web
"""

from __future__ import annotations

import os

import pytest
from conformance.catalog import all_cases
from conformance.known_failures import expected as native_expected

from .known_failures import BROWSER_ONLY

BACKENDS = [b for b in os.environ.get("EMBER_WEB_BACKENDS", "python,wgpu,wasm").split(",") if b]
CASE_IDS = [c.id for c in all_cases()]


def _params():
    for backend in BACKENDS:
        for cid in CASE_IDS:
            yield pytest.param(backend, cid, id=f"{backend}-{cid}")


@pytest.mark.parametrize(("web_backend", "case_id"), list(_params()))
def test_case_in_browser(conformance_results, web_backend, case_id):
    status, message, _seconds = conformance_results(web_backend)[case_id]
    if status == "skip":
        pytest.skip(message)
    entry = BROWSER_ONLY.get(web_backend, {}).get(case_id) or native_expected(web_backend,
                                                                               case_id)
    if entry is None:
        assert status == "pass", message
        return
    error, _, text = message.partition(": ")
    problem = entry.mismatch_text(None if status == "pass" else error, text)
    if problem:
        pytest.fail(f"{case_id}: {problem}")
    pytest.xfail(entry.why)
