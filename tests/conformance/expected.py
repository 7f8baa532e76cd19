"""Expected failures that must match: what a known-failure entry says the failure is.

An entry names the exception class and a regular expression its message must contain
(``re.search``); a wrong-values entry names the comparison's ``AssertionError`` and a pattern
holding the measured error (e.g. ``"8/25 values differ"``). A listed test passes the run only
when it fails exactly that way: a pass, another exception type or another message fails it,
so a list can't hide a new failure behind an old reason.

>>> e = Fails("DTypeError", r"from_data: int64 value \\d+ is outside", "wgpu stores int64 as int32")
>>> e.mismatch(TypeError("from_data: int64 value 5 is outside")) is not None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# a pattern must say this much of its message (regex syntax not counted)
MIN_LITERAL = 12


@dataclass(frozen=True)
class Fails:
    error: str  # the exception's class name, exactly: "DTypeError", "AssertionError"
    match: str  # a regex searched for in the message; specific to the one listed case
    why: str  # the reason, for people

    def mismatch_text(self, error: str | None, message: str) -> str | None:
        """None when a failure of class ``error`` with ``message`` is this one, else what
        differs (``error`` None: the test passed)."""
        if error is None:
            return f"listed as failing with {self.error} ({self.why}) but passes: remove the entry"
        if error != self.error or not re.search(self.match, message):
            return (f"listed as failing with {self.error} matching {self.match!r} ({self.why}), "
                    f"but failed with {error}: {message[:500]}")
        return None

    def mismatch(self, exc: BaseException | None) -> str | None:
        """:meth:`mismatch_text` for an exception (None: the test passed)."""
        if exc is None:
            return self.mismatch_text(None, "")
        return self.mismatch_text(type(exc).__name__, str(exc))


def too_broad(entry: Fails) -> str | None:
    """Why ``entry``'s pattern could match other cases' failures (None: specific enough)."""
    tokens = re.findall(r"\\.|.", entry.match, re.DOTALL)
    literal = [t for t in tokens if t not in "[].*+?(){}|^$" and t[1:] not in tuple("dDsSwWbBAZ")]
    if len(literal) < MIN_LITERAL:
        return f"pattern {entry.match!r} says less than {MIN_LITERAL} characters of the message"
    if re.search(entry.match, "") is not None:
        return f"pattern {entry.match!r} matches an empty message"
    return None
