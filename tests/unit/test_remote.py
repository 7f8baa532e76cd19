"""Remote: a real websockets server on 127.0.0.1 (a thread of this process) serving numpy;
results are checked against numpy float64. Pipelining, lazy errors with their types,
limits, freeing, async reads and TLS."""

from __future__ import annotations

import asyncio
import gc
import ssl
import subprocess
import time

import numpy as np
import pytest

pytest.importorskip("websockets")

import ember
from ember import Autodiff
from ember.errors import ShapeError
from ember.remote import LimitError, Remote, Server, ServerLimits

TOKEN = "unit-test-token"
LIMITS = ServerLimits(max_tensor_bytes=1 << 20, max_session_bytes=4 << 20,
                      max_frame_bytes=4 << 20)


@pytest.fixture(scope="module")
def server():
    s = Server("numpy", port=0, token=TOKEN, limits=LIMITS).start()
    yield s
    s.stop()


@pytest.fixture
def remote(server):
    r = Remote(server.url, token=TOKEN, timeout=30)
    yield r
    r.close()


def wait_for(predicate, what: str, seconds: float = 30.0):
    """Poll until ``predicate()``; fail naming ``what`` after ``seconds`` (not a timing test:
    the bound only keeps a broken server from hanging the suite)."""
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_small_network_matches_numpy(remote):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    x, k = ember.tensor(a, backend=remote), ember.tensor(w, backend=remote)
    y = (x @ k).relu().softmax(dim=1).sum(dim=0)
    ref = np.maximum(a.astype(np.float64) @ w, 0)
    ref = (np.exp(ref) / np.exp(ref).sum(1, keepdims=True)).sum(0)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5)
    idx = ember.tensor([2, 0], dtype=ember.int64, backend=remote)
    assert x[idx].numpy().tolist() == a[[2, 0]].tolist()
    assert (ember.arange(5, dtype=ember.int64, backend=remote) * 2**40).tolist() == [
        i * 2**40 for i in range(5)]


def test_ops_are_pipelined_and_shapes_are_local(remote):
    x = ember.ones((4, 4), backend=remote)
    remote.sync()
    before = remote.batches
    for _ in range(200):
        x = (x * 1.0001 + 0.5).tanh()
    assert x.shape == (4, 4) and x.dtype == ember.float32  # no round trip
    assert remote.batches == before  # nothing sent yet: 600 ops queued
    value = x.numpy()
    assert remote.batches == before + 1  # one batch, then the read's answer
    ref = np.ones((4, 4))
    for _ in range(200):
        ref = np.tanh(ref * 1.0001 + 0.5)
    np.testing.assert_allclose(value, ref, rtol=1e-5)


def test_an_op_error_is_raised_at_the_read_with_its_type(remote):
    a = ember.ones((2, 3), backend=remote)._prim
    bad = remote.float_matmul(a, a)  # (2,3)@(2,3): the server refuses
    after = remote.float_exp(bad)  # computed from a failed result: fails the same way
    good = remote.float_exp(a)
    with pytest.raises(ShapeError, match=r"^float_matmul: shapes \(2, 3\) and \(2, 3\); the "):
        remote.to_data(after)
    with pytest.raises(ValueError, match=r"^reshape: cannot reshape"):  # numpy's own error
        remote.to_data(remote.reshape(a, (4, 2)))
    np.testing.assert_allclose(remote.to_data(good).to_numpy(), np.full((2, 3), np.e),
                               rtol=1e-6)
    with pytest.raises(ShapeError, match="matmul"):  # the front end still checks first
        ember.ones((2, 3), backend=remote) @ ember.ones((2, 3), backend=remote)


def test_limits_give_clear_errors_and_the_link_stays_up(remote, server):
    with pytest.raises(LimitError, match="takes at most 1048576 per tensor"):
        ember.tensor(np.zeros(300_000, np.float32), backend=remote)  # refused before sending
    big = remote.full((600_000,), 1.0, ember.float32)  # an op's result: refused by the server
    with pytest.raises(LimitError, match="max_tensor_bytes is 1048576"):
        remote.to_data(big)
    keep = [ember.ones(200_000, backend=remote) * 2 for _ in range(5)]  # 800 kB each
    with pytest.raises(LimitError, match=r"session's memory limit \(max_session_bytes=4194304"):
        keep[-1].numpy()
    del keep
    gc.collect()
    assert (ember.ones(3, backend=remote) + 1).tolist() == [2.0, 2.0, 2.0]


def test_dropped_tensors_are_freed_on_the_server(remote, server):
    probe = ember.tensor([1.0], backend=remote)

    def live():
        probe.tolist()  # a round trip: everything sent before it has been run
        return sum(len(s.tensors) for s in server.sessions)

    xs = [ember.tensor(np.full(1000, i, np.float32), backend=remote) for i in range(20)]
    assert xs[3].numpy()[0] == 3.0
    held = live()
    del xs
    gc.collect()
    remote.sync()  # the frees go out with the next batch
    assert live() == held - 20


def test_async_reads(remote):
    async def main():
        t = ember.tensor([1.0, 2.0], backend=remote) * 4
        return (await remote.to_data_async(t._prim)).tolist()

    assert asyncio.run(main()) == [4.0, 8.0]


def test_autodiff_over_remote_matches_numpy(remote):
    a = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    grads = []
    for b in (Autodiff(remote), ember.get_backend("autodiff-numpy")):
        x = ember.tensor(a, backend=b).require_grad()
        loss = (x.exp() * x).sum()
        grads.append(loss.backward().get(x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
    np.testing.assert_allclose(grads[1], np.exp(a) * (a + 1), rtol=1e-5)


def test_tls(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    s = Server("numpy", port=0, token=TOKEN, ssl=server_ctx).start()
    try:
        assert s.url.startswith("wss://")
        r = Remote(s.url, token=TOKEN, ssl=client_ctx)
        assert (ember.tensor([3.0], backend=r) ** 2).tolist() == [9.0]
        r.close()
        with pytest.raises(ember.remote.RemoteError, match="can't connect"):
            Remote(s.url, token=TOKEN, ssl=ssl.create_default_context())  # untrusted cert
    finally:
        s.stop()


def test_router_over_remote_and_local(remote):
    """Router(Remote, numpy): float32 work on the server, float64 work here."""
    r = ember.Router(remote, "numpy", policy=ember.router.PinDtype({"float64": "numpy"}))
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], backend=r)
    y = (x @ x).relu()
    z = y.to(ember.float64).sum()
    assert r.location(y._prim) == "remote-numpy" and r.location(z._prim) == "numpy"
    assert z.item() == 54.0 and r.moves == 1


def test_the_mnist_cnn_gives_the_local_logits(remote):
    from ember.demos.mnist_model import mnist_cnn, preprocess

    ember.seed(3)
    local = mnist_cnn()
    ember.seed(3)
    served = mnist_cnn().to(remote)
    images = np.random.default_rng(3).integers(0, 256, (4, 784), dtype=np.uint8)
    want = local(preprocess(ember.tensor(images))).numpy()
    got = served(preprocess(ember.tensor(images, backend=remote))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
