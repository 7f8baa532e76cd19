"""The official Array API conformance suite (data-apis/array-api-tests, with the standard's
text) on Ember's host backends, one subprocess per backend, and its failures compared with the
expected ones of ``official_xfails.py``: a failure not listed fails this test, and so does a
listed case that passes (the list must shrink as Ember improves).

The suite is on no package registry: ``make`` unpacks it from ``../shared/array-api-tests`` into
``.array-api-tests/`` (git-ignored); without it these tests skip, saying so. Fixed seed
(``--derandomize``), ``OFFICIAL_EXAMPLES`` examples per property (default 5, to keep `make test`
short), the dtypes the backend lacks skipped (complex; int16 and uint16-64 on wasm), the fft
extension (complex results) disabled. The expected failures are those of 5 examples; more
examples draw rarer cases (at 20, a boolean mask with a 0-size dim over a non-empty one,
``from_dlpack(copy=False)`` on python and wasm and ``__dlpack__(copy=False)`` with an
unversioned capsule on numpy and python, all typed errors), which the test then names:

    OFFICIAL_EXAMPLES=20 .venv/bin/python -m pytest tests/array_api/test_official_suite.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import ember
from official_xfails import expected_failures, missing_dtypes

HERE = Path(__file__).resolve().parent
SUITE = HERE.parents[1] / ".array-api-tests"
EXAMPLES = int(os.environ.get("OFFICIAL_EXAMPLES", "5"))
# a run that collects fewer tests than this broke before testing (an import error...)
MIN_TESTS = 1000


def _module(backend: str) -> str:
    return ("exec('import ember.backends as b; b.set_default_backend(\"%s\"); "
            "import ember.array_api as xp')" % backend)


def run_suite(backend: str, report: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, ARRAY_API_TESTS_MODULE=_module(backend),
        ARRAY_API_TESTS_SKIP_DTYPES=",".join(missing_dtypes(backend)),
        PYTHONPATH=os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p),
    )
    cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider",
           "-p", "official_plugin", "--max-examples", str(EXAMPLES), "--derandomize",
           "--disable-deadline", "--disable-extension", "fft", f"--junitxml={report}"]
    return subprocess.run(cmd, cwd=SUITE, env=env, capture_output=True, text=True, timeout=1800)


def outcomes(report: Path) -> tuple[set[str], int]:
    """The ids of the failed tests (``module::name[params]``) and the number run."""
    failed, total = set(), 0
    for case in ET.parse(report).getroot().iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(f"{case.get('classname').rsplit('.', 1)[-1]}::{case.get('name')}")
    return failed, total


@pytest.mark.parametrize("backend", ["numpy", "python", "wasm"])
def test_official_suite(backend, tmp_path):
    if not (SUITE / "array_api_tests").is_dir():
        pytest.skip(f"the official suite is not unpacked at {SUITE}: `make` does it when "
                    "../shared/array-api-tests holds its tarball")
    for module in ("ndindex", "pytest_jsonreport"):
        pytest.importorskip(module, reason=f"the official suite needs {module}: run `make test`")
    try:
        ember.get_backend(backend)
    except Exception as e:  # noqa: BLE001 - the reason is reported
        pytest.skip(f"{backend} backend not available here: {e}")
    report = tmp_path / "report.xml"
    done = run_suite(backend, report)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    failed, total = outcomes(report)
    assert total >= MIN_TESTS, f"only {total} tests ran:\n{done.stdout[-3000:]}"
    expected = expected_failures(backend)
    new = sorted(failed - set(expected))
    fixed = sorted(set(expected) - failed)
    assert not new and not fixed, (
        f"{backend}: {len(failed)} failed of {total}.\n"
        f"Failures not in official_xfails.py ({len(new)}):\n  " + "\n  ".join(new) +
        f"\nListed but passing now, remove them ({len(fixed)}):\n  " + "\n  ".join(fixed)
    )
