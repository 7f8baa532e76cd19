"""Write the catalog as JSON for runners without numpy (Pyodide in a browser, for example).

    python -m tests.conformance.export cases.json

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


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "conformance_cases.json"
    print(f"wrote {export(out)} cases to {out}")
