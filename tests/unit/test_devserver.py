"""web/devserver.py: every request resolves inside its mount or gets 404, and slow, idle or
numerous clients can't hold the server. The real server runs on 127.0.0.1 (an ephemeral port);
requests go through raw sockets so that no client normalises the path first."""

import socket
import time
from pathlib import Path

import pytest
from ember.demos.serve import load_source

ROOT = Path(__file__).resolve().parents[2]
devserver = load_source("ember_devserver", ROOT / "web" / "devserver.py")

SECRET = b"TOP-SECRET-7f3a91"
# what the system files would show if they were served
LEAKS = (SECRET, b"root:x:0:0", b"PATH=", b"Directory listing", b"<a href=")


@pytest.fixture
def site(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    page = tmp_path / "page"
    page.mkdir()
    (page / "index.html").write_text("<!doctype html><title>mnist</title>")
    (page / "app.js").write_text("export const x = 1;")
    (page / "sub").mkdir()
    (page / "sub" / "index.html").write_text("sub page")
    (page / ".env").write_bytes(SECRET)
    (page / "leak.txt").symlink_to(outside / "secret.txt")
    (page / "leakdir").symlink_to(outside)
    (page / "alias.js").symlink_to(page / "app.js")  # a link that stays inside is fine
    run = tmp_path / "run"
    run.mkdir()
    (run / "model.json").write_text('{"hidden": 64}')
    (run / "model.wasm").write_bytes(b"\0asm\1\0\0\0")
    return {"root": tmp_path / "dist", "mounts": {"/mnist/model/": run, "/mnist/": page},
            "page": page, "run": run}


def start(site, **kw):
    return devserver.Server(site["root"], site["mounts"], port=0, host="127.0.0.1", **kw)


@pytest.fixture
def server(site):
    srv = start(site)
    yield srv
    srv.close()


def connect(server) -> socket.socket:
    sock = socket.create_connection(server.httpd.server_address[:2], timeout=30)
    return sock


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def request(server, path: str, head: bytes = b"") -> tuple[int, dict, bytes]:
    """GET ``path`` verbatim: (status, headers, body)."""
    with connect(server) as sock:
        sock.sendall(b"GET " + path.encode("latin-1") + b" HTTP/1.0\r\nHost: x\r\n" + head
                     + b"\r\n")
        raw = read_all(sock)
    head_part, _, body = raw.partition(b"\r\n\r\n")
    lines = head_part.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


TRAVERSALS = [
    "/mnist//etc/passwd",
    "/mnist/model/../../../../etc/passwd",
    "/mnist/model/" + "../" * 40 + "etc/passwd",  # deeper than any temporary folder
    "/mnist/%2e%2e/%2e%2e/etc/passwd",
    "/mnist/%2E%2E/%2e%2E/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/mnist/%2fetc%2fpasswd",
    "/mnist//proc/self/environ",
    "/mnist//root/",
    "/mnist//",
    "/mnist/model//",
    "/mnist/model/",  # a folder without index.html: no listing
    "/../../../../etc/passwd",
    "//etc/passwd",
    "/mnist/..%5c..%5c..%5cetc%5cpasswd",
    "/mnist/leak.txt",
    "/mnist/leakdir/secret.txt",
    "/mnist/leakdir/",
    "/mnist/.env",
    "/mnist/%2eenv",
    "/mnist/index.html%00.png",
    "/mnist/%00",
    "/mnist/%ff%fe",
    "/mnist/./index.html",
    "etc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_paths_outside_the_mount_are_404(server, path):
    status, _, body = request(server, path)
    assert status == 404, (path, status, body[:200])
    for leak in LEAKS:
        assert leak not in body, (path, leak)


def test_files_inside_the_mounts_are_served(server, site):
    status, headers, body = request(server, "/mnist/")
    assert (status, body) == (200, (site["page"] / "index.html").read_bytes())
    assert headers["content-type"].startswith("text/html")
    status, headers, body = request(server, "/mnist/app.js?v=3")
    assert (status, body, headers["content-type"]) == (200, b"export const x = 1;",
                                                       "text/javascript")
    assert int(headers["content-length"]) == len(body)
    status, headers, body = request(server, "/mnist/model/model.json")
    assert (status, body, headers["content-type"]) == (200, b'{"hidden": 64}',
                                                       "application/json")
    status, headers, body = request(server, "/mnist/model/model.wasm")
    assert (status, body, headers["content-type"]) == (200, b"\0asm\1\0\0\0", "application/wasm")
    assert request(server, "/mnist/alias.js")[2] == b"export const x = 1;"
    assert request(server, "/mnist/%61pp.js")[2] == b"export const x = 1;"
    assert request(server, "/mnist/sub/")[2] == b"sub page"


def test_a_folder_without_its_slash_redirects(server):
    status, headers, _ = request(server, "/mnist/sub")
    assert (status, headers["location"]) == (301, "/mnist/sub/")
    status, headers, _ = request(server, "/mnist")
    assert (status, headers["location"]) == (301, "/mnist/")


def test_single_file_mounts(site):
    srv = devserver.Server(site["root"], {"/blank.html": site["page"] / "index.html"})
    try:
        assert request(srv, "/blank.html")[0] == 200
        assert request(srv, "/blank.html/")[0] == 404
        assert request(srv, "/blank.html/../etc/passwd")[0] == 404
    finally:
        srv.close()


def test_an_idle_client_is_dropped_and_others_are_served(site):
    srv = start(site, timeout=0.5)
    try:
        with connect(srv) as idle:
            idle.sendall(b"GET /mnist/ind")  # half a request line, then nothing
            assert b" 200 " not in read_all(idle)  # returns once the server closes it
        assert request(srv, "/mnist/")[0] == 200
    finally:
        srv.close()


def test_a_trickling_client_is_dropped(site):
    """One byte at a time, each well inside the timeout: the head's total deadline ends it."""
    srv = start(site, timeout=0.5)
    try:
        with connect(srv) as slow:
            slow.settimeout(0.05)
            closed = False
            for byte in (b"GET /mnist/index.html HTTP/1.0\r\nX-Slow: " + b"a" * 10_000)[:400]:
                try:
                    slow.sendall(bytes([byte]))
                    closed = slow.recv(1024) == b""
                except TimeoutError:
                    continue
                except OSError:  # reset by the server
                    closed = True
                if closed:
                    break
            assert closed, "the server kept a trickling connection open"
        assert request(srv, "/mnist/")[0] == 200
    finally:
        srv.close()


def test_the_connection_limit_holds(site):
    srv = start(site, max_connections=2, queue_wait=0.2, timeout=60)
    try:
        holders = [connect(srv) for _ in range(2)]
        holders[0].sendall(b"GET /mni")  # both hold a slot: idle mid-request
        holders[1].sendall(b"G")
        assert request(srv, "/mnist/")[0] == 503
        for sock in holders:
            sock.close()
        # the freed slots come back as the two handler threads see the close
        for _ in range(100):
            status = request(srv, "/mnist/")[0]
            if status == 200:
                break
            time.sleep(0.05)
        assert status == 200
    finally:
        srv.close()


def test_request_head_size_is_bounded(site):
    srv = start(site, max_header_bytes=1024)
    try:
        assert request(srv, "/mnist/", b"X-Pad: " + b"a" * 4000 + b"\r\n")[0] == 431
        assert request(srv, "/mnist/" + "a" * 4000)[0] == 414
        assert request(srv, "/mnist/")[0] == 200
    finally:
        srv.close()
