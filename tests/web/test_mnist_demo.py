"""The MNIST drawing page (demos/mnist/web): Playwright draws a digit with mouse strokes; the
page's preprocessing must be MNIST's (20×20 box, centre of mass in the middle of 28×28) and its
probabilities must match PyTorch (float64) running the same weights on the same 28×28 input.
The model has fixed random weights (tests train nothing). A screenshot is saved in
``$EMBER_ARTIFACTS`` (default runs/web-artifacts/)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from .harness import ROOT, blank_page

ARTIFACTS = Path(os.environ.get("EMBER_ARTIFACTS", ROOT / "runs" / "web-artifacts"))

# A "7": top bar, then a diagonal down-left (canvas coordinates, 280×280)
STROKES = [[(70, 60), (210, 60)], [(210, 60), (150, 150), (110, 235)]]


def _draw(page, strokes):
    box = page.locator("#pad").bounding_box()
    for stroke in strokes:
        x, y = stroke[0]
        page.mouse.move(box["x"] + x, box["y"] + y)
        page.mouse.down()
        for x, y in stroke[1:]:
            page.mouse.move(box["x"] + x, box["y"] + y, steps=12)
        page.mouse.up()


def _torch_probs(model_dir: Path, pixels: list[int]) -> np.ndarray:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    from ember.demos.mnist_model import MEAN, STD

    nn = torch.nn
    net = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10),
    ).double()
    net.load_state_dict({k: v.double() for k, v in load_file(model_dir / "model.safetensors")
                         .items()})
    x = torch.tensor(pixels, dtype=torch.float64).reshape(1, 1, 28, 28) / 255.0
    with torch.no_grad():
        return torch.softmax(net((x - MEAN) / STD), dim=1)[0].numpy()


@pytest.mark.parametrize("backend", ["auto", "python"])
def test_drawn_digit_is_preprocessed_and_predicted(browser, server, staging, backend):
    page = blank_page(browser, server)
    try:
        page.goto(f"{server.url}mnist/?backend={backend}")
        page.wait_for_function("window.mnistDemo && (window.mnistDemo.ready || "
                               "window.mnistDemo.error)", timeout=120_000)
        assert page.evaluate("window.mnistDemo.error") is None
        want_backend = "wgpu" if backend == "auto" else "python"
        assert page.evaluate("window.mnistDemo.backend") == want_backend
        assert ("WebGPU" if want_backend == "wgpu" else "CPU") in page.text_content("#backend")

        _draw(page, STROKES)
        page.wait_for_function("window.mnistDemo.last && window.mnistDemo.idle()",
                               timeout=120_000)
        last = page.evaluate("window.mnistDemo.last")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"mnist_demo_{want_backend}.png"))

        img = np.array(last["input"], dtype=np.float64).reshape(28, 28)
        rows, cols = np.nonzero(img)
        assert rows.size > 20, "the drawing did not reach the model input"
        assert rows.max() - rows.min() + 1 <= 21 and cols.max() - cols.min() + 1 <= 21
        assert max(rows.max() - rows.min(), cols.max() - cols.min()) + 1 >= 19
        cy, cx = (np.indices(img.shape) * img).reshape(2, -1).sum(1) / img.sum()
        assert abs(cy - 13.5) <= 1.0 and abs(cx - 13.5) <= 1.0, (cy, cx)

        want = _torch_probs(staging / "mnist_model", last["input"])
        np.testing.assert_allclose(last["probs"], want, rtol=1e-4, atol=1e-5)
        assert last["backend"] == want_backend
        assert page.text_content("#guess") == str(int(np.argmax(want)))
        assert page.text_content("#latency").endswith("ms")

        page.click("#clear")
        assert page.text_content("#guess") == "–"
    finally:
        page.close()
