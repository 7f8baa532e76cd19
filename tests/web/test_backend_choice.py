"""The page's backend choice (ember.backends.browser.init_browser) in CPython: the order WebGPU,
wasm, python under "auto", a named backend's error, and what is registered. The starts are
stand-ins (the real ones need a page: tests/web/test_runtime.py runs them in Chromium)."""

from __future__ import annotations

import pytest

import ember
from ember.backends import browser


class _Started:
    def __init__(self, name):
        self.name = name


@pytest.fixture
def starts(monkeypatch):
    """``fails``: backend name → error message of its start; returns the names started."""
    fails: dict[str, str] = {}
    tried: list[str] = []

    async def start(name, compiled, kernels_error=""):
        tried.append(name)
        if name in fails:
            raise ember.EmberError(fails[name])
        return _Started(name)

    monkeypatch.setattr(browser, "_start", start)
    monkeypatch.setattr(browser, "_detail", lambda name, backend: {})
    registered = {}
    monkeypatch.setattr(browser, "register", lambda name, f: registered.__setitem__(name, f()))
    chosen = []
    monkeypatch.setattr(browser, "set_default_backend", chosen.append)
    return fails, tried, registered, chosen


def _init(prefer, compiled=None):
    # the stand-ins never suspend, so one step runs the coroutine to its end (asyncio.run
    # can't: Playwright's sync API keeps an event loop running in this thread)
    coro = browser.init_browser(prefer, compiled)
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise AssertionError("init_browser suspended: it awaited more than the stand-ins")


def test_auto_prefers_webgpu_and_starts_wasm_beside_it(starts):
    fails, tried, registered, chosen = starts
    info = _init("auto", compiled="module")
    assert info["backend"] == "wgpu" and info["reason"] == ""
    assert tried == ["wgpu", "wasm"]
    assert sorted(registered) == ["wasm", "wgpu"] and chosen[-1].name == "wgpu"


def test_auto_falls_back_to_wasm_then_python(starts):
    fails, tried, registered, chosen = starts
    fails["wgpu"] = "navigator.gpu is missing"
    info = _init("auto", compiled="module")
    assert info["backend"] == "wasm" and chosen[-1].name == "wasm"
    assert info["reason"] == "no wgpu (navigator.gpu is missing)"
    fails["wasm"] = "no kernels"
    info = _init("auto")
    assert info["backend"] == "python" and chosen[-1] == "python"
    assert info["reason"] == "no wgpu (navigator.gpu is missing); no wasm (no kernels)"


def test_a_named_backend_is_started_alone_or_raises(starts):
    fails, tried, registered, chosen = starts
    assert _init("wasm", compiled="module")["backend"] == "wasm"
    assert tried == ["wasm"]
    fails["wgpu"] = "no adapter"
    with pytest.raises(ember.EmberError, match="no adapter"):
        _init("wgpu")
    info = _init("python")
    assert info["backend"] == "python" and info["reason"] == "python backend requested"
    with pytest.raises(ember.EmberError, match="'auto', 'wgpu', 'wasm', 'python'"):
        _init("gpu")


def test_wasm_beside_webgpu_that_fails_leaves_webgpu_chosen(starts):
    fails, tried, registered, chosen = starts
    fails["wasm"] = "out of memory"
    info = _init("auto", compiled="module")
    assert info["backend"] == "wgpu" and chosen[-1].name == "wgpu"
    assert info["wasm_error"] == "out of memory" and "wasm" not in registered
