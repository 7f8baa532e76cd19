"""Known failures of the browser conformance run, per backend: case id → reason.

The native lists (tests/conformance/known_failures.py) apply too: the browser runs the same
backends (python; wgpu on ``navigator.gpu`` instead of wgpu-py; wasm in the page's WebAssembly
instead of wasmtime). List here only what differs
in the browser. A listed case that passes fails the run (xfail strict), so remove fixed ones.
"""

BROWSER_ONLY: dict[str, dict[str, str]] = {
    "python": {},
    "wgpu": {},
    "wasm": {},
}
