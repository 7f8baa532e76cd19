"""Every example in core/ember's docstrings runs and prints what it shows (the house style asks
for a short runnable example on the public API; this keeps them true)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"


def _modules() -> list[str]:
    names = []
    for path in sorted((CORE / "ember").rglob("*.py")):
        parts = list(path.relative_to(CORE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail " \
        f"(python -m doctest -v {module.__file__})"
