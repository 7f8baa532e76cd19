"""The wasm backend: C kernels compiled to WebAssembly, for the browser's CPU path."""

from .backend import WasmBackend

__all__ = ["WasmBackend"]
