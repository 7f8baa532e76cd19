"""What the backends that compile ``ember.jit`` tapes (wgpu, wasm) share: a step's arguments.

The program types come from the contract layer (:mod:`ember.contract.program`).
"""

from __future__ import annotations

from ..contract.program import Slot


def resolve(arg, env: dict):
    """``arg`` with every slot (also inside lists and tuples) replaced by its value in ``env``."""
    if isinstance(arg, Slot):
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
