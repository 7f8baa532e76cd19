"""Screenshots of the built docs site for review: the home page and one guide page.

    python tests/docs/screenshot.py site docs/screenshots      # after `make docs`

Serves the built site on 127.0.0.1 (as a reader's browser would get it, search index and
all) and photographs it with the Chromium the browser tests use (tests/web/harness.py).
Writes home.png and guide.png into the output folder.
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.web.harness import launch_chromium

PAGES = {"home.png": "", "guide.png": "guides/gpu/"}
VIEWPORT = {"width": 1280, "height": 900}


def serve(folder: Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the request log would bury the script's own output
        pass


def main(site: str, out: str) -> None:
    from playwright.sync_api import sync_playwright

    site_dir, out_dir = Path(site), Path(out)
    if not (site_dir / "index.html").is_file():
        raise SystemExit(f"{site_dir}/index.html is missing: build the site first (make docs)")
    out_dir.mkdir(parents=True, exist_ok=True)
    server = serve(site_dir)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw, webgpu=False)
            page = browser.new_page(viewport=VIEWPORT)
            for name, path in PAGES.items():
                page.goto(base + path, wait_until="networkidle")
                # a styled page has Material's header; raw HTML would have none
                page.wait_for_selector(".md-header", state="visible")
                page.screenshot(path=str(out_dir / name))
                print(f"{out_dir / name}: {base + path}")
            browser.close()
    finally:
        server.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:3])
