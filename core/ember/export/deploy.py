"""``ember micro deploy``: put the MicroPython runtime ``ember_micro`` and an exported model on a
board (through ``mpremote``) or into a folder (a board's mounted drive, a firmware image's
frozen files).

What a board gets, at the root of its file system::

    ember_micro/*.py        the runtime (from the installed package or the checkout)
    <model>.emb             the model file written by ``ember export``
    ember_kernels.mpy       only with ``arch``: the native kernels built for that architecture

With ``mpy``, the runtime goes as ``ember_micro/*.mpy``, cross-compiled with ``mpy-cross``
(:mod:`ember.export.mpy`): the board imports bytecode instead of compiling sources, which
needs less heap (``MemoryEstimate.heap_for(tier, mpy=...)``).

On the board: ``import ember_micro; ember_micro.load("model.emb").predict(image_bytes)``.

>>> import tempfile
>>> from ember import nn
>>> from ember.export import export
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = export(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), f"{tmp}/m.emb", (1, 2, 2))
...     sorted(p.name for p in deploy_to_folder(f"{tmp}/m.emb", f"{tmp}/board"))[:2]
['__init__.py', '_chain.py']
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import EmberError, RecordError
from ..resources import resource_dir
from . import format as fmt


def native_archs() -> list[str]:
    """The architectures whose native kernels this ember carries (``x64``, ``armv7emsp`` …).

    >>> isinstance(native_archs(), list)
    True
    """
    native = resource_dir("micro") / "build" / "native"
    return sorted(p.parent.name for p in native.glob("*/ember_kernels.mpy"))


def deploy_files(model: str | os.PathLike, arch: str | None = None) -> dict[str, Path]:
    """``{path on the board: local file}`` for ``model`` plus the runtime (and, with ``arch``,
    its native kernels). Raises ``FileNotFoundError`` for a missing model and
    :class:`~ember.errors.EmberError` for an architecture without kernels, naming those there
    are."""
    model = Path(model)
    if not model.is_file():
        raise FileNotFoundError(f"micro deploy: no model file {model}; write one with "
                                f"`ember export ... -o {model}`")
    _check_model_file(model)
    micro = resource_dir("micro")
    files = {f"ember_micro/{p.name}": p for p in sorted((micro / "ember_micro").glob("*.py"))}
    files[model.name] = model
    if arch is not None:
        kernels = micro / "build" / "native" / arch / "ember_kernels.mpy"
        if not kernels.is_file():
            raise EmberError(f"micro deploy: no native kernels for {arch!r}; this ember has "
                             f"them for: {', '.join(native_archs()) or 'none'} (build them "
                             f"with `make` in a checkout: embedded/setup.sh)")
        files["ember_kernels.mpy"] = kernels
    return files


def _check_model_file(model: Path) -> None:
    """RecordError unless ``model`` starts with a model file's header that agrees with its
    size (magic, version, payload length): a board must not get some other file as a model."""
    with open(model, "rb") as f:
        head = f.read(fmt.HEADER_SIZE)
        size = os.fstat(f.fileno()).st_size

    def fail(message: str) -> RecordError:
        return RecordError(f"micro deploy: {model} is not a model file written by `ember "
                           f"export`: {message}")

    if len(head) < fmt.HEADER_SIZE:
        raise fail(f"{len(head)} bytes is shorter than the {fmt.HEADER_SIZE}-byte header")
    fmt.check_envelope(struct.unpack(fmt.HEADER_FMT, head), size, fail)


def deploy_to_folder(model: str | os.PathLike, folder: str | os.PathLike,
                     arch: str | None = None, force: bool = False,
                     mpy: bool = False) -> list[Path]:
    """Copy the runtime and ``model`` into ``folder`` (created when missing); returns the
    files written. ``folder`` must be missing, empty or an earlier deploy's, unless ``force``
    (a board's drive with files of its own: see :mod:`ember.io.output_folder`). ``mpy``: the
    runtime as ``.mpy`` files, cross-compiled (:func:`ember.export.mpy.compile_runtime`)."""
    from ..io.output_folder import mark_output_folder, prepare_output_folder

    files = deploy_files(model, arch)
    folder = prepare_output_folder(folder, "micro deploy", force)
    mark_output_folder(folder, "micro deploy")
    written = []
    if mpy:  # the runtime as .mpy bytecode, cross-compiled into the folder
        from .mpy import compile_runtime

        runtime = {n: p for n, p in files.items() if n.startswith("ember_micro/")}
        written += compile_runtime(runtime, folder)
        files = {n: p for n, p in files.items() if n not in runtime}
    for name, src in files.items():
        dst = folder / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        written.append(dst)
    return written


def mpremote_command() -> list[str]:
    """How to run mpremote: the ``mpremote`` command on PATH, else this Python's
    ``-m mpremote`` (installed in the same environment, not activated). Raises
    :class:`~ember.errors.EmberError` naming ``pip install mpremote`` when neither exists.

    >>> try:
    ...     command = mpremote_command()
    ... except EmberError as e:
    ...     command = str(e)
    >>> "mpremote" in " ".join(command)
    True
    """
    exe = shutil.which("mpremote")
    if exe is not None:
        return [exe]
    if importlib.util.find_spec("mpremote") is not None:
        return [sys.executable, "-m", "mpremote"]
    raise EmberError("micro deploy: mpremote is not installed; it copies files to a board: "
                     "pip install mpremote (or use --folder DIR)")


def deploy_to_board(model: str | os.PathLike, port: str, arch: str | None = None,
                    log=print, mpy: bool = False) -> None:
    """Copy the runtime and ``model`` to the board on serial ``port`` (``/dev/ttyACM0``,
    ``COM3``; ``auto`` lets mpremote find it) with :func:`mpremote_command`, in one
    connection.

    Raises :class:`~ember.errors.EmberError` naming ``pip install mpremote`` when it is not
    installed, and ``subprocess.CalledProcessError`` when mpremote fails.
    """
    mpremote = mpremote_command()
    if mpy:  # the board's .mpy version (and architecture, for the native kernels) first
        from .mpy import check_board, decode_board_mpy, find_mpy_cross, mpy_cross_version

        query = "import sys; print(sys.implementation._mpy)"
        out = subprocess.run([*mpremote, "connect", port, "exec", query], capture_output=True,
                             text=True, check=True).stdout
        check_board(decode_board_mpy(int(out.split()[-1])),
                    mpy_cross_version(find_mpy_cross()), arch)
    with tempfile.TemporaryDirectory(prefix="ember-deploy-") as stage:
        written = deploy_to_folder(model, stage, arch, mpy=mpy)
        names = sorted({p.relative_to(stage).parts[0] for p in written})
        command = [*mpremote, "connect", port, "fs", "cp", "-r", *names, ":"]
        log("$ " + " ".join(command))
        subprocess.run(command, cwd=stage, check=True)
