"""The image-classification page with ``?int8``: it downloads the int8 record of
``ember demo classify --int8`` (``efficientnet_lite0_int8.safetensors``, written into the model
folder by ``serve_classifier``) instead of the float16 weights, rebuilds the quantized
EfficientNet-Lite0 in the browser (``ember.quantize.load``, without numpy) and classifies a
scikit-image photo at ``?size=96`` on the wasm kernels (the fastest CPU backend the page has,
in a Chromium without WebGPU). The int8 kernels in Chromium's WebGPU are checked op by op in
test_conformance_browser.py; the whole page on SwiftShader (0.019 from numpy when measured,
12-16 s an image) stays out of ``make test``'s time budget.

The references run the same int8 record (``ember.quantize.load``) on CPython, on the exact
pixels the page fed its model: on the wasm kernels (wasmtime) the page's probabilities must be
the same numbers (it rebuilt the same model); on numpy, computed independently of those kernels,
they must agree as closely as two backends' int8 roundings can (``TOLERANCES``). The float16
weights must never be requested. Screenshot: ``$EMBER_ARTIFACTS/classify-int8.png``.
"""

from __future__ import annotations

import sys
from urllib.request import urlopen

import numpy as np
import pytest

from .test_classify_page import ARTIFACTS, CATS, SIZE, _open, _pick


# CPython's int8 model on the page's pixels. On the same kernels (wasm, through wasmtime) the
# page must compute the same numbers: only the softmax may round apart. numpy computes the
# float32 depthwise convolutions between the int8 layers in another order: their last bits
# differ (40% of block 0's outputs against wasm) and flip some int8 input codes of the next
# layer; a flip moves a whole quantization step and by block 9 every activation differs, so
# the probabilities agree only as two int8 roundings of one float model do (measured here:
# 0.030 from wasm, 0.019 from WebGPU, 0.014 from the pure-Python backend); the top-1 class
# must be the same.
TOLERANCES = {"wasm": {"rtol": 1e-4, "atol": 1e-6}, "numpy": {"rtol": 0, "atol": 0.05}}


@pytest.fixture(scope="module")
def model_dir(classify_model_dir):
    """The page's model folder, int8 record included (``export_web_model``), shared with
    test_classify_page."""
    return classify_model_dir


@pytest.fixture(scope="module")
def int8_server(server, model_dir):
    from ember.demos.classify_web import serve_classifier

    srv = serve_classifier(port=0, block=False, model_dir=model_dir)
    yield srv
    srv.close()


def test_the_model_folder_keeps_its_int8_record(model_dir):
    """Written once: a second export keeps it, and rewriting the float files leaves it be."""
    import json

    from ember.demos.classify_web import INT8_WEIGHTS, WEIGHTS, export_web_model

    config = json.loads((model_dir / "model.json").read_text())
    assert config["int8_weights"] == INT8_WEIGHTS and config["dtype"] == "float16"
    stamps = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}
    assert export_web_model(model_dir) == model_dir
    assert {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()} == stamps
    (model_dir / "labels.json").unlink()  # the float files are rewritten, the record kept
    export_web_model(model_dir)
    after = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}
    assert after.keys() == stamps.keys() and after[WEIGHTS] > stamps[WEIGHTS]
    assert after[INT8_WEIGHTS] == stamps[INT8_WEIGHTS]


def test_without_scikit_learn_the_page_is_served_without_the_int8_model(
        server, model_dir, tmp_path, monkeypatch, capsys):
    """The int8 record's calibration photos come from scikit-learn: without it the float16
    page is still served, and model.json names no int8 file (``?int8`` then says so)."""
    import json

    from ember.demos.classify_web import INT8_WEIGHTS, serve_classifier

    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # import fails
    srv = serve_classifier(port=0, block=False, model_dir=tmp_path)
    try:
        config = json.loads(_served(srv.page_url + "model/model.json"))
    finally:
        srv.close()
    assert config["dtype"] == "float16" and "int8_weights" not in config
    assert not (tmp_path / INT8_WEIGHTS).exists()
    assert "serving without the int8 model (?int8)" in capsys.readouterr().out


def _served(url: str) -> bytes:
    with urlopen(url) as r:
        return r.read()


def _cpython_int8(path, backend: str):
    """``probs(rgba, size)``: softmax of the int8 record in ``path`` on CPython's
    ``backend``."""
    import ember
    from ember.demos.classify_web import folded_lite0

    q = ember.quantize.load(folded_lite0(backend), path)

    def probs(rgba: list[int], size: int) -> np.ndarray:
        img = np.asarray(rgba, np.float64).reshape(size, size, 4)[..., :3]
        # in double, then float32: as the page's rgba_to_input rounds
        x = (img / 127.5 - 1.0).astype(np.float32).transpose(2, 0, 1)[None]
        with ember.no_grad():
            return q(ember.tensor(np.ascontiguousarray(x), backend=backend)).softmax(
                dim=1).numpy()[0]

    return probs


def test_the_int8_page_classifies_like_cpython_and_never_fetches_the_float_weights(
        browser_without_webgpu, server, int8_server, tmp_path):
    from ember.demos.classify_web import INT8_WEIGHTS, WEIGHTS

    pytest.importorskip("wasmtime")  # the wasm kernels on CPython
    model_url = int8_server.page_url + "model/"
    record = tmp_path / INT8_WEIGHTS  # the served bytes, for the CPython references
    record.write_bytes(_served(model_url + INT8_WEIGHTS))
    int8_bytes = record.stat().st_size
    f16_bytes = len(_served(model_url + WEIGHTS))
    requested = []
    page = _open(browser_without_webgpu, server,
                 int8_server.page_url + f"?int8&size={SIZE}", requested)
    try:
        assert page.evaluate("window.classifyDemo.backend") == "wasm"
        loaded = page.evaluate("window.classifyDemo.model")
        assert loaded["dtype"] == "int8" and loaded["weights_bytes"] == int8_bytes
        assert page.text_content("#model") == f"int8, {int8_bytes / 1e6:.1f} MB"
        # the int8 record went over the network, the float16 weights did not
        assert model_url + INT8_WEIGHTS in requested, requested
        assert model_url + WEIGHTS not in requested, requested
        print(f"model bytes over the network: {f16_bytes:,} (float16) -> {int8_bytes:,} "
              f"(int8), {f16_bytes / int8_bytes:.2f}x fewer")

        result = _pick(page, "chelsea")
        assert result["backend"] == "wasm" and result["size"] == SIZE
        labels = [label for label, _, _ in result["top"]]
        probs = [p for _, p, _ in result["top"]]
        classes = [i for _, _, i in result["top"]]
        assert labels[0] in CATS, result["top"]
        assert page.text_content("#label") == labels[0]
        rgba = page.evaluate("Array.from(window.classifyDemo.pixels)")
        for reference in ("wasm", "numpy"):
            want = _cpython_int8(record, reference)(rgba, SIZE)
            diff = np.abs(np.array(probs) - want[classes]).max()
            print(f"wasm @{SIZE} int8: chelsea {result['top'][0][:2]} in "
                  f"{result['ms']:.0f} ms; max |page - CPython {reference}| {diff:.2e}")
            np.testing.assert_allclose(
                probs, want[classes], **TOLERANCES[reference],
                err_msg=f"the page on wasm vs CPython's int8 model on {reference}")
            assert classes[0] == int(np.argmax(want))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "classify-int8.png"))
    finally:
        page.close()
