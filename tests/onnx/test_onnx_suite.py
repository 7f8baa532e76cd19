"""The official ONNX backend node test cases, run through ember.onnx.load.

Every case runs on the numpy backend and, where wgpu-py finds an adapter (lavapipe in CI), on
the wgpu backend; a spread-out sample of the passing ones runs on the pure-Python backend. A
known failure (known_failures.py) names the exception and message it must raise: a listed
case that passes, or fails another way, fails the run. ``python tests/onnx/coverage.py``
writes the per-operator table.
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("numpy")

import suite
from conformance.expected import Fails, too_broad
from known_failures import KNOWN_FAILURES

ALL = sorted(suite.cases())
PY_SUBSET = suite.python_subset()
# on wgpu, the cases that pass on numpy (those that don't are listed there and fail the same)
WGPU = [n for n in ALL if n not in KNOWN_FAILURES["numpy"]]


def _wgpu_available() -> bool:
    try:
        import ember

        ember.get_backend("wgpu")
    except Exception:  # noqa: BLE001 - no wgpu-py or no adapter: the wgpu run skips
        return False
    return True


def _run(name: str, backend: str, entry: Fails | None) -> None:
    if entry is None:
        suite.run_case(suite.cases()[name], backend)
        return
    problem = entry.mismatch(suite.failure(suite.cases()[name], backend))
    if problem:
        pytest.fail(f"{name} on {backend}: {problem}")
    pytest.xfail(entry.why)


@pytest.mark.parametrize("name", ALL)
def test_node_numpy(name):
    _run(name, "numpy", KNOWN_FAILURES["numpy"].get(name))


@pytest.mark.parametrize("name", PY_SUBSET)
def test_node_python(name):
    _run(name, "python", KNOWN_FAILURES["python"].get(name))


@pytest.mark.parametrize("name", WGPU)
def test_node_wgpu(name):
    if not _wgpu_available():
        pytest.skip("wgpu backend unavailable (pip install 'ember[gpu]' and a Vulkan driver)")
    _run(name, "wgpu", KNOWN_FAILURES["wgpu"].get(name))


def test_suite_is_large():
    # guards against a broken collect_testcases silently running nothing
    assert len(ALL) > 1500 and len(PY_SUBSET) > 200 and len(WGPU) > 1500


def test_known_failures_are_cases_with_specific_patterns():
    for backend, entries in KNOWN_FAILURES.items():
        stale = [n for n in entries if n not in suite.cases()]
        assert not stale, f"{backend}: known failures that are not cases any more: {stale[:10]}"
        broad = {n: too_broad(e) for n, e in entries.items() if too_broad(e)}
        assert not broad, f"{backend}: patterns that could match other failures: {broad}"
        untyped = [n for n, e in entries.items() if not e.error.isidentifier()]
        assert not untyped, f"{backend}: entries without an exception class: {untyped}"
    assert not set(KNOWN_FAILURES["wgpu"]) & set(KNOWN_FAILURES["numpy"])


def test_a_listed_failure_must_match():
    """The runner fails a listed case that fails another way (a real case, its real error)."""
    name = "test_convtranspose_3d"
    entry = KNOWN_FAILURES["numpy"][name]
    with pytest.raises(pytest.xfail.Exception):
        _run(name, "numpy", entry)
    for wrong in (Fails(entry.error, r"ConvTranspose: 2-d is not supported", entry.why),
                  Fails("ValueError", entry.match, entry.why)):
        with pytest.raises(pytest.fail.Exception, match="but failed with"):
            _run(name, "numpy", wrong)
    with pytest.raises(pytest.fail.Exception, match="but passes"):
        _run("test_abs", "numpy", entry)
