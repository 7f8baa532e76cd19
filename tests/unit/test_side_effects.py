"""Importing and using ember changes nothing process-wide by default (issue 23): glibc's malloc
keeps its settings unless asked (``EMBER_MALLOPT=1`` or ``tune_malloc()``), and probing the GPU
adapters leaves stderr quiet. Each case runs in a fresh interpreter, as a user's program would.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Where a fresh 24 MB array comes from: glibc's mmap'ed bytes (mallinfo2's hblkhd) while it
# lives. glibc's default threshold (128 KiB, raised at most to 32 MB by frees) maps it; after
# tune_malloc (32 MB) it comes from the heap.
MAPPED = """
import ctypes, os, sys
import numpy as np
import ember
from ember.backends import get_backend
get_backend("numpy")
if sys.argv[1] == "call":
    from ember.backends.numpy import tune_malloc
    assert tune_malloc()
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
before = libc.mallinfo2().hblkhd
x = np.ones(3 << 20)  # 24 MB
print(libc.mallinfo2().hblkhd - before >= x.nbytes)
"""


def _glibc_mallinfo2() -> bool:
    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


def _run(code: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("EMBER_MALLOPT", "MALLOC_", "GLIBC_TUNABLES"))}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**clean, **(env or {})}, cwd=ROOT, timeout=300, check=False)


@pytest.mark.skipif(not _glibc_mallinfo2(), reason="glibc's mallinfo2 is needed to observe it")
@pytest.mark.parametrize(("how", "env", "mapped"), [
    ("default", None, "True"),                      # untouched: glibc maps the big array
    ("env", {"EMBER_MALLOPT": "1"}, "False"),       # opted in: the heap keeps it
    ("call", None, "False"),                        # tune_malloc() called by the program
])
def test_malloc_tuning_is_opt_in(how, env, mapped):
    proc = _run(MAPPED, how, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == mapped


needs_wgpu = pytest.mark.skipif(importlib.util.find_spec("wgpu") is None,
                                reason="wgpu-py is not installed")


@needs_wgpu
def test_ember_backends_probes_adapters_quietly():
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, "-m", "ember.cli", "backends"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr
    assert proc.stderr.strip() == ""
    assert "GPU adapters" in proc.stdout


@needs_wgpu
def test_quiet_probe_drops_only_the_known_line():
    code = ("import os\nfrom ember.backends.wgpu.device import _quiet_probe, _PROBE_NOISE\n"
            "with _quiet_probe():\n"
            "    os.write(2, b'error: ' + _PROBE_NOISE + b' in the environment.\\n')\n"
            "    os.write(2, b'a real warning\\n')\n"
            "os.write(2, b'after\\n')\n")
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "a real warning\nafter\n"
