"""``ember.jit``: capture a function (an inference forward, a whole training step) once per
shape signature and replay it with no Python per op.

``ember.jit`` is this package and the decorator at once (the module is callable)::

    step = ember.jit(train_step)           # or @ember.jit above the def
    ember.jit.JitError                      # the error for what can't be captured

>>> import ember
>>> double = ember.jit(lambda x: x * 2)
>>> [double(ember.ones(2)).tolist() for _ in range(3)][-1]
[2.0, 2.0]
"""

from __future__ import annotations

import sys
import types

from .chain import benefits, compiles
from .errors import JitError
from .function import Jitted, jit
from ..contract.program import Slot, Step, Tape, compile_generic, replay
from ..ops.state import assign, feed, on_replay, state_replaced, tracing
from .state import freeze


class _CallableModule(types.ModuleType):
    """``ember.jit(fn)`` calls :func:`~ember.jit.function.jit`."""

    def __call__(self, fn=None, **options):
        return jit(fn, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "JitError", "Jitted", "benefits", "compiles", "Slot", "Step", "Tape", "assign",
    "compile_generic", "feed", "freeze", "jit",
    "on_replay", "replay", "state_replaced", "tracing",
]
