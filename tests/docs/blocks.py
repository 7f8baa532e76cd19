"""Fenced code blocks of a Markdown file: what the README test and the docs tests run.

A block is a fence (indented ones too, as in list items) with its language, its text
(dedented) and the line its code starts on. An HTML comment on the line before the fence
says how the tests treat it:

- ``<!-- skip: reason -->``: not run (needs hardware, a network or a cluster the tests don't
  start here); the tests report it with the reason;
- ``<!-- excerpt: path/in/the/repo.py -->``: a quotation of that file, checked to appear in
  it (modulo indentation) rather than run.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    flags=re.M | re.S,
)
MARK = re.compile(r"<!--\s*(?P<kind>skip|excerpt):\s*(?P<value>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    lang: str
    code: str
    line: int  # 1-based line of the block's first code line
    skip: str | None = None  # the reason it is not run
    excerpt: str | None = None  # the repository file it quotes

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def fenced_blocks(path: Path, langs: tuple[str, ...] = ("python", "pycon")) -> list[Block]:
    """The fenced blocks of ``path`` in one of ``langs``, in order."""
    text = path.read_text()
    blocks = []
    for m in FENCE.finditer(text):
        if m.group("lang") not in langs:
            continue
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        kind = mark.group("kind") if mark else None
        blocks.append(Block(
            path=path, lang=m.group("lang"), code=textwrap.dedent(m.group("body")),
            line=text.count("\n", 0, m.start("body")) + 1,
            skip=mark.group("value") if kind == "skip" else None,
            excerpt=mark.group("value") if kind == "excerpt" else None,
        ))
    return blocks


def python_blocks(path: Path) -> list[str]:
    """The code of every runnable ```python block of ``path``."""
    return [b.code for b in fenced_blocks(path, ("python",)) if not (b.skip or b.excerpt)]
