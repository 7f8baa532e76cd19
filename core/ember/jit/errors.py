"""The error of :mod:`ember.jit`."""

from __future__ import annotations

from ..errors import EmberError


class JitError(EmberError):
    """What ``ember.jit`` can't capture: a value read inside a traced function (data-dependent
    Python control flow), state it can't update in place, a backend it can't trace."""
