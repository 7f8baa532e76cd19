"""Headless Chromium + a local static server for the browser tests (no pytest here).

One server (127.0.0.1, a free port) serves ``web/dist`` at ``/`` and extra folders under
named prefixes (``/conformance/`` …). One Chromium (Debian's, driven by Playwright for
Python; never ``playwright install``) runs with WebGPU on SwiftShader.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ember.demos.serve import load_source

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "web" / "dist"
CHROMIUM = os.environ.get("EMBER_CHROMIUM", "/usr/bin/chromium")

BASE_FLAGS = [
    "--no-sandbox", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]
WEBGPU_FLAGS = [
    "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--disable-vulkan-surface",
]


class Unavailable(Exception):
    """Chromium, Playwright or the web distribution is missing (the tests skip, saying so)."""


Server = load_source("ember_devserver", ROOT / "web" / "devserver.py").Server


def ensure_dist(rebuild: bool | None = None) -> Path:
    """``web/dist`` built from this checkout (rebuilt when ``EMBER_WEB_REBUILD=1`` or missing,
    or when a source under core/, shaders/ or web/ is newer than the wheel)."""
    build_dist = load_source("ember_build_dist", ROOT / "web" / "build_dist.py")
    if rebuild is None:
        rebuild = os.environ.get("EMBER_WEB_REBUILD") == "1" or build_dist.is_stale(DIST)
    if rebuild:
        if not (ROOT / "web" / "node_modules" / "pyodide").is_dir():
            raise Unavailable("web/node_modules/pyodide is missing: run web/setup.sh")
        subprocess.run([sys.executable, str(ROOT / "web" / "build_dist.py")], check=True,
                       stdout=subprocess.DEVNULL)
    return DIST


def launch_chromium(playwright, webgpu: bool = True):
    if not Path(CHROMIUM).exists() and not shutil.which(CHROMIUM):
        raise Unavailable(f"{CHROMIUM} is missing: apt-get install -y chromium (web/setup.sh)")
    flags = BASE_FLAGS + (WEBGPU_FLAGS if webgpu else ["--disable-webgpu"])
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)


def blank_page(browser, server: Server):
    """A page on the server's origin (secure context) with the console captured."""
    page = browser.new_page()
    page.console_lines = []
    page.on("console", lambda m: page.console_lines.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: page.console_lines.append(f"pageerror: {e}"))
    page.goto(server.url + "blank.html")
    return page


def load_ember(page, backend: str = "auto", worker: bool = False, timeout_ms: int = 120_000):
    """Start ember in ``page`` (stored as ``window.ember``); returns its info dict."""
    page.set_default_timeout(timeout_ms)
    return page.evaluate(
        """async ([backend, worker]) => {
            const { loadEmber } = await import("./ember.js");
            window.ember = await loadEmber({ backend, worker });
            return window.ember.info;
        }""",
        [backend, worker],
    )


def run_python(page, code: str, globals_: dict | None = None):
    """Run Python in the page's ember runtime (``runPythonAsync``); returns a JS→Python value."""
    return page.evaluate(
        "async ([code, g]) => await window.ember.run(code, g)", [code, globals_ or {}]
    )
