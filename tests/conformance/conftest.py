"""``pytest tests/conformance --backend=NAME`` (default numpy; ``all`` or a comma list too;
the option itself is registered in tests/conftest.py).

Every test taking the ``backend`` fixture runs once per selected backend. A test listed in
``known_failures.py`` is reported xfailed only when it fails with the listed exception and
message; a pass or any other failure fails it (:mod:`.expected`).
"""

from __future__ import annotations

import pytest

from .backends import Unavailable, make_backend, names
from .known_failures import expected

_EXPECTED = pytest.StashKey()


def pytest_generate_tests(metafunc):
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize(
            "backend_name", names(metafunc.config.getoption("--backend")), scope="session"
        )


@pytest.fixture(scope="session")
def backend(backend_name):
    try:
        return make_backend(backend_name)
    except Unavailable as e:
        pytest.skip(str(e))


def _key(item) -> str:
    """The known-failures key of a test: its case id, or ``function[param-id]`` otherwise."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "case" in callspec.params:
        return callspec.params["case"].id
    name = item.originalname if hasattr(item, "originalname") else item.name
    if callspec is not None:
        b = callspec.params.get("backend_name", "")
        param_id = callspec.id
        for pattern in (f"{b}-", f"-{b}"):
            if b and pattern in param_id:
                param_id = param_id.replace(pattern, "", 1)
                break
        else:
            param_id = "" if param_id == b else param_id
        if param_id:
            return f"{name}[{param_id}]"
    return name


def pytest_collection_modifyitems(config, items):
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "backend_name" not in callspec.params:
            continue
        entry = expected(callspec.params["backend_name"], _key(item))
        if entry is not None:
            item.stash[_EXPECTED] = entry


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A listed test: xfailed when it fails as listed, failed otherwise (passes included)."""
    report = (yield).get_result()
    entry = item.stash.get(_EXPECTED, None)
    if entry is None or call.when != "call":
        return
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        return
    problem = entry.mismatch(call.excinfo.value if call.excinfo is not None else None)
    if problem is None:
        report.outcome, report.wasxfail = "skipped", entry.why
    else:
        report.outcome, report.longrepr = "failed", f"{_key(item)}: {problem}"
