"""The page's backend choice: WebGPU when an adapter is offered, else wasm, else python.

``web/ember.js`` calls :func:`init_browser` once Pyodide and ember are installed, with the
``WebAssembly.Module`` of the kernels it compiled (streaming) while Pyodide was loading:

>>> info = await init_browser("auto", compiled)    # doctest: +SKIP
>>> info["backend"], info["reason"]                # doctest: +SKIP
('wasm', 'no WebGPU (wgpu (browser): navigator.gpu is missing: ...): wasm kernels')

``prefer`` names one backend (``"wgpu"``, ``"wasm"``, ``"python"``: an error when it can't
start, except ``"python"``, which always can) or ``"auto"`` (the first that starts, in the
order :data:`ORDER`). The chosen backend becomes the default; those started are registered
under their names, so ``ember.get_backend("wasm")`` is the page's instance, not the wasmtime
one CPython would build (wasm is started beside WebGPU whenever its module was handed over).
"""

from __future__ import annotations

from typing import Any

from ..errors import EmberError
from . import register, set_default_backend

ORDER = ("wgpu", "wasm", "python")
CHOICES = ("auto", *ORDER)


async def _start(name: str, compiled, kernels_error: str = ""):
    if name == "wgpu":
        from .wgpu.browser import browser_backend

        return await browser_backend()
    if compiled is None and kernels_error:
        raise EmberError(kernels_error)
    from .wasm.browser import wasm_backend

    return await wasm_backend(compiled)


def _detail(name: str, backend) -> dict[str, Any]:
    if name == "wgpu":
        from .wgpu.browser import jspi_available

        jspi = jspi_available()
        return {"adapter": backend.rt.adapter.info.name, "jspi": jspi,
                "note": "" if jspi else "no JSPI: read tensors with `await t.to_data_async()`"}
    return {}


async def init_browser(prefer: str = "auto", compiled=None,
                       kernels_error: str = "") -> dict[str, Any]:
    """Start the page's default backend; returns ``{"backend", "reason", "adapter", ...}``
    for the page to show: the backend chosen and why the ones before it were passed over.

    ``compiled``: the kernels' ``WebAssembly.Module`` (``None``: compile the package's copy,
    unless ``kernels_error`` says why the page couldn't compile them: then wasm is skipped).
    """
    if prefer not in CHOICES:
        raise EmberError(f"init_browser: prefer must be one of {', '.join(map(repr, CHOICES))}, "
                         f"got {prefer!r}")
    info: dict[str, Any] = {"backend": "python", "adapter": None, "reason": "", "skipped": {}}
    for name in ORDER if prefer == "auto" else (prefer,):
        if name == "python":
            break
        try:
            backend = await _start(name, compiled, kernels_error)
        except (EmberError, ImportError) as e:
            if prefer != "auto":
                raise
            info["skipped"][name] = str(e)
            continue
        register(name, lambda backend=backend: backend)
        set_default_backend(backend)
        info.update(backend=name, **_detail(name, backend))
        break
    if info["backend"] == "python":
        set_default_backend("python")
    if compiled is not None and info["backend"] != "wasm" and "wasm" not in info["skipped"]:
        # the kernels are compiled already: an instance costs milliseconds, and
        # ember.get_backend("wasm") then works beside WebGPU (CPU work, comparisons)
        try:
            backend = await _start("wasm", compiled)
        except (EmberError, ImportError) as e:
            info["wasm_error"] = str(e)  # the chosen backend stands; the page may show it
        else:
            register("wasm", lambda backend=backend: backend)
    info["reason"] = _reason(prefer, info)
    return info


def _reason(prefer: str, info: dict[str, Any]) -> str:
    chosen = info["backend"]
    if prefer != "auto":
        return f"{chosen} backend requested" + (f"; {info['note']}" if info.get("note") else "")
    parts = [f"no {name} ({why})" for name, why in info["skipped"].items()]
    if info.get("note"):
        parts.append(info["note"])
    return "; ".join(parts)
