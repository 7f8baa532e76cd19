"""Known failures must match: the conformance run reports a listed test xfailed only when it
raises the listed exception with the listed message, and fails it otherwise."""

from __future__ import annotations


from .expected import Fails, too_broad
from .known_failures import KNOWN_FAILURES

pytest_plugins = ["pytester"]

_CONFTEST = """
from conformance.conftest import _EXPECTED, pytest_runtest_makereport
from conformance.expected import Fails

def pytest_collection_modifyitems(items):
    for item in items:
        item.stash[_EXPECTED] = Fails("DTypeError", r"^int_sum: the int64 result may reach 8",
                                      "wgpu stores int64 as int32")
"""

_TESTS = """
import ember

MESSAGE = "int_sum: the int64 result may reach 8000000000, outside the int32 range"

def test_listed_failure():
    raise ember.DTypeError(MESSAGE)

def test_other_exception_type():
    raise ValueError(MESSAGE)

def test_other_message():
    raise ember.DTypeError("int_sum: the int64 result may reach 3, outside")

def test_passes():
    pass
"""


def test_the_run_fails_a_listed_test_that_fails_another_way(pytester):
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(xfailed=1, failed=3)
    result.stdout.fnmatch_lines(["*but failed with ValueError*", "*but failed with DTypeError*",
                                 "*but passes*"])


def test_every_entry_names_an_exception_and_a_specific_pattern():
    for backend, entries in KNOWN_FAILURES.items():
        for key, entry in entries.items():
            assert isinstance(entry, Fails) and entry.error.isidentifier(), (backend, key)
            assert too_broad(entry) is None, (backend, key, too_broad(entry))
