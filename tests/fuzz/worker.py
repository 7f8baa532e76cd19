"""A fuzz worker process: ``python -m tests.fuzz.worker FORMAT``.

Reads one input path per line on stdin, runs the target's reader on it and answers one JSON line
per input on its original stdout (anything the code under test prints goes to stderr):
``{"status": "ok" | "typed" | "untyped" | "memory" | "injection", "error", "message",
"where"}``. Timeouts and crashes are the parent's to see (:mod:`.harness`); the parent also
sets the address-space limit before this process starts.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback

from .targets import WORKER_TARGETS, InjectionError

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _resolve(spec: str) -> type:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _frame(frame) -> str:
    path = os.path.relpath(frame.filename, _REPO) if frame.filename.startswith(_REPO) else \
        os.path.basename(frame.filename)
    return f"{path}:{frame.lineno} in {frame.name}"


def where(exc: BaseException) -> str:
    """The innermost frame in Ember's code (where a reader let the error through), and the
    innermost frame overall when that one is elsewhere (json, pickle, numpy...)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    ours = [f for f in frames if "/core/ember/" in f.filename or "/embedded/" in f.filename]
    if ours and ours[-1] is not frames[-1]:
        return f"{_frame(ours[-1])} -> {_frame(frames[-1])}"
    return _frame(frames[-1])


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a hostile value's __str__ may fail too
        text = "<unprintable>"
    return text if len(text) <= 400 else text[:400] + "..."


def run_one(load, path: str, workdir: str, expected: tuple, sentinel: str) -> dict:
    """Classify what the reader does with one input."""
    try:
        load(path, workdir)
        result = {"status": "ok"}
    except expected as e:
        result = {"status": "typed", "error": type(e).__name__, "message": _message(e)}
    except InjectionError as e:
        result = {"status": "injection", "error": "InjectionError", "message": _message(e)}
    except MemoryError as e:
        result = {"status": "memory", "error": "MemoryError", "message": _message(e),
                  "where": where(e)}
    except (Exception, SystemExit) as e:  # noqa: BLE001 - every other exception is the finding
        result = {"status": "untyped", "error": f"{type(e).__module__}.{type(e).__qualname__}",
                  "message": _message(e), "where": where(e)}
    if os.path.exists(sentinel):
        shutil.rmtree(sentinel, ignore_errors=True)
        result = {"status": "injection", "error": "sentinel",
                  "message": "the payload in a name ran while the input was processed"}
    return result


#: ember.limits inside a worker: what fits its 1 GiB address space (the limits' docstring: lower
#: them to sandbox untrusted input). A reader that honours its limits then never runs out of
#: memory here, so a MemoryError means a reader allocated past what its limits allow.
SANDBOX_LIMITS = {"max_tensor_bytes": 128 << 20, "max_expansion_bytes": 128 << 20,
                  "max_header_bytes": 64 << 20, "max_zip_member_bytes": 128 << 20,
                  "max_folded_elements": 1 << 24, "max_image_pixels": 4_000_000,
                  "max_activation_elements": 1 << 22, "max_expanded_nodes": 20_000}


def _sandbox() -> None:
    import dataclasses

    from ember import limits

    known = {f.name for f in dataclasses.fields(limits.current())}
    limits.set_limits(**{k: v for k, v in SANDBOX_LIMITS.items() if k in known})


def _preload(name: str) -> None:
    """Import what the reader needs before the first input (imports don't count against the
    per-input timeout)."""
    import ember  # noqa: F401

    modules = {"onnx_load": ["onnx", "ember.onnx", "ember.onnx.codegen", "numpy"],
               "onnx_convert": ["onnx", "ember.onnx", "ember.onnx.codegen", "numpy"],
               "mcu": ["ember.export", "numpy"], "image": ["PIL.Image", "ember.dataset"],
               "record": ["ember.io", "ember.optim", "numpy"]}.get(name, ["ember.io"])
    for module in modules:
        importlib.import_module(module)


def main(argv: list[str]) -> int:
    target = WORKER_TARGETS[argv[0]]
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the code under test may print: keep the result channel clean
    expected = tuple(_resolve(s) for s in target.expected)
    workdir = tempfile.mkdtemp(prefix="ember-fuzz-worker-", dir=os.environ.get("FUZZ_TMP"))
    sentinel = os.path.join(workdir, "sentinel")
    os.environ["FUZZ_SENTINEL"] = sentinel
    _preload(target.name)
    _sandbox()
    faulthandler.register(signal.SIGUSR1)  # the parent asks where a stuck input is
    results.write("ready\n")
    try:
        for line in sys.stdin:
            result = run_one(target.load, line.rstrip("\n"), workdir, expected, sentinel)
            shutil.rmtree(os.path.join(workdir, "convert"), ignore_errors=True)
            results.write(json.dumps(result) + "\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
