# Kernel tier selection.
# ruff: noqa: UP031 - MicroPython code: % formatting
# Automatic order, fastest first (measured on real ulab, benchmarks/RESULTS.md): the native
# ember_kernels .mpy (faster than ulab, and the smallest heap), then ulab.numpy, then pure
# MicroPython.
# `get()` returns the first tier that imports; `get("ulab")` forces one (ImportError naming the
# reason when it can't load). `skipped()` says why each faster tier was passed over.
ORDER = ("native", "ulab", "pure")
_cache = {}
_why = {}


def _load(tier):
    if tier == "ulab":
        from . import _ulab as k
    elif tier == "native":
        from . import _native as k
    elif tier == "pure":
        from . import _pure as k
    else:
        raise ValueError("ember_micro: unknown kernel tier %r: use one of %s"
                         % (tier, ", ".join(ORDER)))
    return k


def get(tier=None):
    if tier is not None:
        if tier not in _cache:
            try:
                _cache[tier] = _load(tier)
            except ImportError as e:
                _why[tier] = str(e)
                raise ImportError("ember_micro: kernel tier %r unavailable: %s" % (tier, e))
        return _cache[tier]
    for t in ORDER:
        try:
            return get(t)
        except ImportError:
            pass
    raise ImportError("ember_micro: no kernel tier imports")


def skipped():
    """{tier: reason} for the tiers that failed to import (after get()/available())."""
    return dict(_why)


def available():
    out = []
    for t in ORDER:
        try:
            get(t)
            out.append(t)
        except ImportError:
            pass
    return out
