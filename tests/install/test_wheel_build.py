"""The wheel never lacks its compiled kernels silently (issue 32): built as ``python -m build``
builds it, it carries ember.wasm and the native MicroPython kernels of every arch; a tree
without them is refused, naming what is missing and the commands that build it."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from wheel_env import ROOT, build_wheel

from ember.demos.serve import load_source

hook = load_source("ember_hatch_build", ROOT / "hatch_build.py")


def test_the_wheel_carries_every_kernel(ember_wheel):
    wheel = zipfile.ZipFile(ember_wheel)
    assert wheel.read("ember/backends/wasm/ember.wasm")[:4] == b"\0asm"
    assert hook.NATIVE_ARCHS == ("x64", "armv6m", "armv7m", "armv7emsp")  # embedded/setup.sh's
    for arch in hook.NATIVE_ARCHS:
        shipped = wheel.read(f"ember/_data/micro/build/native/{arch}/ember_kernels.mpy")
        assert shipped == (ROOT / hook.native_kernel(arch)).read_bytes(), arch
        assert shipped[:1] == b"M"  # a .mpy file's magic


def _tree(dest: Path, kernels: list[str]) -> Path:
    """A copy of the checkout's tracked files that a build reads, plus the ``kernels`` named
    (paths relative to the checkout): a checkout on which ``make`` built only those."""
    files = subprocess.run(["git", "ls-files", "-z", "--", "pyproject.toml", "README.md",
                            "hatch_build.py", "core", "shaders", "wasm", "embedded", "web",
                            "demos"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in [*files.decode().split("\0"), *kernels]:
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.mark.parametrize("via", ["sdist", "tree"])
def test_a_tree_without_kernels_is_refused(tmp_path, via):
    tree = _tree(tmp_path / "tree", [])
    proc = build_wheel(tree, tmp_path / "out", via)
    assert proc.returncode != 0
    assert "must carry its compiled kernels" in proc.stderr
    assert "`make wasm`" in proc.stderr and "`bash embedded/setup.sh`" in proc.stderr
    for path in (hook.WASM, *(hook.native_kernel(a) for a in hook.NATIVE_ARCHS)):
        assert path in proc.stderr
    assert not list((tmp_path / "out").glob("*.whl"))
    assert not list((tmp_path / "out").glob("*.tar.gz"))


def test_one_missing_arch_is_named_with_its_build_step(tmp_path):
    present = [hook.WASM, *(hook.native_kernel(a) for a in hook.NATIVE_ARCHS if a != "armv7m")]
    proc = build_wheel(_tree(tmp_path / "tree", present), tmp_path / "out")
    assert proc.returncode != 0
    message = proc.stderr[proc.stderr.index("ember's wheel must carry"):]
    assert "missing: embedded/build/native/armv7m/ember_kernels.mpy." in message
    assert "`bash embedded/setup.sh`" in message and "make wasm" not in message


def test_building_without_kernels_on_purpose_says_so(tmp_path):
    proc = build_wheel(_tree(tmp_path / "tree", []), tmp_path / "out", "tree",
                       env={**os.environ, hook.SKIP: "1"})
    assert proc.returncode == 0, proc.stderr
    assert f"{hook.SKIP}: building ember's wheel without {hook.WASM}" in proc.stderr
    names = zipfile.ZipFile(proc.stdout.split()[-1]).namelist()
    assert "ember/__init__.py" in names
    assert not [n for n in names if n.endswith((".wasm", ".mpy"))]
