"""Write the catalog as JSON for runners without numpy (Pyodide in a browser, for example).

    python -m tests.conformance.export cases.json [gradients.json]

The runner side needs only ember plus ``spec.loads`` and ``runner.run_case``.
"""

from __future__ import annotations

import sys

from .catalog import all_cases
from .spec import dumps


def export(path: str) -> int:
    """Write every case to ``path``; returns the number of cases written."""
    cases = all_cases()
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(cases))
    return len(cases)


def export_gradients(path: str) -> int:
    """Write the expected gradients of every differentiable case (finite differences, CPython)
    to ``path``; a runner replays them with ``grad_runner.loads_checks`` and ``assert_grads``."""
    from .grad_reference import grad_check
    from .grad_runner import dumps_checks

    checks = [grad_check(c) for c in all_cases() if c.differentiable]
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps_checks(checks))
    return len(checks)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "conformance_cases.json"
    print(f"wrote {export(out)} cases to {out}")
    if len(sys.argv) > 2:
        print(f"wrote {export_gradients(sys.argv[2])} gradient checks to {sys.argv[2]}")
