"""The wasm backend in a web page: the kernels module instantiated by the page's WebAssembly.

``web/ember.js`` starts ``WebAssembly.compileStreaming(fetch("ember.wasm"))`` while Pyodide
loads and hands the compiled module to :func:`~ember.backends.browser.init_browser`, which
calls :func:`wasm_backend`. Without a compiled module, the package's copy of the kernels is
compiled here (slower: no streaming); the web distribution's wheel has none, since the page
fetches ``ember.wasm`` itself.

>>> backend = await wasm_backend(compiled)              # doctest: +SKIP
>>> ember.tensor([1.0, 2.0], backend=backend).sum().item()  # doctest: +SKIP
3.0
"""

from __future__ import annotations

from ...errors import EmberError
from .backend import WasmBackend
from .host import MODULE, BrowserHost


async def wasm_backend(compiled=None) -> WasmBackend:
    """A :class:`WasmBackend` on a new instance of ``compiled`` (a ``WebAssembly.Module``;
    ``None``: the wheel's ``ember.wasm``). Instantiation is asynchronous because Chromium
    forbids instantiating modules over 4 KB synchronously on the main thread."""
    if compiled is None and not MODULE.is_file():
        raise EmberError("wasm (browser): no compiled kernels were handed over and this ember "
                         "has no ember.wasm: start ember with web/dist/ember.js (it compiles "
                         "dist/ember.wasm), or pass a WebAssembly.Module")
    return WasmBackend(host=await BrowserHost.create(compiled))
