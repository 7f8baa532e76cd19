"""The MNIST drawing page with ``?int8``: it downloads the int8 record
(``model_int8.safetensors``, written by ``ember.quantize.save`` as ``ember demo mnist --int8``
does) instead of the float32 weights, rebuilds the quantized model in the browser
(``ember.quantize.load``, without numpy) and runs it on the wasm kernels and on the
pure-Python backend. The reference is CPython's numpy backend running the same int8 record on
the page's own 28×28 input; the page must download ~4x fewer model bytes.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from .harness import blank_page
from .test_mnist_demo import draw_digit, held_out_digits, open_drawing_page

# variant: (browser fixture, query, the backend the page must use)
VARIANTS = {
    "wasm": ("browser", "?int8&backend=wasm", "wasm"),
    "python": ("browser_without_webgpu", "?int8&backend=python", "python"),
}


@pytest.fixture(scope="module")
def int8_run(trained_mnist, tmp_path_factory):
    """A copy of the trained run with its int8 record (calibrated on 256 training digits)."""
    import ember
    from ember.dataset import MnistDataset
    from ember.demos.mnist import load_trained
    from ember.demos.mnist_model import preprocess

    run = tmp_path_factory.mktemp("int8-run")
    for name in ("model.json", "model.safetensors"):
        shutil.copy(trained_mnist / name, run / name)
    train = MnistDataset("train")
    digits = np.stack([np.frombuffer(bytes(train[i][0]), np.uint8) for i in range(256)])
    calibration = preprocess(ember.tensor(digits))
    q = ember.quantize(load_trained(run), calibration,
                       ember.quantize.Scheme(unsigned=True, bias_correction=True))
    ember.quantize.save(q, run / "model_int8.safetensors")
    return run


@pytest.fixture(scope="module")
def int8_server(server, int8_run):
    from ember.demos.serve import serve_mnist

    srv = serve_mnist(int8_run, port=0, block=False)
    yield srv
    srv.close()


def _cpython_int8(run):
    import ember
    from ember.demos.mnist import load_trained
    from ember.demos.mnist_model import preprocess

    q = ember.quantize.load(load_trained(run), run / "model_int8.safetensors")

    def probs(pixels: list[int]) -> np.ndarray:
        x = preprocess(ember.tensor([pixels], dtype="uint8"))
        with ember.no_grad():
            return q(x).softmax(dim=1).numpy()[0]

    return probs


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_page_runs_the_int8_model_like_cpython(request, server, int8_run, int8_server,
                                                   variant):
    fixture, query, want_backend = VARIANTS[variant]
    browser = request.getfixturevalue(fixture)
    reference = _cpython_int8(int8_run)
    page = blank_page(browser, server)
    fetched = []
    page.on("response", lambda r: r.url.startswith(int8_server.url) and fetched.append(r.url))
    try:
        open_drawing_page(page, int8_server.page_url + query, want_backend)
        assert page.evaluate("window.mnistDemo.int8") is True
        # the int8 record went over the network, the float32 weights did not
        assert any(u.endswith("/model/model_int8.safetensors") for u in fetched), fetched
        assert not any(u.endswith("/model/model.safetensors") for u in fetched), fetched
        int8_bytes = page.evaluate("window.mnistDemo.modelBytes")
        f32_bytes = (int8_run / "model.safetensors").stat().st_size
        assert int8_bytes == (int8_run / "model_int8.safetensors").stat().st_size
        print(f"{variant}: model bytes over the network {f32_bytes:,} (float32) -> "
              f"{int8_bytes:,} (int8), {f32_bytes / int8_bytes:.2f}x fewer")
        assert f32_bytes / int8_bytes > 3.5

        for index, digit, image in held_out_digits(per_class=1)[:6]:
            last = draw_digit(page, image, want_backend)
            want = reference(last["input"])
            # the same integer codes: only the float rescale and softmax may round apart
            np.testing.assert_allclose(last["probs"], want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"test image {index} (a {digit})")
            assert int(np.argmax(last["probs"])) == int(np.argmax(want))
    finally:
        page.close()
