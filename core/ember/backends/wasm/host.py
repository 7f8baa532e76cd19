"""Where the wasm kernels run: the same ``ember.wasm`` module under two hosts.

- :class:`WasmtimeHost` — CPython, through the ``wasmtime`` package (``pip install
  'ember[wasm]'``): the tests and benchmarks run the browser's kernels natively.
- :class:`BrowserHost` — Pyodide, through the page's own ``WebAssembly`` (``js``): created by
  :func:`~ember.backends.wasm.browser.wasm_backend` from a module that ``ember.js`` compiled
  while Pyodide was loading (streaming compilation), or from the package's copy.

A host exposes the module's exports as Python callables (``host.fn("em_binary")``) and copies
bytes into and out of its linear memory; nothing else crosses.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from pathlib import Path

from ...errors import EmberError

MODULE = Path(__file__).with_name("ember.wasm")


def module_bytes() -> bytes:
    """The compiled kernels shipped in the package (built by ``make`` from ``wasm/*.c``)."""
    try:
        return MODULE.read_bytes()
    except FileNotFoundError:
        raise EmberError(
            f"wasm: {MODULE} is missing; in a checkout, `make wasm` installs the toolchain "
            "(clang, lld, wasi-libc, libclang-rt-14-dev-wasm32) and builds it"
        ) from None


class Host:
    """The module's exports and memory; subclasses implement ``fn``, ``write``, ``read``."""

    def fn(self, name: str) -> Callable[..., int | float]:
        raise NotImplementedError

    def write(self, ptr: int, data: bytes | bytearray | memoryview) -> None:
        raise NotImplementedError

    def read(self, ptr: int, nbytes: int) -> bytes:
        raise NotImplementedError

    def memory_size(self) -> int:
        """Bytes of linear memory the module holds now (it grows, never shrinks)."""
        raise NotImplementedError

    def c_string(self, ptr: int) -> str:
        """A NUL-terminated string the module exports (read in chunks until the NUL)."""
        out = b""
        while True:
            chunk = self.read(ptr + len(out), 256)
            end = chunk.find(b"\0")
            if end >= 0:
                return (out + chunk[:end]).decode()
            out += chunk


class WasmtimeHost(Host):
    """The module in CPython through wasmtime (JIT-compiled with Cranelift)."""

    def __init__(self, code: bytes | None = None):
        try:
            import wasmtime
        except ImportError as e:
            raise ImportError(
                "the wasm backend needs wasmtime outside the browser: pip install 'ember[wasm]'"
            ) from e
        engine = wasmtime.Engine()
        self._store = wasmtime.Store(engine)
        module = wasmtime.Module(engine, code if code is not None else module_bytes())
        self._exports = wasmtime.Instance(self._store, module, []).exports(self._store)
        self._memory = self._exports["memory"]
        # wasmtime's finalizers fail noisily when they run during interpreter shutdown, after
        # its C bindings are gone: release the store, module and engine while they still exist
        atexit.register(_close_all, self._store, module, engine)

    def fn(self, name: str):
        return _fast_call(self._exports[name], self._store)

    def write(self, ptr: int, data) -> None:
        if len(data):
            self._memory.write(self._store, data, ptr)

    def read(self, ptr: int, nbytes: int) -> bytes:
        return bytes(self._memory.read(self._store, ptr, ptr + nbytes))

    def memory_size(self) -> int:
        return self._memory.data_len(self._store)


class BrowserHost(Host):
    """The module in a web page: an instance of the browser's ``WebAssembly``."""

    def __init__(self, instance):
        import js

        self._js = js
        self._exports = instance.exports
        self._memory = instance.exports.memory

    @classmethod
    async def create(cls, compiled=None) -> BrowserHost:
        """Instantiate ``compiled`` (a ``WebAssembly.Module``), or compile the package's
        ``ember.wasm`` first. Asynchronous: Chromium refuses synchronous compiles and
        instantiations of modules over 4 KB on the main thread."""
        import js
        from pyodide.ffi import to_js

        if compiled is None:
            compiled = await js.WebAssembly.compile(to_js(module_bytes()))
        return cls(await js.WebAssembly.instantiate(compiled, js.Object.new()))

    def fn(self, name: str):
        return getattr(self._exports, name)

    def _view(self, ptr: int, nbytes: int):
        # the memory's ArrayBuffer is replaced when it grows: take a fresh view each time
        return self._js.Uint8Array.new(self._memory.buffer, ptr, nbytes)

    def write(self, ptr: int, data) -> None:
        if len(data):
            self._view(ptr, len(data)).assign(data)

    def read(self, ptr: int, nbytes: int) -> bytes:
        return self._view(ptr, nbytes).to_bytes()

    def memory_size(self) -> int:
        return self._memory.buffer.byteLength


def _close_all(*objects) -> None:
    for obj in objects:
        obj.close()


_KINDS = {"i32": (0, "i32"), "i64": (1, "i64"), "f32": (2, "f32"), "f64": (3, "f64")}


def _fast_call(func, store):
    """``func(*args)`` through wasmtime's C API with the argument arrays built once:
    wasmtime-py's ``Func.__call__`` re-reads the function's type and converts every value
    through Python objects on each call (~100 µs for six arguments; this is ~5)."""
    from ctypes import POINTER, byref

    from wasmtime import _ffi as ffi

    ty = func.type(store)
    params = [_KINDS[str(t)] for t in ty.params]
    results = [_KINDS[str(t)] for t in ty.results]
    args = (ffi.wasmtime_val_t * max(len(params), 1))()
    outs = (ffi.wasmtime_val_t * max(len(results), 1))()
    for slot, (kind, _) in zip(args, params):
        slot.kind = kind
    fields = [field for _, field in params]
    out_field = results[0][1] if results else None
    n, n_out, raw = len(params), len(results), byref(func._func)
    call_c = ffi.wasmtime_func_call

    def call(*values):
        if len(values) != n:
            raise TypeError(f"{n} arguments expected, {len(values)} given")
        for slot, field, v in zip(args, fields, values):
            setattr(slot.of, field, v)
        trap = POINTER(ffi.wasm_trap_t)()
        error = call_c(store._context(), raw, args, n, outs, n_out, byref(trap))
        if error or trap:
            return func(store, *values)  # the slow path raises wasmtime's own error
        return getattr(outs[0].of, out_field) if out_field else None

    return call
