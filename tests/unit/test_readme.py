"""Every ```python block of the README runs (in order, one namespace) and prints what the
comments next to it claim where they name a value."""

import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT))
from tests.docs.blocks import python_blocks  # the docs tests read their pages the same way


def test_readme_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(README)
    assert len(blocks) >= 3
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
    printed = out.getvalue()
    assert "(1, 8, 16, 16)" in printed
    assert "float32\n" in printed
    assert "[0, 1, 1, 0]" in printed  # the XOR model learned XOR
    assert "8589934592\n" in printed and "refused:" in printed  # ember.limits bound a read
    assert "max_tensor_bytes=1048576" in printed
    assert "1 298 True" in printed  # ember.jit: traced once, replayed, and the model learned
    assert "(4, 10) True" in printed  # ONNX export, run by onnxruntime at another batch size
    assert "(3, 384) [1.0, 0.76, -0.1]" in printed  # all-MiniLM-L6-v2 sentence similarities
