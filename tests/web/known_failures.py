"""Known failures of the browser conformance run, per backend: case id → reason.

The native lists (tests/conformance/known_failures.py) apply too: the browser runs the same
backends (python; wgpu on ``navigator.gpu`` instead of wgpu-py; wasm in the page's WebAssembly
instead of wasmtime). List here only what differs
in the browser. Entries are conformance.expected.Fails: a listed case must fail with that
exception and message; one that passes or fails otherwise fails the run.
"""

from conformance.expected import Fails

BROWSER_ONLY: dict[str, dict[str, Fails]] = {
    "python": {},
    "wgpu": {},
    "wasm": {},
}
