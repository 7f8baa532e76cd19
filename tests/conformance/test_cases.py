"""Every catalog case on the selected backend(s)."""

import pytest

from .catalog import all_cases
from .runner import missing_dtypes, run_case

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case, backend):
    missing = missing_dtypes(case, backend)
    if missing:
        pytest.skip(f"backend {backend.name} has no {', '.join(missing)} (caps)")
    run_case(case, backend)
