"""A static server for Ember's web pages on 127.0.0.1 (WebGPU needs a secure context).

Serves a root folder (normally web/dist) plus extra folders (or single files) mounted under
URL prefixes. Used by the browser tests and the demos:

    python web/devserver.py --port 8000 --mount /mnist/=demos/mnist/web

Every request resolves inside its mount or gets 404: the decoded path may not hold ``..`` or
dot segments, empty segments, backslashes, NUL or control characters, and its realpath
(symlinks resolved) must stay under the mount's realpath. A folder serves its index.html,
never a listing. Connections are bounded in number, in time (a request head must arrive
within ``timeout`` seconds) and in header size, so an idle or trickling client can't hold the
server. It listens on 127.0.0.1 unless told otherwise, and warns when told otherwise.
"""

from __future__ import annotations

import argparse
import http.server
import io
import mimetypes
import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote

WEB = Path(__file__).resolve().parent
LOOPBACK = ("127.0.0.1", "localhost", "::1")
TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
         ".json": "application/json", ".html": "text/html", ".css": "text/css",
         ".py": "text/x-python", ".whl": "application/zip"}


def resolve(mounts: dict[str, Path], url_path: str) -> Path | str | None:
    """The file a raw request path names, inside its mount; ``None`` for 404, or a string: the
    path to redirect to (a folder asked for without its trailing slash).

    ``mounts`` maps URL prefixes to realpaths: a prefix ending in ``/`` mounts a folder, any
    other names one file. The longest matching prefix wins.
    """
    raw = url_path.split("?", 1)[0].split("#", 1)[0]
    try:
        path = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        return None
    if not path.startswith("/") or any(ord(c) < 32 or c in "\\\x7f" for c in path):
        return None  # NUL and other control characters, Windows separators
    for prefix in sorted(mounts, key=len, reverse=True):
        base = mounts[prefix]
        if not prefix.endswith("/"):
            if path == prefix:
                return base if base.is_file() else None
            continue
        if path.startswith(prefix):
            return _inside(base, path, path[len(prefix):])
        if path + "/" == prefix and base.is_dir():
            return quote(prefix)
    return None


def _inside(base: Path, path: str, tail: str) -> Path | str | None:
    segments = tail.split("/")
    folder = tail == "" or tail.endswith("/")
    if folder:
        segments.pop()
    # "", "." and ".." (and dotfiles) never name anything we mean to serve
    if any(not s or s.startswith(".") for s in segments):
        return None
    real = Path(os.path.realpath(base.joinpath(*segments)))
    if not real.is_relative_to(base):
        return None  # a symlink that leaves the mount
    if real.is_dir():
        if not folder:
            return quote(path) + "/"
        index = Path(os.path.realpath(real / "index.html"))
        return index if index.is_relative_to(base) and index.is_file() else None
    return real if real.is_file() and not folder else None


class _HeadReader(io.RawIOBase):
    """The socket as read by the request parser: each request head must arrive within
    ``timeout`` seconds in total (a per-recv timeout alone lets a client trickle one byte at a
    time forever) and within ``max_bytes``; past the byte budget it reads as end of file."""

    def __init__(self, sock: socket.socket, timeout: float, max_bytes: int):
        self.sock, self.timeout, self.max_bytes = sock, timeout, max_bytes
        self.restart()

    def restart(self) -> None:
        self.deadline = time.monotonic() + self.timeout
        self.left = self.max_bytes

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("request head not received in time")
        if self.left <= 0:
            return 0
        self.sock.settimeout(remaining)
        n = self.sock.recv_into(memoryview(buffer)[: self.left])
        self.left -= n
        return n


class _Handler(http.server.BaseHTTPRequestHandler):
    mounts: dict[str, Path]
    timeout: float
    max_header_bytes: int
    server_version = "ember-devserver"

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket closes only once every file made from it is closed
        self.head = _HeadReader(self.connection, self.timeout, self.max_header_bytes)
        self.rfile = io.BufferedReader(self.head, buffer_size=4096)

    def handle_one_request(self) -> None:
        self.head.restart()
        super().handle_one_request()

    def parse_request(self) -> bool:
        if self.head.left <= 0 and not self.raw_requestline.endswith(b"\n"):
            # cut at the byte budget (as the stdlib does for its own 64 KiB limit)
            self.requestline = self.request_version = self.command = ""
            self.send_error(414, "request line too long")
            return False
        if not super().parse_request():
            return False
        if self.head.left <= 0:  # the head was cut at the byte budget
            self.send_error(431, "request head too large")
            return False
        # the head is read: writing a large file to a slow reader gets the per-send timeout
        self.connection.settimeout(self.timeout)
        return True

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        target = resolve(self.mounts, self.path)
        if isinstance(target, str):
            self.send_response(301)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            f = open(target, "rb") if target is not None else None  # noqa: SIM115
        except OSError:
            f = None
        if f is None:
            self.send_error(404, "not found")
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", _content_type(target))
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if body:
                shutil.copyfileobj(f, self.wfile)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, *args) -> None:  # quiet
        pass


def _content_type(path: Path) -> str:
    suffix = path.suffix.lower()
    return TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


class _HTTPServer(http.server.ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` at once: a connection past that
    waits ``queue_wait`` seconds for a slot, then gets 503."""

    daemon_threads = True

    def __init__(self, address, handler, max_connections: int, queue_wait: float):
        self.slots = threading.BoundedSemaphore(max_connections)
        self.queue_wait = queue_wait
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(timeout=self.queue_wait):
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address) -> None:
        # a page closed mid-download (tests, reloads) or a client too slow is not a server error
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Server:
    """Static files on http://127.0.0.1:PORT (a secure context, as WebGPU requires).

    ``mounts`` maps URL prefixes to folders (``"/mnist/"``) or files (``"/blank.html"``);
    everything else comes from ``root``. ``port=0`` picks a free port. Binding a ``host``
    other than loopback exposes every served file to the network: it prints a warning.

    >>> server = Server(Path("web/dist"), {"/mnist/": Path("demos/mnist/web")})  # doctest: +SKIP
    >>> server.url, server.close()                                                # doctest: +SKIP
    ('http://127.0.0.1:41234/', None)
    """

    def __init__(self, root: Path, mounts: dict[str, Path] | None = None, port: int = 0,
                 host: str = "127.0.0.1", *, timeout: float = 10.0, max_connections: int = 64,
                 queue_wait: float = 2.0, max_header_bytes: int = 16384):
        table = {"/": Path(os.path.realpath(root))}
        for prefix, folder in (mounts or {}).items():
            if not prefix.startswith("/"):
                raise ValueError(f"devserver: mount prefix {prefix!r} must start with '/'")
            table[prefix] = Path(os.path.realpath(folder))
        handler = type("Handler", (_Handler,), {
            "mounts": table, "timeout": timeout, "max_header_bytes": max_header_bytes})
        self.httpd = _HTTPServer((host, port), handler, max_connections, queue_wait)
        if host not in LOOPBACK and not host.startswith("127."):
            print(f"devserver: WARNING: listening on {host or 'all interfaces'}, not 127.0.0.1: "
                  f"anyone who can reach this machine can read the served folders "
                  f"({', '.join(str(p) for p in table.values())})", file=sys.stderr, flush=True)
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
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; others expose the files)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--mount", action="append", default=[], metavar="/PREFIX/=FOLDER")
    args = p.parse_args()
    mounts = {}
    for m in args.mount:
        prefix, _, folder = m.partition("=")
        mounts[prefix] = Path(folder)
    server = Server(args.root, mounts, args.port, args.host)
    print(f"serving {args.root} on {server.url}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
