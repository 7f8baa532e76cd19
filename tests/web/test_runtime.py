"""The web runtime itself: backend choice and its fallback order (WebGPU, else wasm, else
python), sync (JSPI) and async reads, the no-JSPI error, the Web Worker mode, the start-up
phases. References: numpy float64 on CPython."""

from __future__ import annotations

import numpy as np
import pytest

from .harness import blank_page, load_ember, run_python

A = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0 - 0.5
B = np.cos(np.arange(8, dtype=np.float32)).reshape(4, 2)
EXPECTED = (np.tanh(A.astype(np.float64)) @ B.astype(np.float64)).tolist()

PROGRAM = f"""
import ember
a = ember.tensor({A.tolist()!r}, dtype="float32", backend=BACKEND)
b = ember.tensor({B.tolist()!r}, dtype="float32", backend=BACKEND)
y = a.tanh() @ b
"""


def _close(got, want=EXPECTED):
    np.testing.assert_allclose(np.array(got, dtype=np.float64), want, rtol=1e-5, atol=1e-6)


def test_webgpu_chosen_and_visible(ember_page):
    info = ember_page.ember_info
    assert info["backend"] == "wgpu", info["reason"]
    assert "swiftshader" in info["adapter"].lower()
    assert info["jspi"] is True
    assert run_python(ember_page, "import ember\nember.default_backend().name") == "wgpu"


@pytest.mark.parametrize("backend", ["wgpu", "wasm", "python"])
def test_sync_read_through_jspi(ember_page, backend):
    _close(run_python(ember_page, PROGRAM + "y.tolist()", {"BACKEND": backend}))


@pytest.mark.parametrize("backend", ["wgpu", "wasm", "python"])
def test_async_read_and_async_call(ember_page, backend):
    code = PROGRAM + """
from ember.backends.wgpu.browser import call_async
first = (await y.to_data_async()).tolist()
second = (await call_async(lambda: a.tanh() @ b)).tolist()
[first, second]
"""
    first, second = run_python(ember_page, code, {"BACKEND": backend})
    _close(first)
    _close(second)


def test_sync_read_without_jspi_names_the_async_api(ember_page):
    # pyodide.runPython (not runPythonAsync) has no JSPI stack: a sync GPU read can't block
    message = ember_page.evaluate("""() => {
        try {
            window.ember.pyodide.runPython(
                "import ember\\nember.tensor([1.0, 2.0], backend='wgpu').exp().tolist()");
            return "no error";
        } catch (e) { return e.message; }
    }""")
    assert "JavaScript Promise Integration" in message
    assert "to_data_async" in message
    # the runtime still works afterwards
    _close(run_python(ember_page, PROGRAM + "y.tolist()", {"BACKEND": "wgpu"}))


def test_worker_runs_ember_off_the_main_thread(browser, server):
    page = blank_page(browser, server)
    try:
        info = load_ember(page, "auto", worker=True)
        assert info["backend"] == "wgpu", info["reason"]
        _close(run_python(page, PROGRAM + "y.tolist()", {"BACKEND": "wgpu"}))
        assert page.evaluate("() => window.ember.worker instanceof Worker")
    finally:
        page.close()


def test_wasm_when_webgpu_is_missing(browser_without_webgpu, server):
    page = blank_page(browser_without_webgpu, server)
    try:
        info = load_ember(page, "auto")
        assert info["backend"] == "wasm", info["reason"]
        assert "navigator.gpu" in info["reason"]
        _close(run_python(page, PROGRAM + "y.tolist()", {"BACKEND": "wasm"}))
        assert run_python(page, "import ember\nember.default_backend().name") == "wasm"
    finally:
        page.close()


def test_python_when_webgpu_and_the_kernels_are_missing(browser_without_webgpu, server):
    page = blank_page(browser_without_webgpu, server)
    page.route("**/ember.wasm", lambda route: route.abort())
    try:
        info = load_ember(page, "auto")
        assert info["backend"] == "python"
        assert "navigator.gpu" in info["skipped"]["wgpu"]
        assert "wasm" in info["skipped"]
        _close(run_python(page, PROGRAM + "y.tolist()", {"BACKEND": "python"}))
    finally:
        page.close()


@pytest.mark.parametrize("backend", ["wasm", "python"])
def test_a_named_backend_is_chosen_even_with_webgpu(browser, server, backend):
    page = blank_page(browser, server)
    try:
        info = load_ember(page, backend)
        assert info["backend"] == backend
        assert info["reason"] == f"{backend} backend requested"
        assert run_python(page, "import ember\nember.default_backend().name") == backend
    finally:
        page.close()


def test_a_named_backend_that_cannot_start_is_an_error(browser_without_webgpu, server):
    page = blank_page(browser_without_webgpu, server)
    try:
        with pytest.raises(Exception, match="navigator.gpu"):
            load_ember(page, "wgpu")
        with pytest.raises(Exception, match="backend must be one of auto, wgpu, wasm, python"):
            load_ember(page, "gpu")
    finally:
        page.close()


def test_start_up_phases_and_the_served_kernels(ember_page, server):
    phases = ember_page.ember_info["phases"]
    assert set(phases) == {"pyodide", "install", "import", "backend"}
    assert all(ms >= 0 for ms in phases.values())
    assert ember_page.ember_info["startup_ms"] >= sum(phases.values()) - 1
    # streaming compilation needs the wasm MIME type; the wheel leaves the kernels out
    kind = ember_page.evaluate(
        "async () => (await fetch('ember.wasm', { method: 'HEAD' })).headers.get('content-type')")
    assert kind == "application/wasm"
    # the page's wasm instance is registered beside WebGPU, not wasmtime's
    assert run_python(ember_page, "import ember\ntype(ember.get_backend('wasm').rt.host).__name__"
                      ) == "BrowserHost"


def test_example_page_runs_python(browser, server):
    page = blank_page(browser, server)
    try:
        page.goto(server.url + "index.html")
        page.wait_for_selector("#run:not([disabled])", timeout=120_000)
        assert page.text_content("#backend").startswith("wgpu")
        page.fill("#code", "import ember\nprint('sum', ember.arange(5).sum().item())")
        page.click("#run")
        page.wait_for_function("document.getElementById('out').textContent.includes('ms)')")
        assert "sum 10" in page.text_content("#out")
    finally:
        page.close()
