"""Runs inside Pyodide (no numpy, no pytest): replays the JSON conformance cases on one backend.

The browser suite copies this file, tests/conformance/{spec,runner}.py and the catalog as JSON
into the page; :func:`run_all` returns one ``[status, message]`` per case id, where status is
``"pass"``, ``"fail"`` or ``"skip"`` (the backend's caps lack one of the case's dtypes).
"""

from __future__ import annotations

import json
import time

import ember
from conformance import runner
from conformance.spec import loads

_CASES: list = []


def load_cases(text: str) -> int:
    _CASES[:] = loads(text)
    return len(_CASES)


def run_all(backend_name: str) -> str:
    backend = ember.get_backend(backend_name)
    missing_dtypes = getattr(runner, "missing_dtypes", None)
    results: dict[str, list] = {}
    for case in _CASES:
        t0 = time.perf_counter()
        try:
            missing = missing_dtypes(case, backend) if missing_dtypes else []
            if missing:
                why = f"backend {backend.name} has no {', '.join(missing)} (caps)"
                results[case.id] = ["skip", why, 0.0]
                continue
            runner.run_case(case, backend)
            status, message = "pass", ""
        except Exception as e:  # noqa: BLE001 (every failure is reported to pytest)
            status, message = "fail", f"{type(e).__name__}: {e}"[:3000]
        results[case.id] = [status, message, time.perf_counter() - t0]
    return json.dumps(results)
