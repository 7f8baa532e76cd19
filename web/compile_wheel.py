"""Ember's web wheel as the page installs it fastest: bytecode instead of sources.

Runs inside Pyodide, started under Node by ``web/compile_wheel.mjs`` (``build_dist.py`` calls
it): ``.pyc`` files belong to one interpreter version, and this is the page's own Python.
Each ``.py`` becomes a sourceless ``.pyc`` in its place, as Pyodide's own packages are built,
so the page's ``import ember`` skips compiling ~60 modules (~120 ms of its ~190 ms in
Chromium). Tracebacks keep file names and line numbers, without the source lines. Files whose
names start with an entry of ``drop`` are left out (``ember/backends/wasm/ember.wasm``: the
page compiles ``dist/ember.wasm`` while Pyodide loads, so the wheel's copy would only be
unpacked; ``ember/_data/``: the runtimes the ``ember`` command serves or deploys).
"""

from __future__ import annotations

import base64
import hashlib
import importlib._bootstrap_external as bootstrap
import io
import site
import zipfile


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def compile_wheel(wheel: bytes, drop: tuple[str, ...] = ()) -> bytes:
    """The wheel ``wheel`` with its modules as bytecode of this interpreter (RECORD rewritten)."""
    site_packages = site.getsitepackages()[0]  # where Pyodide unpacks it: the code's file names
    out = io.BytesIO()
    lines = []
    with zipfile.ZipFile(io.BytesIO(wheel)) as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        record = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        for info in src.infolist():
            name = info.filename
            if name == record or name.startswith(drop):
                continue
            data = src.read(name)
            if name.endswith(".py"):
                code = compile(data, f"{site_packages}/{name}", "exec", dont_inherit=True)
                # a sourceless .pyc's timestamp and size are never checked
                data = bytes(bootstrap._code_to_timestamp_pyc(code, 0, 0))
                name = name[:-3] + ".pyc"
            dst.writestr(name, data)
            lines.append(_record_line(name, data))
        lines.append(f"{record},,")
        dst.writestr(record, "\n".join(lines) + "\n")
    return out.getvalue()


def main(src: str, dst: str, drop) -> None:
    with open(src, "rb") as f:
        wheel = f.read()
    with open(dst, "wb") as f:
        f.write(compile_wheel(wheel, tuple(drop)))
