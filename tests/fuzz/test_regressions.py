"""Every reproducer in tests/fuzz/regressions/<format>/ replays through that format's fuzz
worker (same process limits and classification as a fuzz run): the reader must accept it or
raise its typed error — no other exception, hang, memory blow-up, crash or injected code."""

from __future__ import annotations

from pathlib import Path

import pytest

from .targets import TARGETS

REGRESSIONS = Path(__file__).parent / "regressions"
# an MCU file is read by two decoders: the CPython one and ember_micro on MicroPython
RUNNERS = {"mcu": ["mcu", "mcu_micropython"]}


def _folders() -> list[Path]:
    return sorted(p for p in REGRESSIONS.iterdir() if p.is_dir()) if REGRESSIONS.is_dir() else []


def _cases():
    for folder in _folders():
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.name.startswith(".") and path.suffix not in (
                    ".md", ".txt"):
                for name in RUNNERS.get(folder.name, [folder.name]):
                    yield pytest.param(name, path, id=f"{name}/{path.name}")


def test_folders_name_formats():
    unknown = [p.name for p in _folders() if p.name not in TARGETS]
    assert not unknown, f"regressions/{unknown}: not a fuzz format (one of {sorted(TARGETS)})"


@pytest.mark.parametrize(("name", "path"), list(_cases()))
def test_regression(worker, name, path):
    outcome = worker(name).run(path.read_bytes())
    assert not outcome.bug, (f"{path}: {outcome.status} {outcome.error} at {outcome.where}: "
                             f"{outcome.message}")
