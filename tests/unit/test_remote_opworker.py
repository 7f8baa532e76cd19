"""``ember serve`` isolates what one client can make it do (issue 33): on a CPU backend ops
larger than the light limit run in a worker process at the lowest OS priority, whose memory is
bounded per op (past its budget it is killed and the op fails with a LimitError); a peer that
sends an oversized frame is dropped without the server reading the rest. A real server on
127.0.0.1, real websockets clients, a real worker process; expected values from numpy
float64."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("websockets")

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import ember
from ember.remote import LimitError, Remote, Server, ServerLimits, protocol
from ember.remote.opworker import HEAVY_NICE, OpWorker
from ember.remote.scheduler import LIGHT_WORK

TOKEN = "opworker-test-token"


@pytest.fixture()
def server():
    s = Server("numpy", port=0, token=TOKEN).start()
    yield s
    s.stop()


def test_large_ops_run_in_a_worker_process_at_the_lowest_priority(server):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    b = rng.standard_normal((400, 200)).astype(np.float32)
    assert 300 * 400 * 200 > LIGHT_WORK
    r = Remote(server.url, token=TOKEN)
    ta, tb = ember.tensor(a, backend=r), ember.tensor(b, backend=r)
    assert (ta + 1).sum().item() == pytest.approx(float((a.astype(np.float64) + 1).sum()),
                                                  rel=1e-5)
    assert server.op_process is None, "a small op started the worker"
    got = (ta @ tb).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    pid = server.op_process
    assert pid is not None and pid != os.getpid()
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, own + HEAVY_NICE)
    r.close()


def outer_product_batch(n: int) -> list:
    """An op whose result (n*n float32) is far larger than its operands."""
    return protocol.batch_parts(
        [["put", 1, "float32", [n, 1], 0, 4 * n], ["put", 2, "float32", [1, n], 4 * n, 4 * n],
         ["op", "float_matmul", [3], [{"t": 1}, {"t": 2}]], ["read", 0, 3]],
        [np.arange(n, dtype="<f4").tobytes(), np.ones(n, dtype="<f4").tobytes()])


def test_a_worker_past_its_ops_memory_budget_is_killed_and_the_op_fails():
    worker = OpWorker("numpy", ServerLimits())
    batch = outer_product_batch(4096)  # a 64 MB result, held three times on the way
    try:
        _, header, payload = protocol.decode_reply(worker.run(batch, 256 << 20, "matmul")[0])
        assert header == {"shape": [4096, 4096], "dtype": "float32"}
        assert np.frombuffer(payload, "<f4")[4097 * 7] == 7.0
        first = worker.pid
        with pytest.raises(LimitError, match="memory budget"):
            worker.run(batch, 0, "matmul")
        assert worker.pid is None, "the worker went past its budget and still runs"
        assert not os.path.exists(f"/proc/{first}") or _zombie_or_gone(first)
        replies = worker.run(outer_product_batch(8), 1 << 20, "matmul")  # a fresh worker
        assert protocol.decode_reply(replies[0])[1]["shape"] == [8, 8]
        assert worker.pid not in (None, first)
    finally:
        worker.stop()


def _zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def test_a_peer_sending_an_oversized_frame_is_dropped_unread(server):
    """Before, the server read (and discarded) all 64 MB of a hello past max_hello_bytes; now
    it stops reading at the frame's header and drops the connection, so the send fails."""
    with connect(server.url, max_size=None, close_timeout=1) as ws:
        with pytest.raises((ConnectionClosed, OSError)):
            ws.send(b"H" + bytes(64 << 20))
    r = Remote(server.url, token=TOKEN)  # the server still serves
    assert ember.tensor([1.0, 2.0], backend=r).sum().item() == 3.0
    r.close()


def test_a_worker_that_dies_fails_the_op_with_a_limit_error():
    worker = OpWorker("no-such-backend", ServerLimits())  # the worker exits as it starts
    with pytest.raises(LimitError, match=r"died \(exit status 1\)"):
        worker.run(outer_product_batch(8), 1 << 20, "matmul")
    assert worker.pid is None
