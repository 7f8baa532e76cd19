"""The Backend contract (core/ember/backend/) sits below the Tensor front end: its composite
default bodies use backend primitives only, so no module there may import the front end,
the backends or the decorators, not even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import ember

CONTRACT = Path(ember.__file__).parent / "backend"
# what the contract may build on: the bottom layer and its own package
ALLOWED = {"errors", "dtype", "shape", "data", "random", "limits", "backend"}


def _under_ember(dotted: str) -> str | None:
    """The component under ``ember`` of an absolute module name (None: not ember's)."""
    parts = dotted.split(".")
    if parts[0] != "ember":
        return None
    return parts[1] if len(parts) > 1 else "ember"


def _imported_ember_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, component under ember)`` of every ember import in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x: ember.backend
            found.append((node.lineno, "backend"))
        elif isinstance(node, ast.ImportFrom) and node.level == 2:  # from ..x / from .. import x
            names = [node.module] if node.module else [a.name for a in node.names]
            found += [(node.lineno, n.split(".")[0]) for n in names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.lineno, _under_ember(node.module or "")))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, _under_ember(a.name)) for a in node.names]
    return [(line, name) for line, name in found if name is not None]


def test_contract_imports_nothing_above_it():
    files = sorted(CONTRACT.glob("*.py"))
    assert files, CONTRACT
    bad = [
        f"{path.name}:{line} imports ember.{name}"
        for path in files
        for line, name in _imported_ember_modules(path)
        if name not in ALLOWED
    ]
    assert not bad, "the contract imports from above it: " + "; ".join(bad)


def test_backend_has_no_tensor_view():
    """``Backend.wrap`` (a Tensor view for default bodies) is gone with the import loop."""
    assert not hasattr(ember.Backend, "wrap")
