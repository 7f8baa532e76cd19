"""The official ONNX backend node test cases, run through ember.onnx.load.

Every case runs on the numpy backend; a spread-out sample of the passing ones runs on the
pure-Python backend and, where wgpu-py finds an adapter (lavapipe in CI), on the wgpu backend. Known failures carry a reason (known_failures.py); a listed case that
passes fails the run. ``python tests/onnx/coverage.py`` writes the per-operator table.
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("numpy")

import suite
from known_failures import KNOWN_FAILURES

ALL = sorted(suite.cases())
PY_SUBSET = suite.python_subset()


def _wgpu_available() -> bool:
    try:
        import ember

        ember.get_backend("wgpu")
    except Exception:  # noqa: BLE001 - no wgpu-py or no adapter: the wgpu subset skips
        return False
    return True


def _run(name: str, backend: str) -> None:
    why = KNOWN_FAILURES[backend].get(name)
    if why is None:
        suite.run_case(suite.cases()[name], backend)
        return
    try:
        suite.run_case(suite.cases()[name], backend)
    except Exception:  # noqa: BLE001 - any failure is the known one
        pytest.xfail(why)
    pytest.fail(f"{name} is listed as a known failure ({why}) but passes: remove the entry")


@pytest.mark.parametrize("name", ALL)
def test_node_numpy(name):
    _run(name, "numpy")


@pytest.mark.parametrize("name", PY_SUBSET)
def test_node_python(name):
    _run(name, "python")


@pytest.mark.parametrize("name", PY_SUBSET)
def test_node_wgpu(name):
    if not _wgpu_available():
        pytest.skip("wgpu backend unavailable (pip install 'ember[gpu]' and a Vulkan driver)")
    _run(name, "wgpu")


def test_suite_is_large():
    # guards against a broken collect_testcases silently running nothing
    assert len(ALL) > 1500 and len(PY_SUBSET) > 200


def test_known_failures_exist():
    stale = [n for n in KNOWN_FAILURES["numpy"] if n not in suite.cases()]
    assert not stale, f"known failures that are not cases any more: {stale[:10]}"
