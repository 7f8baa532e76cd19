"""Session fixtures of the browser suite: one static server, one headless Chromium (WebGPU on
SwiftShader) and one page with Pyodide + ember loaded, shared by every browser test.

Skips (with the set-up command) when Playwright, Debian's chromium or web/node_modules are
missing: run web/setup.sh.
"""

from __future__ import annotations

import json
import shutil
import sys
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
    _random_mnist_model(out / "mnist_model")
    (out / "files.json").write_text(json.dumps(
        ["conformance/__init__.py", "conformance/spec.py", "conformance/runner.py",
         "page_runner.py"]))
    return out


def _random_mnist_model(folder: Path) -> None:
    """The demo's CNN with fixed random weights, exported like ``ember demo mnist`` does."""
    import ember
    from ember.demos.mnist_model import MEAN, STD, mnist_cnn
    from ember.store import save_file

    folder.mkdir()
    ember.seed(1234)
    with ember.use_backend("numpy"):
        model = mnist_cnn()
    save_file(model.state_dict(), folder / "model.safetensors",
              metadata={"format": "ember.mnist_cnn/1"})
    (folder / "model.json").write_text(json.dumps(
        {"architecture": "mnist_cnn", "channels": [16, 32], "hidden": 64, "mean": MEAN,
         "std": STD, "dataset": "random-weights", "classes": list(range(10))}))


@pytest.fixture(scope="session")
def server(staging):
    try:
        ensure_dist()
    except Unavailable as e:
        pytest.skip(str(e))
    srv = Server(DIST, {"/blank.html": HERE / "blank.html", "/tests/": staging,
                        "/mnist/model/": staging / "mnist_model",
                        "/mnist/": ROOT / "demos" / "mnist" / "web"})
    yield srv
    srv.close()


@pytest.fixture(scope="session")
def browser(playwright_instance):
    try:
        b = launch_chromium(playwright_instance, webgpu=True)
    except Unavailable as e:
        pytest.skip(str(e))
    yield b
    b.close()


@pytest.fixture(scope="session")
def ember_page(browser, server):
    """The one page with ember loaded (WebGPU chosen when SwiftShader offers it)."""
    page = blank_page(browser, server)
    info = load_ember(page, "auto")
    page.ember_info = info
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


@pytest.fixture(scope="session")
def conformance_results(ember_page):
    """Runs every case once per backend on first use (one Python call each); id → result."""
    run_python(ember_page, _LOAD_TESTS)
    cache: dict[str, dict] = {}

    def results(backend: str) -> dict:
        if backend not in cache:
            if backend == "wgpu" and ember_page.ember_info["backend"] != "wgpu":
                pytest.skip(f"no WebGPU in this Chromium: {ember_page.ember_info['reason']}")
            text = run_python(ember_page, f"page_runner.run_all({backend!r})")
            cache[backend] = json.loads(text)
        return cache[backend]

    return results
