"""The MicroPython unix port the ``mcu`` column runs on, built by embedded/build_micropython.sh
(idempotent: it skips what is built and refreshes stale .mpy files)."""

from __future__ import annotations

import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def micropython() -> str:
    from ember.export import embedded_dir

    script = embedded_dir() / "build_micropython.sh"
    exe = embedded_dir() / "build" / "micropython"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900,
                          check=False)
    if proc.returncode != 0 or not exe.is_file():
        pytest.fail(f"{script} failed:\n{proc.stderr[-3000:]}")
    os.environ.setdefault("EMBER_MICROPYTHON", str(exe))
    return str(exe)
