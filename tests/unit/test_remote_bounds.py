"""``ember serve`` stays bounded against hostile and greedy clients (issue 33): before
authentication only a small hello within a deadline and a capped number of waiting connections;
each op's working memory (intermediates included) and work bounded from shapes before it runs;
one client's long batch does not hold up another client's small read; bad command-line values
are one-line errors. A real server on 127.0.0.1, real websockets clients."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("websockets")

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import ember
import ember.nn.functional as F
from ember.remote import LimitError, Remote, Server, ServerLimits, protocol

TOKEN = "bounds-test-token"


def closed_with(ws) -> tuple[int, str]:
    try:
        while True:
            ws.recv(10)
    except ConnectionClosed as e:
        return e.rcvd.code, e.rcvd.reason


@pytest.fixture(scope="module")
def server():
    s = Server("numpy", port=0, token=TOKEN, limits=ServerLimits(
        max_tensor_bytes=1 << 20, max_session_bytes=8 << 20, max_frame_bytes=2 << 20,
        auth_timeout=2.0, max_pending=4, max_op_bytes=16 << 20, max_op_work=1 << 24)).start()
    yield s
    s.stop()


def test_before_authentication_only_a_small_hello_is_read(server):
    # well under max_frame_bytes, far over the hello's bound: closed as too big (1009), not
    # buffered and then refused
    with connect(server.url, max_size=None) as ws:
        try:
            ws.send(b"H" + bytes(200_000))
        except ConnectionClosed:
            pass
        assert closed_with(ws)[0] == 1009
    # after authenticating, frames up to max_frame_bytes are read
    r = Remote(server.url, token=TOKEN)
    big = np.arange(200_000, dtype=np.float32)
    assert ember.tensor(big, backend=r).sum().item() == float(big.sum())
    r.close()


def test_connections_waiting_to_authenticate_are_capped():
    """Past max_pending=4 silent connections, each newcomer closes the longest-waiting one:
    the server holds at most 4, and a client that authenticates still gets in."""
    s = Server("numpy", port=0, token=TOKEN,
               limits=ServerLimits(max_pending=4, auth_timeout=60.0)).start()
    try:
        with contextlib.ExitStack() as stack:
            silent = [stack.enter_context(connect(s.url)) for _ in range(7)]  # no hello
            outcomes = []
            for ws in silent:
                try:
                    ws.recv(2)
                except TimeoutError:
                    outcomes.append("waiting")
                except ConnectionClosed as e:
                    outcomes.append((e.rcvd.code, e.rcvd.reason))
            evicted = (1013, "server busy: more than max_pending=4 connections were "
                             "authenticating")
            assert sorted(outcomes, key=str) == [evicted] * 3 + ["waiting"] * 4
            assert s.stats()["pending"] == 4
            r = Remote(s.url, token=TOKEN)  # while the flood holds every pending place
            assert (ember.ones(2, backend=r) * 2).tolist() == [2.0, 2.0]
            r.close()
    finally:
        s.stop()


def test_an_ops_intermediates_count_before_it_runs(server):
    # 256 KB in, a 1.3 KB result; its im2col columns (~18 MB here) pass max_op_bytes=16 MB
    r = Remote(server.url, token=TOKEN)
    x = ember.ones(1, 64, 32, 32, backend=r)
    w = ember.ones(1, 64, 15, 15, backend=r)
    with pytest.raises(LimitError, match=r"conv: .* bytes of intermediates; the server's "
                                         r"max_op_bytes is 16777216"):
        F.conv2d(x, w).tolist()
    small = F.conv2d(x[:, :4, :8, :8], w[:, :4, :3, :3])  # still served
    assert small.shape == (1, 1, 6, 6) and small.tolist()[0][0][0][0] == 36.0
    r.close()


def test_an_ops_work_is_bounded_before_it_runs(server):
    r = Remote(server.url, token=TOKEN)
    a = ember.ones(300, 300, backend=r)
    with pytest.raises(LimitError, match=r"matmul: about 27000000 multiply-adds; the server's "
                                         r"max_op_work is 16777216"):
        (a @ a).tolist()
    assert (a[:10] @ a[:, :10]).tolist()[0][0] == 300.0
    r.close()


def test_a_long_batch_does_not_hold_up_another_clients_read(server):
    """Client A pipelines a long batch of ops; client B, connecting after A's batch has
    started, gets its small read answered while A's batch is still running (before, the
    server ran a whole batch before the next one)."""
    a = Remote(server.url, token=TOKEN, batch_ops=100_000)  # one frame for the whole batch
    x, w = ember.ones(1, 64, 32, 32, backend=a), ember.ones(1, 64, 7, 7, backend=a)
    a.sync()
    sent, a_done = threading.Event(), threading.Event()
    order, a_results = [], []

    def client_a():
        try:
            # ~3 M multiply-adds and 13 MB of columns each, small results: a batch of seconds
            ys = [F.conv2d(x, w) for _ in range(1000)]
            sent.set()
            a_results.append(ys[-1].sum().item())  # the batch goes out with this read
            order.append("A")
        finally:
            sent.set()
            a_done.set()

    thread = threading.Thread(target=client_a)
    thread.start()
    sent.wait(60)
    b = Remote(server.url, token=TOKEN)
    assert (ember.ones(3, backend=b) + 1).tolist() == [2.0, 2.0, 2.0]
    order.append("B")
    a_done.wait(120)
    thread.join(120)
    b.close()
    a.close()
    assert a_results == [26 * 26 * 64 * 49.0]
    assert order == ["B", "A"]


@pytest.mark.parametrize("args, message", [
    (["--port", "99999"], "Server: port 99999 is not a port number: expected an integer in "
                          "0..65535"),
    (["--port", "-1"], "Server: port -1 is not a port number"),
    (["--host", "no-such-host.invalid", "--port", "0"],
     "Server: can't listen on no-such-host.invalid:0: gaierror"),
    (["--max-session-mb", "-1"], "--max-session-mb -1: expected a number >= 1"),
    (["--max-op-work", "0"], "--max-op-work 0: expected a number >= 1"),
    (["--op-threads", "0"], "--op-threads 0: expected a whole number >= 1"),
])
def test_serve_command_line_errors_are_one_line(args, message):
    proc = subprocess.run([sys.executable, "-m", "ember.cli", "serve", *args],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "EMBER_REMOTE_TOKEN": TOKEN})
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"ember: error: {message}"), proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_limits_must_be_positive():
    with pytest.raises(LimitError, match="max_session_bytes must be a number > 0, got -1"):
        ServerLimits(max_session_bytes=-1)
    # and the raw protocol refuses a hello over the bound however it is framed
    assert len(protocol.encode_hello(TOKEN)) < ServerLimits().max_hello_bytes
