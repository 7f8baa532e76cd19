"""The case catalog: every conformance case, built on CPython with numpy float64 references.

>>> from conformance.catalog import all_cases
>>> len(all_cases()) >= 300
True
"""

from __future__ import annotations

from ..build import CASES
from ..spec import Case

_MODULES = (
    "creation",
    "elementwise",
    "logic",
    "math",
    "reductions",
    "linalg",
    "shape_ops",
    "indexing",
    "nn_functional",
    "quantized",
    "int_range",
)


def all_cases() -> list[Case]:
    """Every case, in a stable order, with unique ids."""
    if not CASES:
        import importlib

        for name in _MODULES:
            importlib.import_module(f"{__name__}.{name}")
        ids = [c.id for c in CASES]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"duplicate case ids: {sorted(dup)}")
    return list(CASES)
