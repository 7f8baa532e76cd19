# ember_micro: run ember models exported with ember.export on MicroPython (and CPython).
# ruff: noqa: UP031 - MicroPython code: % formatting
#
#   import ember_micro
#   print(ember_micro.info())                 # which tier runs, and why
#   m = ember_micro.Model("model.emb")        # or Model(path, tier="native"|"ulab"|"pure")
#   print(m.tier, m.predict(image_bytes))
from .kernels import available
from .kernels import get as get_kernels
from .model import Model, ModelError

__all__ = ["LastLayer", "Model", "ModelError", "available", "get_kernels", "info", "load"]
__version__ = "0.2.0"


def load(path, tier=None, **kw):
    return Model(path, tier, **kw)


def LastLayer(model):  # noqa: N802 - builds the class in tune.py, imported on first use
    """Fine-tune `model`'s last Linear layer on the board (see tune.py). The training code is
    imported only here, so inference-only boards don't spend heap on it."""
    from .tune import LastLayer as cls

    return cls(model)


def info():
    """What this board offers: the tier Model() picks, why, and what was passed over.

    {'tier': 'native', 'why': 'native: the fastest tier, ember_kernels imports',
     'available': ['native', 'pure'], 'skipped': {'ulab': "no module named 'ulab'"},
     'float_bits': 32, 'heap_free': 201344, 'platform': 'linux'}
    """
    import sys

    from . import kernels

    avail = available()
    skipped = kernels.skipped()
    for t in avail:
        skipped.pop(t, None)
    tier = avail[0] if avail else None
    passed = ["%s (%s)" % (t, skipped[t]) for t in kernels.ORDER
              if t in skipped and kernels.ORDER.index(t) < kernels.ORDER.index(tier)]
    if tier is None:
        why = "no tier imports"
    elif passed:
        why = "%s: faster tiers unavailable: %s" % (tier, "; ".join(passed))
    else:
        why = "%s: the fastest tier, it imports" % tier
    bits = 32 if 1.0 + 1e-10 == 1.0 else 64
    try:
        import gc

        gc.collect()
        free = gc.mem_free()
    except (ImportError, AttributeError):
        free = None
    return {"tier": tier, "why": why, "available": avail, "skipped": skipped,
            "float_bits": bits, "heap_free": free, "platform": sys.platform}
