"""The README's ONNX coverage table matches the suite: pass counts follow from the case list
and the strict known-failures list (a listed case that passes fails the suite run)."""

import collections
import os

import pytest

pytest.importorskip("onnx")

import coverage
import suite
from known_failures import KNOWN_FAILURES


def test_readme_table_is_current():
    table = collections.defaultdict(lambda: [0, 0])
    failing = KNOWN_FAILURES["numpy"]
    for name, case in suite.cases().items():
        op = suite.tested_op(case)
        table[op][1] += 1
        table[op][0] += name not in failing
    passed = sum(ok for ok, _ in table.values())
    expected = coverage.readme_section(table, passed, sum(n for _, n in table.values()))
    readme = open(os.path.join(coverage.ROOT, "README.md")).read()
    start = readme.index(coverage.README_START)
    end = readme.index(coverage.README_END) + len(coverage.README_END)
    assert readme[start:end] == expected, "run `python tests/onnx/coverage.py` to regenerate"
