"""A short fuzz run per format (about ten seconds each, seeded: the inputs are the same on
every run, so a longer run repeats a shorter one's and goes on): the seeds written by the real
writers must load, and no mutated input may hit a bug. A failure names the bug and where its
input was saved (runs/fuzz/<format>/); ``python -m tests.fuzz.run --format X --replay FILE``
re-runs it."""

from __future__ import annotations

import os

import pytest

from .conftest import skip_unless_runnable
from .harness import fuzz
from .run import summary_table
from .targets import TARGETS

SECONDS = float(os.environ.get("EMBER_FUZZ_SECONDS", "10"))


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_short_fuzz(name):
    skip_unless_runnable(name)
    stats = fuzz(name, SECONDS, rng_seed=0)
    assert not stats.seeds_not_ok and not stats.n_bugs, summary_table([stats.to_json()])
