"""Whether the pure-Python backend implements every required primitive (tests that run on it
are skipped until it does)."""

from __future__ import annotations


def python_ready() -> bool:
    try:
        from ember.backends.python import PythonBackend
    except ImportError:
        return False
    return not PythonBackend.missing_ops()
