"""``pytest tests/conformance --backend=NAME`` (default numpy; ``all`` or a comma list too;
the option itself is registered in tests/conftest.py).

Every test taking the ``backend`` fixture runs once per selected backend. Entries of
``known_failures.py`` become xfail(strict=True).
"""

from __future__ import annotations

import pytest

from .backends import Unavailable, make_backend, names
from .known_failures import reason


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
        why = reason(callspec.params["backend_name"], _key(item))
        if why:
            item.add_marker(pytest.mark.xfail(reason=why, strict=True))
