"""Build Ember's offline web distribution into ``web/dist/`` (or ``--out DIR``).

Layout of the result (serve it on http://127.0.0.1 or localhost: WebGPU needs a secure
context; ``.wasm`` as ``application/wasm`` for streaming compilation)::

    dist/pyodide/            Pyodide core from the npm package + pyodide-lock.json, rewritten
                             to list only what is shipped: ember, with the sha256 of its wheel
                             (``pyodide.loadPackage("ember")`` installs it: no micropip)
    dist/pyodide/ember-*.whl ember's wheel built from this checkout (shaders inside) or, run
                             from an installed ember (ember/_data/web/), packed from it; its
                             modules compiled to bytecode by Pyodide's Python under Node
                             (compile_wheel.py: a faster ``import ember`` in the page)
    dist/ember.wasm          the wasm backend's kernels (``python wasm/build.py``), compiled by
                             the page with ``WebAssembly.compileStreaming`` while Pyodide loads
    dist/ember.js            the bootstrap (ES module): ``loadEmber()``
    dist/ember-worker.js     the same runtime in a module Web Worker
    dist/index.html          a small page: backend shown, Python in a text box, Run
    dist/ember-dist.json     manifest: wheel name, versions

Needs Pyodide from npm (``npm install`` in web/: web/setup.sh does it; or any
``node_modules/pyodide`` named by ``$EMBER_PYODIDE_DIR`` or in the current folder), Node, and
the built kernels (``make wasm``); everything else comes from this checkout or the installed
package, offline.

    python web/build_dist.py            # -> web/dist
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WEB = Path(__file__).resolve().parent
ROOT = WEB.parent
# web/ of a checkout, or ember/_data/web/ inside an installed ember (the wheel carries this file)
CHECKOUT = (ROOT / "pyproject.toml").is_file()
PACKAGE = ROOT / "core" / "ember" if CHECKOUT else WEB.parents[1]
KERNELS = PACKAGE / "backends" / "wasm" / "ember.wasm"
# what the page's wheel leaves out: the page compiles dist/ember.wasm itself, and ember/_data/
# holds the runtimes the ember command serves or deploys
WHEEL_DROP = ("ember/backends/wasm/ember.wasm", "ember/_data/")
CORE_FILES = (
    "pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
    "package.json",
)
JS_FILES = ("ember.js", "ember-worker.js", "index.html")
#: written last into every distribution: a folder holding it is one build() may replace
MANIFEST = "ember-dist.json"


def pyodide_npm() -> Path | None:
    """The npm package ``pyodide``: ``$EMBER_PYODIDE_DIR``, web/node_modules/pyodide (checkout),
    or ./node_modules/pyodide; None when none holds ``pyodide-lock.json``."""
    env = os.environ.get("EMBER_PYODIDE_DIR")
    candidates = [Path(env)] if env else [WEB / "node_modules" / "pyodide",
                                          Path.cwd() / "node_modules" / "pyodide"]
    return next((c for c in candidates if (c / "pyodide-lock.json").is_file()), None)


def pyodide_version() -> str:
    """The Pyodide version web/package.json pins (what ``npm install`` fetches)."""
    return json.loads((WEB / "package.json").read_text())["dependencies"]["pyodide"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_ember_wheel(dest: Path) -> Path:
    """``pip wheel --no-deps .`` of the checkout (hatchling force-includes shaders/) without the
    compiled kernels, which the page's wheel drops (``WHEEL_DROP``), so that a checkout without
    the MicroPython build makes the page; from an installed ember, :func:`pack_installed`."""
    if not CHECKOUT:
        return pack_installed(dest)
    try:  # build offline with the local hatchling when there is one
        import hatchling  # noqa: F401

        isolation = ["--no-build-isolation"]
    except ImportError:
        isolation = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", tmp,
             str(ROOT)],
            check=True, env={**os.environ, "EMBER_WHEEL_WITHOUT_KERNELS": "1"},  # hatch_build.py
        )
        (wheel,) = Path(tmp).glob("ember-*.whl")
        target = dest / wheel.name
        shutil.copy2(wheel, target)
    return target


def pack_installed(dest: Path) -> Path:
    """The installed ember (this file's package) as a pure-Python wheel in ``dest``: its files
    and its METADATA, WHEEL and entry points; the RECORD is written by :func:`compile_wheel`."""
    from importlib.metadata import distribution

    meta = distribution("ember")
    info = f"ember-{meta.version}.dist-info"
    target = dest / f"ember-{meta.version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path in sorted(PACKAGE.rglob("*")):
            name = path.relative_to(PACKAGE.parent).as_posix()
            if path.is_file() and "__pycache__" not in path.parts and \
                    not name.startswith(WHEEL_DROP):
                wheel.write(path, name)
        for file in ("METADATA", "WHEEL", "entry_points.txt"):
            text = meta.read_text(file)
            if text is not None:
                wheel.writestr(f"{info}/{file}", text)
        wheel.writestr(f"{info}/RECORD", "")
    return target


def compile_wheel(wheel: Path, pyodide: Path) -> None:
    """Replace ``wheel`` by its bytecode build for the page's Python (compile_wheel.py, run in
    Pyodide under Node), without the files in ``WHEEL_DROP``."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("build_dist: node is missing (it comes with npm: web/setup.sh)")
    compiled = wheel.with_suffix(".pyc.whl")
    subprocess.run([node, str(WEB / "compile_wheel.mjs"), str(wheel), str(compiled), *WHEEL_DROP],
                   check=True, env=dict(os.environ, EMBER_PYODIDE_DIR=str(pyodide)))
    compiled.replace(wheel)


