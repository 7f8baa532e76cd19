"""The documentation site, built once per test session (``mkdocs build --strict`` into a
temporary folder) for the tests that read it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Site:
    returncode: int
    log: str
    path: Path


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Site:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]' (make docs)")
    path = tmp_path_factory.mktemp("docs") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    return Site(proc.returncode, proc.stdout + proc.stderr, path)
