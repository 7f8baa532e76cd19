"""The README's "Router and Remote" examples run on their own and print what their comments
claim (tests/unit/test_readme.py runs every block too, in one namespace)."""

import contextlib
import io
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("websockets")
pytest.importorskip("wgpu")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT))
from tests.docs.blocks import python_blocks


def test_router_and_remote_examples():
    text = README.read_text()
    section = text[text.index("## Router and Remote"):]
    section = section[:section.index("\n## ", 3)]
    blocks = [b for b in python_blocks(README) if b in section]
    assert len(blocks) == 2
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(README), "exec"), {})  # noqa: S102 - our own README
    assert out.getvalue().splitlines() == [
        "54.0 [4398046511104] 1 numpy", "(3, 2) remote-numpy", "float32"]
