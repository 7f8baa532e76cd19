"""The MNIST drawing page running its model on a Remote server: ``?remote=ws://...&token=...``.

A real ``ember.remote.Server`` (numpy) runs in this process on 127.0.0.1; the page (in its
Web Worker, through the browser's WebSocket) uploads the trained weights there and sends every
prediction's ops to it. Digits drawn with the mouse must get the probabilities PyTorch
(float64) computes for the page's own 28×28 input with the same weights; the server must have
served the page's session; a wrong token must stop the page with the server's refusal.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("websockets")

from .harness import blank_page
from .mnist_strokes import trace_strokes
from .test_mnist_demo import _draw, _torch_net, held_out_digits

TOKEN = "drawing-page-token"


@pytest.fixture(scope="module")
def page_server(server, trained_mnist):
    """The drawing page as ``ember demo mnist --serve`` serves it, on a free port."""
    from ember.demos.serve import serve_mnist

    srv = serve_mnist(trained_mnist, port=0, block=False)
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def remote_server():
    from ember.remote import Server

    srv = Server("numpy", port=0, token=TOKEN).start()
    yield srv
    srv.stop()


def _open(browser, server, page_server, remote_server, token):
    page = blank_page(browser, server)
    page.goto(f"{page_server.page_url}?remote={remote_server.url}&token={token}")
    page.wait_for_function("window.mnistDemo && (window.mnistDemo.ready || "
                           "window.mnistDemo.error)", timeout=180_000)
    return page


def test_the_page_runs_its_model_on_a_remote_server(browser, server, trained_mnist,
                                                     page_server, remote_server):
    reference = _torch_net(trained_mnist)
    page = _open(browser, server, page_server, remote_server, TOKEN)
    try:
        assert page.evaluate("window.mnistDemo.error") is None, page.console_lines[-20:]
        assert page.evaluate("window.mnistDemo.backend") == "remote-numpy"
        assert page.text_content("#backend") == f"Remote: numpy at {remote_server.url}"
        stats = remote_server.stats()
        assert stats["sessions"] == 1 and stats["bytes"] > 100_000, stats  # the weights
        for index, digit, image in held_out_digits(per_class=1)[:4]:
            page.click("#clear")
            _draw(page, trace_strokes(image))
            page.wait_for_function("window.mnistDemo.last && window.mnistDemo.idle()",
                                   timeout=60_000)
            last = page.evaluate("window.mnistDemo.last")
            assert last["backend"] == "remote-numpy"
            np.testing.assert_allclose(last["probs"], reference(last["input"]), rtol=1e-4,
                                       atol=1e-5, err_msg=f"test image {index} (a {digit})")
            assert int(page.text_content("#guess")) == int(np.argmax(last["probs"]))
    finally:
        page.close()


def test_a_wrong_token_stops_the_page_with_the_refusal(browser, server, page_server,
                                                       remote_server):
    refused = remote_server.refused
    page = _open(browser, server, page_server, remote_server, "not-the-token")
    try:
        error = page.evaluate("window.mnistDemo.error")
        assert error is not None and "authentication failed" in error, error
        assert remote_server.refused == refused + 1
    finally:
        page.close()
