"""A pytest plugin for the official suite's subprocess (tests/array_api/test_official_suite.py):
the suite's own hypothesis profile (``--max-examples``, ``--derandomize``) minus what makes a
run depend on the machine or on earlier runs — health checks that time the examples (a loaded
machine fails them) and the example database (a replayed failure changes the next run)."""

import pytest
from hypothesis import HealthCheck, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    settings.register_profile(
        "ember-official", parent=settings.get_profile("array-api-tests"),
        suppress_health_check=list(HealthCheck), database=None,
    )
    settings.load_profile("ember-official")
