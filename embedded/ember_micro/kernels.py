# Kernel tier selection: ulab.numpy when it imports, else the native ember_kernels .mpy, else
# ruff: noqa: UP031 - MicroPython code: % formatting, inline compares
# pure MicroPython. `get()` returns the tier module; `get("pure")` forces one.
_cache = {}


def _load(tier):
    if tier == "ulab":
        from . import _ulab as k
    elif tier == "native":
        from . import _native as k
    elif tier == "pure":
        from . import _pure as k
    else:
        raise ValueError("ember_micro: unknown kernel tier %r: use 'ulab', 'native' or 'pure'"
                         % (tier,))
    return k


def get(tier=None):
    if tier is not None:
        if tier not in _cache:
            _cache[tier] = _load(tier)
        return _cache[tier]
    for t in ("ulab", "native", "pure"):
        try:
            return get(t)
        except ImportError:
            pass
    raise ImportError("ember_micro: no kernel tier imports")


def available():
    out = []
    for t in ("ulab", "native", "pure"):
        try:
            get(t)
            out.append(t)
        except ImportError:
            pass
    return out
