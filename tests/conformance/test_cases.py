"""Every catalog case on the selected backend(s)."""

import pytest

from .catalog import all_cases
from .runner import run_case

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case, backend):
    run_case(case, backend)
