"""The MNIST drawing page (demos/mnist/web) with a model trained in this session.

Playwright redraws held-out MNIST test digits on the canvas with mouse strokes traced from
their ink (tests/web/mnist_strokes.py), two per class, and the page must name the right digit
for at least ``MIN_CORRECT`` of the 20 — on WebGPU (SwiftShader), on the wasm kernels
(``?backend=wasm``, in a Chromium that has WebGPU) and on the pure-Python backend
(``?backend=python``, in a Chromium without WebGPU). References are independent of the page:
the dataset's labels, and for every drawing PyTorch (float64) running the same weights on the
page's own 28×28 input; the page's preprocessing must be MNIST's (20×20 box, centre of mass in
the middle of 28×28). Screenshots go to ``$EMBER_ARTIFACTS`` (default runs/web-artifacts/):
mnist-demo.png (WebGPU), mnist-demo-wasm.png and mnist-demo-cpu.png (python).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from .harness import ROOT, blank_page
from .mnist_strokes import trace_strokes

ARTIFACTS = Path(os.environ.get("EMBER_ARTIFACTS", ROOT / "runs" / "web-artifacts"))
PER_CLASS = 2
MIN_CORRECT = 16  # of 20 drawings (80%); the model reads ~96% of the undrawn test images



def open_drawing_page(page, url: str, want_backend: str) -> None:
    """Load the drawing page at ``url`` and wait until its model is ready on ``want_backend``
    (the page's error, and its console's last lines, otherwise)."""
    page.goto(url)
    page.wait_for_function("window.mnistDemo && (window.mnistDemo.ready || "
                           "window.mnistDemo.error)", timeout=180_000)
    assert page.evaluate("window.mnistDemo.error") is None, page.console_lines[-20:]
    assert page.evaluate("window.mnistDemo.backend") == want_backend


def draw_digit(page, image, want_backend: str) -> dict:
    """Draw ``image``'s strokes on the cleared pad and return the page's prediction
    (``window.mnistDemo.last``), made on ``want_backend``."""
    page.click("#clear")
    _draw(page, trace_strokes(image))
    page.wait_for_function("window.mnistDemo.last && window.mnistDemo.idle()", timeout=60_000)
    last = page.evaluate("window.mnistDemo.last")
    assert last["backend"] == want_backend
    return last

def held_out_digits(per_class: int = PER_CLASS) -> list[tuple[int, int, np.ndarray]]:
    """The first ``per_class`` test-split images of each class: (index, label, 28×28 uint8)."""
    from ember.dataset import MnistDataset

    test = MnistDataset("test")
    picked: dict[int, list] = {d: [] for d in range(10)}
    for i in range(len(test)):
        image, label = test[i]
        if len(picked[label]) < per_class:
            picked[label].append((i, label, np.frombuffer(bytes(image), np.uint8).reshape(28, 28)))
        if all(len(v) == per_class for v in picked.values()):
            break
    return [s for d in range(10) for s in picked[d]]


def _draw(page, strokes) -> None:
    box = page.locator("#pad").bounding_box()
    for stroke in strokes:
        points = stroke[::2] + ([stroke[-1]] if len(stroke) % 2 == 0 else [])
        page.mouse.move(box["x"] + points[0][0], box["y"] + points[0][1])
        page.mouse.down()
        for x, y in points[1:]:
            page.mouse.move(box["x"] + x, box["y"] + y)
        page.mouse.up()


def _torch_net(model_dir: Path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    config = json.loads((model_dir / "model.json").read_text())
    (c1, c2), hidden, nn = config["channels"], config["hidden"], torch.nn
    net = nn.Sequential(
        nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 7 * 7, hidden), nn.ReLU(), nn.Linear(hidden, 10),
    ).double()
    state = load_file(model_dir / "model.safetensors")
    net.load_state_dict({k: v.double() for k, v in state.items()})

    def probs(pixels: list[int]) -> np.ndarray:
        x = torch.tensor(pixels, dtype=torch.float64).reshape(1, 1, 28, 28) / 255.0
        with torch.no_grad():
            return torch.softmax(net((x - config["mean"]) / config["std"]), dim=1)[0].numpy()

    return probs


def _check_mnist_layout(pixels: list[int]) -> None:
    img = np.array(pixels, dtype=np.float64).reshape(28, 28)
    rows, cols = np.nonzero(img)
    assert rows.size > 20, "the drawing did not reach the model input"
    height, width = rows.max() - rows.min() + 1, cols.max() - cols.min() + 1
    assert max(height, width) in (19, 20, 21) and min(height, width) <= 21, (height, width)
    cy, cx = (np.indices(img.shape) * img).reshape(2, -1).sum(1) / img.sum()
    assert abs(cy - 13.5) <= 1.0 and abs(cx - 13.5) <= 1.0, (cy, cx)


@pytest.fixture(scope="module")
def demo_server(server, trained_mnist):
    """The page as ``ember demo mnist --serve`` serves it (``serve_mnist``), on a free port."""
    from ember.demos.serve import serve_mnist

    srv = serve_mnist(trained_mnist, port=0, block=False)
    yield srv
    srv.close()


def test_serve_mnist_serves_the_page_the_runtime_and_the_model(demo_server, trained_mnist):
    from urllib.request import urlopen

    assert demo_server.page_url.startswith("http://127.0.0.1:")
    with urlopen(demo_server.page_url) as r:
        assert b'id="pad"' in r.read()
    with urlopen(demo_server.url + "ember.js") as r:
        assert b"export async function loadEmber" in r.read()
    with urlopen(demo_server.page_url + "model/model.safetensors") as r:
        assert r.read() == (trained_mnist / "model.safetensors").read_bytes()


def test_serving_leaves_the_current_directory_untouched(server, trained_mnist, tmp_path,
                                                       monkeypatch):
    from ember.demos.serve import serve_mnist

    monkeypatch.chdir(tmp_path)
    serve_mnist(trained_mnist, port=0, block=False).close()
    assert list(tmp_path.iterdir()) == []


# variant: (browser fixture, query, the backend the page must use, screenshot)
DRAWING_VARIANTS = {
    "webgpu": ("browser", "", "wgpu", "mnist-demo.png"),
    "wasm": ("browser", "?backend=wasm", "wasm", "mnist-demo-wasm.png"),
    "python": ("browser_without_webgpu", "?backend=python", "python", "mnist-demo-cpu.png"),
}


@pytest.mark.parametrize("variant", list(DRAWING_VARIANTS))
def test_trained_model_reads_digits_drawn_with_the_mouse(request, server, trained_mnist,
                                                         demo_server, variant):
    fixture, query, want_backend, screenshot = DRAWING_VARIANTS[variant]
    browser = request.getfixturevalue(fixture)
    reference = _torch_net(trained_mnist)
    samples = held_out_digits()
    page = blank_page(browser, server)
    try:
        open_drawing_page(page, demo_server.page_url + query, want_backend)
        assert page.evaluate("window.mnistDemo.jit") is True  # the forward replays a trace
        label = page.text_content("#backend")
        if variant == "webgpu":
            assert "WebGPU" in label and "swiftshader" in label.lower(), label
        else:
            assert label == {"wasm": "CPU (wasm kernels)", "python": "CPU (Python backend)"}[
                want_backend], label
            assert page.text_content("#why") == f"{want_backend} backend requested"
        phases = page.evaluate("window.mnistDemo.phases")
        assert {"pyodide", "install", "import", "backend", "model", "first_inference"} <= \
            set(phases), phases
        assert "mnist model" in page.text_content("#status")

        results = []
        for index, digit, image in samples:
            last = draw_digit(page, image, want_backend)
            _check_mnist_layout(last["input"])
            want = reference(last["input"])
            np.testing.assert_allclose(last["probs"], want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"test image {index} (a {digit})")
            guess = int(page.text_content("#guess"))
            assert guess == int(np.argmax(last["probs"]))
            assert page.text_content("#latency").endswith(" ms")
            results.append((index, digit, guess))

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / screenshot))
        correct = sum(d == g for _, d, g in results)
        wrong = [f"test[{i}]={d} read as {g}" for i, d, g in results if d != g]
        print(f"{variant}: {correct}/{len(results)} drawn digits read correctly; wrong: {wrong}")
        assert correct >= MIN_CORRECT, f"{correct}/{len(results)} correct; wrong: {wrong}"

        page.click("#clear")
        assert page.text_content("#guess") == "–"
    finally:
        page.close()


@pytest.mark.parametrize("variant", ["webgpu", "cpu-fallback"])
def test_the_page_shows_progress_a_favicon_and_no_dangling_separator(request, server,
                                                                     demo_server, variant):
    """While ember loads, a spinner and the current phase show; once ready they go. No request
    fails (the favicon was a 404) and the footer ends with no "·" before nothing (on WebGPU
    there is no fallback reason after the latency)."""
    browser = request.getfixturevalue(
        "browser" if variant == "webgpu" else "browser_without_webgpu")
    page = blank_page(browser, server)
    # failed requests and console errors of the demo's server (the favicon was a 404);
    # blank.html, on the test server's origin, may still be asking for its own favicon
    failed = []
    page.on("response", lambda r: r.status >= 400 and r.url.startswith(demo_server.url)
            and failed.append((r.status, r.url)))
    page.on("console", lambda m: m.location["url"].startswith(demo_server.url)
            and "404" in m.text and failed.append(m.text))
    try:
        page.goto(demo_server.page_url)
        loading = page.evaluate("""() => {
            const progress = document.getElementById("progress"), spinner = progress?.firstChild;
            return { visible: progress?.checkVisibility() ?? false,
                     phase: document.getElementById("phase")?.textContent ?? "",
                     spin: spinner && getComputedStyle(spinner).animationName };
        }""")
        assert loading["visible"] and loading["phase"] and loading["spin"] == "spin", loading
        page.wait_for_function("window.mnistDemo && (window.mnistDemo.ready || "
                               "window.mnistDemo.error)", timeout=180_000)
        assert page.evaluate("window.mnistDemo.error") is None, page.console_lines[-20:]
        assert not page.locator("#progress").is_visible()
        footer = " ".join(page.inner_text("small").split())
        assert not footer.endswith("·") and "· ·" not in footer, footer
        # the separator before the reason is drawn by CSS only when there is a reason
        before = page.evaluate("getComputedStyle(document.getElementById('why'), '::before')"
                               ".content")
        if variant == "cpu-fallback":  # auto without WebGPU: the wasm kernels, and why
            assert page.text_content("#backend") == "CPU (wasm kernels)"
            assert "navigator.gpu" in page.text_content("#why") and "·" in before, (footer, before)
        else:
            assert page.text_content("#why") == "" and before == "none", (footer, before)
        assert failed == [], failed
        icon = page.get_attribute("link[rel=icon]", "href")
        assert icon.startswith("data:image/svg+xml,"), icon
    finally:
        page.close()
