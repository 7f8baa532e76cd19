"""The wasm backend in a web page: the kernels module instantiated by the page's WebAssembly.

``web/ember.js`` starts ``WebAssembly.compileStreaming(fetch("ember.wasm"))`` while Pyodide
loads and hands the compiled module to :func:`~ember.backends.browser.init_browser`, which
calls :func:`wasm_backend`. Without a compiled module, the wheel's copy of the kernels is
compiled here (slower: no streaming).

>>> backend = await wasm_backend(compiled)              # doctest: +SKIP
>>> ember.tensor([1.0, 2.0], backend=backend).sum().item()  # doctest: +SKIP
3.0
"""

from __future__ import annotations

from .backend import WasmBackend
from .host import BrowserHost


async def wasm_backend(compiled=None) -> WasmBackend:
    """A :class:`WasmBackend` on a new instance of ``compiled`` (a ``WebAssembly.Module``;
    ``None``: the wheel's ``ember.wasm``). Instantiation is asynchronous because Chromium
    forbids instantiating modules over 4 KB synchronously on the main thread."""
    return WasmBackend(host=await BrowserHost.create(compiled))
