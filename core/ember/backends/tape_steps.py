"""What the backends that compile ``ember.jit`` tapes (wgpu, wasm) share: a step's arguments.

The tape is read by duck typing — an argument whose class is named ``Slot`` is a slot —
because backends sit below ``ember.jit`` and don't import it.
"""

from __future__ import annotations


def resolve(arg, env: dict):
    """``arg`` with every slot (also inside lists and tuples) replaced by its value in ``env``."""
    if type(arg).__name__ == "Slot":
        return env[arg.id]
    if isinstance(arg, (list, tuple)):
        return type(arg)(resolve(a, env) for a in arg)
    return arg


def step_arguments(step, env: dict) -> tuple[tuple, dict]:
    """``(args, kwargs)`` for running ``step`` now: a feed or random step's ``fn()`` gives this
    call's values; other steps read their slots from ``env``."""
    if step.fn is not None:
        return step.fn(), {}
    return resolve(step.args, env), resolve(step.kwargs, env)
