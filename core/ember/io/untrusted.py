"""Reading files that may be hostile: bounded JSON, and one error type for every failure.

``json.loads`` alone recurses once per ``[`` (a 100 000-deep array is a RecursionError) and
turns a 5 000-digit number into a ValueError; :func:`parse_json` checks size, nesting and
number digits against :mod:`ember.limits` first, with a few passes of C-speed byte operations
over the input (no Python-level work per token), then lets ``json.loads`` parse it.
:func:`reading` wraps a whole parse so that whatever a malformed file trips over surfaces as a
:class:`~ember.errors.RecordError`.

>>> parse_json(b'{"a": [1, 2]}', "demo")
{'a': [1, 2]}
>>> nesting_depth(b'[{"a": "]]]]"}]')
2
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from .. import limits
from ..errors import RecordError, malformed_file

# brackets become +1 / -1 (as signed bytes), every other byte is deleted
_DEPTH_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def outside_strings(raw: bytes) -> bytes:
    """``raw`` JSON without the contents of its strings. With escaped backslashes and quotes
    removed, every quote left delimits a string. (In invalid JSON the result may be off after
    the first error, where the parser stops anyway.)"""
    return b"".join(raw.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])


def nesting_depth(raw: bytes) -> int:
    """The deepest bracket nesting of ``raw`` JSON, ignoring brackets inside strings."""
    return _depth(outside_strings(raw))


def _depth(syntax: bytes) -> int:
    steps = syntax.translate(_DEPTH_STEP, _NOT_BRACKET)
    return max(accumulate(memoryview(steps).cast("b")), default=0)


def parse_json(raw: bytes | str, what: str) -> Any:
    """``raw`` parsed as JSON, after checking its size, nesting and the digits of its numbers
    against :mod:`ember.limits`; RecordError (naming ``what``) for anything invalid."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    bounds = limits.current()
    limits.check(RecordError, f"{what}: JSON size in bytes", len(data), "max_header_bytes")
    syntax = outside_strings(data)
    if syntax.count(b"[") + syntax.count(b"{") > bounds.max_nesting:  # else it can't pass
        limits.check(RecordError, f"{what}: JSON nesting depth", _depth(syntax), "max_nesting")
    # the leftmost match of a greedy {n,} spans a whole run of digits: one number's
    digits = re.search(rb"[0-9]{%d,}" % (bounds.max_int_digits + 1), syntax)
    if digits:
        limits.check(RecordError, f"{what}: digits in a JSON number", len(digits[0]),
                     "max_int_digits")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"{what}: corrupt JSON: {e}") from e


def reading(what: str):
    """:func:`ember.errors.malformed_file` for the RecordError readers of this package."""
    return malformed_file(RecordError, what)
