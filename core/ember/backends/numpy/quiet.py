"""numpy's floating-point warnings off around the backend's calls: IEEE results (x/0 = inf,
log(-1) = NaN) are what the contract asks for, not errors to report.

``np.errstate`` costs about 1 µs per use, as much as a small op; this sets numpy's error-state
context variable directly (what ``np.errstate`` does inside), falling back to ``np.errstate``
on a numpy without it.
"""

from __future__ import annotations

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    _IGNORE_ALL = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):  # numpy < 2 or a changed private API
    _extobj_contextvar = None


class _Quiet:
    __slots__ = ("token",)

    def __enter__(self):
        self.token = _extobj_contextvar.set(_IGNORE_ALL)

    def __exit__(self, *exc_info):
        _extobj_contextvar.reset(self.token)


def quiet():
    """A context manager: no floating-point warnings inside (``with quiet(): ...``)."""
    return _Quiet() if _extobj_contextvar is not None else np.errstate(all="ignore")


def quietly(fn):
    """``fn(*args)`` as a backend method run with floating-point warnings off."""
    if _extobj_contextvar is None:

        def op(self, *args):
            with np.errstate(all="ignore"):
                return fn(*args)

        return op
    var, ignore = _extobj_contextvar, _IGNORE_ALL

    def op(self, *args):
        token = var.set(ignore)
        try:
            return fn(*args)
        finally:
            var.reset(token)

    return op
