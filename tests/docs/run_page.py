"""Runs the examples of one docs page in this (fresh) process, the way a reader would:
``python tests/docs/run_page.py PAGE.md`` executes every runnable ```python block in order
in one namespace, and every ```pycon block as a doctest in that same namespace. Tracebacks
and doctest failures name the page and its line. Exit status 1 on the first failure."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.docs.blocks import fenced_blocks


def run(page: Path) -> int:
    namespace: dict = {"__name__": "__main__"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for block in fenced_blocks(page):
        if block.skip or block.excerpt:
            continue
        if block.lang == "pycon":
            test = parser.get_doctest(block.code, namespace, block.where, str(page),
                                      block.line - 1)
            if runner.run(test, clear_globs=False).failed:
                return 1
        else:
            # padded so the traceback's line numbers are the page's
            exec(compile("\n" * (block.line - 1) + block.code, str(page), "exec"), namespace)
    return 0


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
