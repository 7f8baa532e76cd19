"""web/compile_wheel.py (run in Pyodide under Node by build_dist.py): a wheel's modules become
sourceless .pyc of the running interpreter, data files stay, dropped files go, RECORD matches
the new contents. Run here in CPython, whose bytecode the test then imports."""

from __future__ import annotations

import base64
import hashlib
import importlib
import io
import sys
import zipfile

from ember.demos.serve import load_source

from .harness import ROOT

compile_wheel = load_source("ember_compile_wheel", ROOT / "web" / "compile_wheel.py").compile_wheel

FILES = {
    "tinypkg/__init__.py": b"from .core import answer\n",
    "tinypkg/core.py": b"def answer():\n    return 6 * 7\n",
    "tinypkg/shader.wgsl": b"// kept as is\n",
    "tinypkg/kernels.wasm": b"\0asm dropped",
}


def _wheel() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in FILES.items():
            z.writestr(name, data)
        z.writestr("tinypkg-1.0.dist-info/RECORD", "stale,,\n")
    return out.getvalue()


def test_modules_become_bytecode_and_record_matches(tmp_path, monkeypatch):
    built = compile_wheel(_wheel(), drop=("tinypkg/kernels.wasm",))
    with zipfile.ZipFile(io.BytesIO(built)) as z:
        names = set(z.namelist())
        assert names == {"tinypkg/__init__.pyc", "tinypkg/core.pyc", "tinypkg/shader.wgsl",
                         "tinypkg-1.0.dist-info/RECORD"}
        assert z.read("tinypkg/shader.wgsl") == FILES["tinypkg/shader.wgsl"]
        assert z.read("tinypkg/core.pyc")[:4] == importlib.util.MAGIC_NUMBER
        record = z.read("tinypkg-1.0.dist-info/RECORD").decode().splitlines()
        for line in record[:-1]:
            name, digest, size = line.split(",")
            data = z.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={want}", len(data))
        assert record[-1] == "tinypkg-1.0.dist-info/RECORD,,"
        z.extractall(tmp_path)
    # the sourceless modules import and run (their code objects name the install path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("tinypkg")
        assert module.answer() == 42
        assert module.__file__.endswith("tinypkg/__init__.pyc")
        assert module.answer.__code__.co_filename.endswith("site-packages/tinypkg/core.py")
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "tinypkg"]:
            del sys.modules[name]
