"""The Array API compliance suite's set-up: a deterministic, bounded hypothesis profile
(``ARRAY_API_EXAMPLES`` examples per property, 20 by default, so `make test` stays short)
and the expected failures of ``array_api_xfails.py`` (test ids, ``*`` a wildcard), applied
with their reasons."""

import fnmatch
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from array_api_xfails import XFAILS  # noqa: E402

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the test extra is missing: the property modules fail to import, loudly
    settings = None
if settings is not None:
    settings.register_profile(
        "array_api",
        max_examples=int(os.environ.get("ARRAY_API_EXAMPLES", "20")),
        derandomize=True,  # the same examples every run: an xfail list can't flicker
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture],
        database=None,
    )
    settings.load_profile("array_api")

# the backends the compliance suite runs on (ARRAY_API_BACKENDS=numpy reports one alone)
BACKENDS = tuple(os.environ.get("ARRAY_API_BACKENDS", "numpy,python").split(","))


@pytest.fixture(params=BACKENDS)
def device(request):
    """The backend the namespace runs on (the standard's ``device=``); a case drawn in a
    dtype the backend doesn't hold (float64 on wgpu) is skipped, saying so."""
    import ember

    dtype = getattr(request.node, "callspec", None) and request.node.callspec.params.get("dtype")
    if dtype and ember.dtype.as_dtype(dtype) not in ember.get_backend(request.param).caps.dtypes:
        pytest.skip(f"{request.param} holds no {dtype}")
    return request.param


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/array_api" not in str(item.fspath).replace("\\", "/"):
            continue
        for pattern, reason in XFAILS.items():
            if _matches(item.nodeid, pattern):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
                break


def _matches(nodeid: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(nodeid.split("::", 1)[-1], pattern.replace("[", "[[]"))
