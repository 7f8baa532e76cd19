"""Build Ember's offline web distribution into ``web/dist/`` (or ``--out DIR``).

Layout of the result (serve it on http://127.0.0.1 or localhost: WebGPU needs a secure
context)::

    dist/pyodide/            Pyodide core from the npm package + pyodide-lock.json, rewritten
                             to list only what is shipped: micropip and ember, each with the
                             sha256 of the file next to it
    dist/pyodide/ember-*.whl ember's pure-Python wheel built from this checkout (shaders inside)
    dist/ember.js            the bootstrap (ES module): ``loadEmber()``
    dist/ember-worker.js     the same runtime in a module Web Worker
    dist/index.html          a small page: backend shown, Python in a text box, Run
    dist/ember-dist.json     manifest: wheel name, versions

Needs ``npm install`` in web/ (web/setup.sh does it) and network access to PyPI for the one
micropip wheel (cached in web/.cache/).

    python web/build_dist.py            # -> web/dist
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WEB = Path(__file__).resolve().parent
ROOT = WEB.parent
PYODIDE_NPM = WEB / "node_modules" / "pyodide"
CACHE = WEB / ".cache" / "wheels"
CORE_FILES = (
    "pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
    "package.json",
)
JS_FILES = ("ember.js", "ember-worker.js", "index.html")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_ember_wheel(dest: Path) -> Path:
    """``pip wheel --no-deps .`` of the checkout (hatchling force-includes shaders/)."""
    try:  # build offline with the local hatchling when there is one
        import hatchling  # noqa: F401

        isolation = ["--no-build-isolation"]
    except ImportError:
        isolation = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", tmp,
             str(ROOT)],
            check=True,
        )
        (wheel,) = Path(tmp).glob("ember-*.whl")
        target = dest / wheel.name
        shutil.copy2(wheel, target)
    return target


def fetch_wheel(name: str, version: str, python: str) -> Path:
    """A pure-Python wheel from PyPI through pip (cached in web/.cache/wheels)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob(f"{name}-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--only-binary=:all:",
             "--python-version", python, "--platform", "any", "-d", str(CACHE),
             f"{name}=={version}"],
            check=True,
        )
        found = sorted(CACHE.glob(f"{name}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"build_dist: pip download gave no wheel for {name}=={version}")
    return found[0]


def lock_entry(base: dict, wheel: Path, **extra) -> dict:
    entry = dict(base)
    entry.update(extra)
    entry["file_name"] = wheel.name
    entry["sha256"] = sha256(wheel)
    return entry


def build(out: Path) -> dict:
    """Build into a sibling folder, then swap it in, so that a page or a test served from
    ``out`` meanwhile (or a second build) never sees a half-written distribution."""
    if not (PYODIDE_NPM / "pyodide-lock.json").is_file():
        raise SystemExit("build_dist: web/node_modules/pyodide is missing; run web/setup.sh")
    # web/.build-PID/{new,old}/dist: a folder named dist is git-ignored wherever it is
    scratch = out.parent / f".build-{os.getpid()}"
    fresh, old = scratch / "new" / out.name, scratch / "old" / out.name
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        manifest = _build_into(fresh)
        old.parent.mkdir(parents=True)
        if out.exists():
            out.rename(old)
        fresh.rename(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return manifest


def _build_into(out: Path) -> dict:
    pyo = out / "pyodide"
    pyo.mkdir(parents=True)
    for name in CORE_FILES:
        shutil.copy2(PYODIDE_NPM / name, pyo / name)

    lock = json.loads((PYODIDE_NPM / "pyodide-lock.json").read_text())
    upstream = lock["packages"]
    micropip = upstream["micropip"]
    py = ".".join(str(lock["info"].get("python", "3.12")).split(".")[:2])  # Pyodide's Python
    mp_wheel = fetch_wheel("micropip", micropip["version"], py)
    shutil.copy2(mp_wheel, pyo / mp_wheel.name)

    ember_wheel = build_ember_wheel(pyo)
    version = ember_wheel.name.split("-")[1]
    ember_entry = {
        "name": "ember", "version": version, "file_name": "", "install_dir": "site",
        "sha256": "", "package_type": "package", "imports": ["ember"], "depends": [],
        "unvendored_tests": False, "tool": {},
    }
    # Only shipped packages stay in the lock: a listed-but-missing file would fail at load time.
    lock["packages"] = {
        "micropip": lock_entry(micropip, pyo / mp_wheel.name),
        "ember": lock_entry(ember_entry, ember_wheel),
    }
    (pyo / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))

    for name in JS_FILES:
        shutil.copy2(WEB / name, out / name)
    pkg = json.loads((PYODIDE_NPM / "package.json").read_text())
    manifest = {
        "ember_wheel": ember_wheel.name,
        "ember_version": version,
        "pyodide_version": pkg["version"],
        "python": lock["info"].get("python"),
        "packages": sorted(lock["packages"]),
    }
    (out / "ember-dist.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def is_stale(out: Path = WEB / "dist") -> bool:
    """True when ``out`` lacks the wheel or the bootstrap, or a source file under core/,
    shaders/ or web/ (.py, .wgsl, .js, .html) is newer than the wheel it holds."""
    wheels = sorted((out / "pyodide").glob("ember-*.whl"))
    if not wheels or not (out / "ember.js").is_file():
        return True
    built = wheels[0].stat().st_mtime
    for folder in (ROOT / "core", ROOT / "shaders", WEB):
        for path in folder.rglob("*"):
            if path.suffix in (".py", ".wgsl", ".js", ".html") and "node_modules" not in \
                    path.parts and out not in path.parents and path.stat().st_mtime > built:
                return True
    return False


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=WEB / "dist", help="output folder (web/dist)")
    args = p.parse_args(argv)
    manifest = build(args.out)
    print(f"built {args.out}: ember {manifest['ember_version']} on Pyodide "
          f"{manifest['pyodide_version']} (Python {manifest['python']})")


if __name__ == "__main__":
    main()
