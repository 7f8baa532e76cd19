"""Every real model on every target (issue 40): the model-level conformance matrix.

Rows and their references: rows.py; targets: targets.py; judging and the docs page:
runner.py; the cells that carry a capability reason instead of a number: capabilities.py.
The run rewrites docs/what_runs_where.md once every cell has run (atomically)."""

from __future__ import annotations

import importlib.util
import os
import platform
from datetime import date
from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("wgpu")
pytest.importorskip("efficientnet_lite_pytorch")
if importlib.util.find_spec("rapidocr_onnxruntime") is None:  # its models, not its code (cv2)
    pytest.skip("PyPI rapidocr-onnxruntime (installed --no-deps) is missing", allow_module_level=True)

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # wgpu-py's Vulkan loader wants one

from . import browser, runner  # noqa: E402
from . import rows as matrix_rows  # noqa: E402
from .capabilities import NOT_RUN, REFUSALS  # noqa: E402
from .targets import COLUMNS  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "what_runs_where.md"


def test_every_capability_entry_names_a_real_cell():
    names = {"mnist_cnn", "mnist_cnn.int8", "mnist_cnn.onnx", "mnist_cnn.int8-qdq.onnx", "mnist_cnn.converted",
             "efficientnet_lite0", "efficientnet_lite0.onnx", "minilm", "minilm.onnx",
             "lstm_gru.onnx", "ppocr_cls.onnx"}
    for row, column in [*NOT_RUN, *REFUSALS]:
        assert row in names and column in COLUMNS, (row, column)


@pytest.fixture
def page():
    """Closes the browser columns' Chromium after the matrix."""
    yield
    browser.close()


def test_every_model_on_every_target(tmp_path_factory, micropython, page):
    rows = matrix_rows.build(str(tmp_path_factory.mktemp("matrix")))
    cells = runner.run(rows)
    stamp = (f"Generated {date.today().isoformat()} on {platform.machine()} "
             f"({os.cpu_count()} cores) by `pytest tests/matrix`.")
    page = runner.render(rows, cells, stamp=stamp)
    print(page)
    slowest = sorted(cells.items(), key=lambda kv: -kv[1].seconds)[:8]
    print("slowest cells:", ", ".join(f"{r}/{c} {cell.seconds:.1f} s"
                                      for (r, c), cell in slowest))
    runner.write_atomically(str(PAGE), page)
    failed = {k: c.text for k, c in cells.items() if c.status == "FAIL"}
    assert not failed, "\n".join(f"{r} on {c}: {t}" for (r, c), t in failed.items())
