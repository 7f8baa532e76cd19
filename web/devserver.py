"""A static server for Ember's web pages on 127.0.0.1 (WebGPU needs a secure context).

Serves a root folder (normally web/dist) plus extra folders mounted under URL prefixes.
Used by the browser tests and the demos:

    python web/devserver.py --port 8000 --mount /mnist/=demos/mnist/web
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
from pathlib import Path
from typing import ClassVar

WEB = Path(__file__).resolve().parent


class _Handler(http.server.SimpleHTTPRequestHandler):
    mounts: ClassVar[dict[str, Path]] = {}

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        for prefix in sorted(self.mounts, key=len, reverse=True):
            folder = self.mounts[prefix]
            if clean.startswith(prefix):
                rel = clean[len(prefix):]
                return str(folder / rel) if rel else str(folder)
        return super().translate_path(path)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, *args) -> None:  # quiet
        pass


_Handler.extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                           ".mjs": "text/javascript", ".js": "text/javascript",
                           ".wasm": "application/wasm", ".json": "application/json"}


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # a page closed mid-download (tests, reloads) is not a server error
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Server:
    """Static files on http://127.0.0.1:PORT (a secure context, as WebGPU requires)."""

    def __init__(self, root: Path, mounts: dict[str, Path] | None = None, port: int = 0,
                 host: str = "127.0.0.1"):
        handler = type("Handler", (_Handler,), {"mounts": dict(mounts or {})})
        self.httpd = _HTTPServer(
            (host, port), functools.partial(handler, directory=str(root))
        )
        # 0.0.0.0 listens everywhere; the browser still needs a secure-context name
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
        self.url = f"http://{shown}:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=WEB / "dist")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--mount", action="append", default=[], metavar="/PREFIX/=FOLDER")
    args = p.parse_args()
    mounts = {}
    for m in args.mount:
        prefix, _, folder = m.partition("=")
        mounts[prefix] = Path(folder).resolve()
    server = Server(args.root, mounts, args.port)
    print(f"serving {args.root} on {server.url}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
