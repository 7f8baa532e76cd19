"""Remote's security and fault handling against a real server on 127.0.0.1 and real websockets
clients: authentication before any op, isolation of sessions, 1,000 malformed frames, 50
concurrent clients, a killed client (its memory is freed) and a killed or stuck server (a clear
client error, no hang)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("websockets")

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import ember
from ember.remote import AuthError, Remote, RemoteError, Server, ServerLimits, protocol

TOKEN = "security-test-token"
LIMITS = ServerLimits(max_tensor_bytes=1 << 20, max_session_bytes=8 << 20,
                      max_frame_bytes=2 << 20, auth_timeout=1.0)


@pytest.fixture(scope="module")
def server():
    s = Server("numpy", port=0, token=TOKEN, limits=LIMITS).start()
    yield s
    s.stop()


def wait_for(predicate, what: str, seconds: float = 30.0):
    """Poll until ``predicate()``; the bound only keeps a failure from hanging the suite."""
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def closed_with(ws) -> tuple[int, str]:
    """Read until the server closes ``ws``; its close code and reason."""
    try:
        while True:
            ws.recv(10)
    except ConnectionClosed as e:
        return e.rcvd.code, e.rcvd.reason


def a_batch(base: int = 1) -> bytes:
    """A valid batch: an upload, two ops and a read."""
    return protocol.encode_batch([
        ["put", base, "float32", [2, 2], 0, 16],
        ["op", "float_add", [base + 1], [{"t": base}, {"t": base}]],
        ["op", "float_sum", [base + 2], [{"t": base + 1}, [0, 1]]],
        ["read", 7, base + 2],
    ], [np.arange(4, dtype=np.float32).tobytes()])


def test_wrong_or_missing_token_is_refused_before_any_op(server):
    refused = server.refused
    hellos = [protocol.encode_hello("wrong-token"), protocol.encode_hello(""),
              a_batch(),  # ops without a hello
              b'H{"v": 1}', b"\x00garbage", "a text message"]
    for hello in hellos:
        with connect(server.url) as ws:
            ws.send(hello)
            try:
                ws.send(a_batch())  # ops right behind it: none may run
            except ConnectionClosed:
                pass  # the server was quicker
            assert closed_with(ws) == (1008, "authentication failed")
    with connect(server.url) as ws:  # no hello at all: closed after auth_timeout
        assert closed_with(ws) == (1008, "authentication timed out")
    with pytest.raises(AuthError, match="authentication failed .*check the token"):
        Remote(server.url, token="wrong-token")
    assert server.refused == refused + len(hellos) + 2
    assert server.stats()["sessions"] == 0  # no session was made: no op ran


def test_a_session_can_touch_only_its_own_tensors(server):
    owner = Remote(server.url, token=TOKEN)
    secret = ember.tensor([42.0], backend=owner)
    assert secret.tolist() == [42.0]
    with connect(server.url) as ws:
        ws.send(protocol.encode_hello(TOKEN))
        ws.recv(10)  # the welcome
        # ids are per session: the owner's id means nothing here
        ws.send(protocol.encode_batch([["read", 1, secret._prim.remote_id]], []))
        code, reason = closed_with(ws)
        assert code == 1008 and "unknown tensor id" in reason
    assert (secret * 2).tolist() == [84.0]
    owner.close()


def test_operands_that_break_the_contract_cannot_dodge_the_limits(server):
    """numpy would broadcast (4096, 1) + (1, 4096) into 64 MiB, far past what the op's rule
    (and the session's limit) allows: the server checks the contract's shapes first."""
    r = Remote(server.url, token=TOKEN)
    a = r.from_data(ember.tensor(np.ones((4096, 1), np.float32)).to_data())
    b = r.from_data(ember.tensor(np.ones((1, 4096), np.float32)).to_data())
    with pytest.raises(ember.ShapeError, match="float_add: operands of shapes"):
        r.to_data(r.float_add(a, b))
    x = r.from_data(ember.tensor(np.ones((1, 64, 1), np.float32)).to_data())
    y = r.from_data(ember.tensor(np.ones((64, 1, 64), np.float32)).to_data())
    with pytest.raises(ember.ShapeError, match="float_matmul: shapes"):  # batch dims differ
        r.to_data(r.float_matmul(x, y))
    i = r.from_data(ember.tensor(np.zeros((4096, 1), np.int64)).to_data())
    with pytest.raises(ember.ShapeError, match=r"gather: an index of shape \(4096, 1\)"):
        r.to_data(r.gather(b, 1, i))  # x (1, 4096): numpy would broadcast to (4096, 1)
    assert server.stats()["bytes"] < 1 << 20  # nothing near the 64 MiB
    r.close()


# ------------------------------------------------------------------ fuzzing
def mutate(rng: random.Random, frame: bytes) -> bytes | str:
    """One malformed or odd frame: byte-level damage, or a structurally wrong record."""
    choice = rng.randrange(8)
    data = bytearray(frame)
    if choice == 0:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if choice == 1:  # truncate
        return bytes(data[:rng.randrange(len(data))])
    if choice == 2:  # random bytes behind a batch tag
        return b"B" + rng.randbytes(rng.randrange(64))
    if choice == 3:  # a text frame
        return frame[:20].decode("latin-1")
    records, _ = protocol.decode_batch(frame)
    rec = rng.choice(records)
    odd = [None, -1, 0, 2**63, 1e308, float("nan"), "x" * 50, [], {}, {"t": 999999},
           {"d": "complex128"}, [[[[[[[[[[1]]]]]]]]]], True, [2**31] * 40]
    if choice == 4:  # a field replaced by an odd value
        rec[rng.randrange(len(rec))] = rng.choice(odd)
    elif choice == 5:  # an unknown op, or a data op
        if rec[0] == "op":
            rec[1] = rng.choice(["to_data", "from_data", "eval", "__class__", "float_nope"])
        else:
            rec[0] = rng.choice(["exec", "pickle", "", "OP"])
    elif choice == 6:  # huge sizes
        records.append(["op", "full", [rng.randint(50, 60)], [[1 << 40], 0.0, {"d": "float32"}]])
        records.append(["read", 9, records[-1][2][0]])
    else:  # the JSON length says more than there is
        body = json.dumps(records).encode()
        return b"B" + (len(body) + 1000).to_bytes(4, "little") + body
    return protocol.encode_batch(records, [np.arange(4, dtype=np.float32).tobytes()])


def test_1000_fuzzed_frames_leave_the_server_serving_others(server):
    rng = random.Random(0)
    good = Remote(server.url, token=TOKEN)
    x = ember.tensor(np.arange(6, dtype=np.float32), backend=good)
    errors: list[BaseException] = []
    stop = threading.Event()

    def others():  # a well-behaved client, busy the whole time
        try:
            n = 0
            while not stop.is_set():
                n += 1
                assert (x * n).tolist() == [float(i * n) for i in range(6)]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=others)
    thread.start()
    malformed = server.malformed
    sent, probe, closed = 0, 1 << 40, 0
    while sent < 1000:
        with connect(server.url) as ws:
            ws.send(protocol.encode_hello(TOKEN))
            ws.recv(10)
            try:
                while sent < 1000:
                    sent += 1
                    ws.send(mutate(rng, a_batch()))
                    probe += 1  # then a probe: its answer shows the connection still works
                    ws.send(protocol.encode_batch([["put", probe, "float32", [], 0, 4],
                                                   ["read", 0xFFFFFFFF, probe]],
                                                  [np.float32(1).tobytes()]))
                    while protocol.decode_reply(ws.recv(10))[0] != 0xFFFFFFFF:
                        pass  # answers to the fuzzed frame's own reads
            except ConnectionClosed as e:  # a malformed frame closes this connection only
                assert e.rcvd is not None and e.rcvd.code in (1008, 1009), e.rcvd
                closed += 1
    stop.set()
    thread.join(60)
    assert not errors, errors
    print(f"fuzz: {closed} of 1000 frames closed their connection")
    assert closed >= 300 and server.malformed - malformed <= closed
    fresh = Remote(server.url, token=TOKEN)
    assert (ember.tensor([1.0, 2.0], backend=fresh) @ ember.tensor([3.0, 4.0],
                                                                    backend=fresh)).item() == 11
    fresh.close()
    good.close()


# ------------------------------------------------------------------ load and faults
def test_50_concurrent_clients_get_their_own_results(server):
    results: dict[int, object] = {}

    def client(k: int):
        try:
            r = Remote(server.url, token=TOKEN)
            a = np.random.default_rng(k).standard_normal((16, 8)).astype(np.float32)
            x = ember.tensor(a, backend=r)
            for _ in range(5):
                x = (x * 0.5 + k).tanh()
            got = (x.T @ x).numpy()
            r.close()
            ref = a.astype(np.float64)
            for _ in range(5):
                ref = np.tanh(ref * 0.5 + k)
            results[k] = np.allclose(got, ref.T @ ref, rtol=1e-4, atol=1e-4)
        except BaseException as e:  # noqa: BLE001 - reported below
            results[k] = e

    threads = [threading.Thread(target=client, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results == {k: True for k in range(50)}
    wait_for(lambda: server.stats()["sessions"] == 0, "the 50 sessions to close")


CLIENT = """
import sys, numpy as np, ember
from ember.remote import Remote
r = Remote(sys.argv[1], token=sys.argv[2])
xs = [ember.tensor(np.ones(250_000, np.float32) * i, backend=r) for i in range(3)]
print(xs[1][:2].tolist(), flush=True)
while True:
    xs.append(xs[-1] + 1)   # mid-stream when it is killed
    r.sync()
"""


def test_a_killed_client_frees_its_memory(server):
    wait_for(lambda: server.stats()["sessions"] == 0, "earlier sessions to close")
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, server.url, TOKEN],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "[1.0, 1.0]"
        assert server.stats()["bytes"] >= 3 * 1_000_000
    finally:
        proc.kill()
        proc.wait(30)
    wait_for(lambda: server.stats() | {"refused": 0, "malformed": 0} == {
        "sessions": 0, "bytes": 0, "tensors": 0, "refused": 0, "malformed": 0, "pending": 0},
        "the killed client's session to be freed")


def serve_subprocess():
    """``ember serve`` in a process of its own (any free port); (process, url)."""
    env = {**os.environ, "EMBER_REMOTE_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "ember.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert line.startswith("ember serve: numpy on ws://127.0.0.1:"), line
    return proc, line.split(" on ")[1].strip()


def test_a_killed_server_gives_the_client_a_clear_error():
    proc, url = serve_subprocess()
    try:
        r = Remote(url, token=TOKEN, timeout=30)
        x = ember.tensor(np.ones((300, 300), np.float32), backend=r)
        assert (x @ x)[0, 0].item() == 300.0
        y = x
        for _ in range(40):
            y = (y @ x) * (1 / 300)
        outcome: list[BaseException] = []

        def read():
            try:
                y.numpy()
            except BaseException as e:  # noqa: BLE001 - checked below
                outcome.append(e)

        reader = threading.Thread(target=read)
        reader.start()  # the read waits for the server while it computes
        proc.kill()
        reader.join(60)
        assert not reader.is_alive()
        if outcome:  # (the server may have answered before it was killed)
            assert isinstance(outcome[0], RemoteError), outcome
            assert "connection was lost" in str(outcome[0]) or "closed" in str(outcome[0])
        with pytest.raises(RemoteError, match="connection was lost|closed the connection"):
            (x + 1).numpy()
    finally:
        proc.kill()
        proc.wait(30)


def _state(pid: int) -> str:
    """A process's scheduler state from /proc ("T": stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_a_stuck_server_times_out_with_a_clear_error():
    proc, url = serve_subprocess()
    try:
        r = Remote(url, token=TOKEN, timeout=1.0)
        x = ember.tensor([1.0, 2.0], backend=r)
        assert x.tolist() == [1.0, 2.0]
        proc.send_signal(signal.SIGSTOP)  # alive, connection open, never answering
        wait_for(lambda: _state(proc.pid) == "T", "the server process to stop")
        with pytest.raises(RemoteError, match="no answer within 1 s"):
            (x * 2).tolist()
    finally:
        proc.kill()
        proc.wait(30)


def test_connections_past_max_sessions_are_turned_away():
    s = Server("numpy", port=0, token=TOKEN, limits=ServerLimits(max_sessions=1)).start()
    try:
        first = Remote(s.url, token=TOKEN)
        with pytest.raises(RemoteError, match=r"code 1013: server busy: max_sessions=1"):
            Remote(s.url, token=TOKEN)
        assert ember.ones(2, backend=first).tolist() == [1.0, 1.0]
        first.close()
        wait_for(lambda: s.stats()["sessions"] == 0, "the first session to close")
        second = Remote(s.url, token=TOKEN)
        assert ember.ones(1, backend=second).tolist() == [1.0]
        second.close()
    finally:
        s.stop()