def lock_entry(base: dict, wheel: Path, **extra) -> dict:
    entry = dict(base)
    entry.update(extra)
    entry["file_name"] = wheel.name
    entry["sha256"] = sha256(wheel)
    return entry


def _output_folder_helper():
    """ember's one rule for output folders (ember.io.output_folder), from the checkout this
    script is in when the Python running it has no ember installed."""
    try:
        from ember.io.output_folder import prepare_output_folder
    except ImportError:
        sys.path.insert(0, str(PACKAGE.parent))
        from ember.io.output_folder import prepare_output_folder
    return prepare_output_folder


def build(out: Path, force: bool = False) -> dict:
    """Build into a sibling folder, then swap it in, so that a page or a test served from
    ``out`` meanwhile (or a second build) never sees a half-written distribution. ``out``
    must be missing, empty or a distribution (it holds ``MANIFEST``) unless ``force``: its
    contents are replaced."""
    _output_folder_helper()(out, "build_dist --out", force, marker=MANIFEST)
    pyodide = pyodide_npm()
    if pyodide is None:
        raise SystemExit(f"build_dist: the npm package pyodide is missing: run web/setup.sh, or "
                         f"`npm install pyodide@{pyodide_version()}` here, or set "
                         f"EMBER_PYODIDE_DIR to a node_modules/pyodide folder")
    # web/.build-PID/{new,old}/dist: a folder named dist is git-ignored wherever it is
    scratch = out.parent / f".build-{os.getpid()}"
    fresh, old = scratch / "new" / out.name, scratch / "old" / out.name
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        manifest = _build_into(fresh, pyodide)
        old.parent.mkdir(parents=True)
        if out.exists():
            out.rename(old)
        fresh.rename(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return manifest


def _build_into(out: Path, pyodide: Path) -> dict:
    pyo = out / "pyodide"
    pyo.mkdir(parents=True)
    for name in CORE_FILES:
        shutil.copy2(pyodide / name, pyo / name)

    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    py = ".".join(str(lock["info"]["python"]).split(".")[:2])  # Pyodide's Python: "3.14"
    if not KERNELS.is_file():
        raise SystemExit(f"build_dist: {KERNELS} is missing; build it with `python wasm/build.py`")
    shutil.copy2(KERNELS, out / "ember.wasm")
    ember_wheel = build_ember_wheel(pyo)
    compile_wheel(ember_wheel, pyodide)
    version = ember_wheel.name.split("-")[1]
    ember_entry = {
        "name": "ember", "version": version, "file_name": "", "install_dir": "site",
        "sha256": "", "package_type": "package", "imports": ["ember"], "depends": [],
        "unvendored_tests": False, "tool": {},
    }
    # Only shipped packages stay in the lock: a listed-but-missing file would fail at load time.
    lock["packages"] = {"ember": lock_entry(ember_entry, ember_wheel)}
    (pyo / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))

    for name in JS_FILES:
        shutil.copy2(WEB / name, out / name)
    pkg = json.loads((pyodide / "package.json").read_text())
    manifest = {
        "ember_wheel": ember_wheel.name,
        # fetch()'s subresource integrity, and where Pyodide's Python finds packages
        "ember_wheel_integrity": "sha256-" + base64.b64encode(
            hashlib.sha256(ember_wheel.read_bytes()).digest()).decode(),
        "site_packages": f"/lib/python{py}/site-packages",
        "kernels": "ember.wasm",
        "ember_version": version,
        "pyodide_version": pkg["version"],
        "python": lock["info"].get("python"),
        "packages": sorted(lock["packages"]),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def is_stale(out: Path = WEB / "dist") -> bool:
    """True when ``out`` lacks the wheel, the kernels or the bootstrap, or a source file under
    core/, shaders/ or web/ (installed: the ember package) (.py, .wgsl, .js, .html, .wasm) is
    newer than the wheel it holds."""
    wheels = sorted((out / "pyodide").glob("ember-*.whl"))
    if not wheels or not (out / "ember.js").is_file() or not (out / "ember.wasm").is_file():
        return True
    built = wheels[0].stat().st_mtime
    for folder in (ROOT / "core", ROOT / "shaders", WEB) if CHECKOUT else (PACKAGE,):
        for path in folder.rglob("*"):
            if path.suffix in (".py", ".wgsl", ".js", ".html", ".wasm") and "node_modules" not in \
                    path.parts and out not in path.parents and path.stat().st_mtime > built:
                return True
    return False


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=WEB / "dist", help="output folder (web/dist)")
    p.add_argument("--force", action="store_true",
                   help="replace --out even if it is not a distribution (its files are deleted)")
    args = p.parse_args(argv)
    manifest = build(args.out, args.force)
    print(f"built {args.out}: ember {manifest['ember_version']} on Pyodide "
          f"{manifest['pyodide_version']} (Python {manifest['python']})")


if __name__ == "__main__":
    main()
