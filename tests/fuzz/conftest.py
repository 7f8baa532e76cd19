"""Fixtures for the fuzz tests: reusable workers, and the MicroPython skip."""

from __future__ import annotations

import pytest

from .harness import Worker
from .targets import TARGETS


def micropython_missing() -> str | None:
    """Why the MicroPython target can't run here, or None."""
    from ember.export import embedded_dir, find_micropython

    try:
        find_micropython()
    except FileNotFoundError:
        return ("no MicroPython binary: `make test` builds it (bash embedded/setup.sh, "
                "embedded/build/micropython)")
    if not (embedded_dir() / "build" / "native" / "x64" / "ember_kernels.mpy").is_file():
        return "no native ember_kernels.mpy: `make test` builds it (bash embedded/setup.sh)"
    return None


def skip_unless_runnable(name: str) -> None:
    if TARGETS[name].engine == "micropython" and (reason := micropython_missing()):
        pytest.skip(reason)


@pytest.fixture(scope="module")
def worker():
    """``worker(format)``: one started worker per format, shared by a module's tests."""
    pool: dict[str, Worker] = {}

    def get(name: str) -> Worker:
        skip_unless_runnable(name)
        if name not in pool:
            pool[name] = Worker(TARGETS[name])
        return pool[name]

    yield get
    for w in pool.values():
        w.close()
