"""The API reference's docstring rewriting (docs/_ext/griffe_docstrings.py)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("griffe", reason="griffe comes with the docs extra: pip install -e '.[docs]'")

EXT = Path(__file__).resolve().parents[2] / "docs" / "_ext" / "griffe_docstrings.py"
spec = importlib.util.spec_from_file_location("griffe_docstrings", EXT)
ext = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = ext
spec.loader.exec_module(ext)


def test_doctest_becomes_a_pycon_fence():
    text = "Doubles.\n\n>>> x = [1, 2]\n>>> x[1]\n2\n\nAfter."
    assert ext.to_markdown(text) == (
        "Doubles.\n\n\n```pycon\n>>> x = [1, 2]\n>>> x[1]\n2\n```\n\n\nAfter.")


def test_indented_doctest_keeps_its_indent():
    out = ext.to_markdown("- item:\n\n      >>> 1 + 1\n      2")
    assert "      ```pycon\n      >>> 1 + 1\n      2\n      ```" in out


def test_rest_literal_block_and_roles():
    text = "Use it so::\n\n    step = ember.jit(f)\n    step(x)\n\nSee :func:`~ember.nn.Linear`."
    assert ext.to_markdown(text) == (
        "Use it so:\n\n```python\nstep = ember.jit(f)\nstep(x)\n```\n\nSee `Linear`.")


def test_factory_docstring():
    node = ast.parse('exp = _float_unary("exp", "e ** x.")').body[0]
    assert ext.factory_docstring(node, "exp") == "e ** x."
    assert ext.factory_docstring(node, "log") is None  # the name must match
    other = ast.parse("limit = compute(3, 4)").body[0]
    assert ext.factory_docstring(other, "limit") is None
