"""The install tests' fixtures: ember's wheel, built once a session (wheel_env.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wheel_env import ROOT, build_wheel


@pytest.fixture(scope="session")
def ember_wheel(tmp_path_factory) -> Path:
    """The checkout's wheel, built as ``python -m build`` builds it."""
    proc = build_wheel(ROOT, tmp_path_factory.mktemp("ember-wheel"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.split()[-1])
