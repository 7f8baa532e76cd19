"""Passes over a program (:mod:`ember.contract.program`), run before a target compiles it:
constant folding and dead-step elimination.

>>> import ember
>>> from ember.contract.program import Slot, Step, Tape
>>> b = ember.get_backend("numpy")
>>> steps = [Step("full", ((2,), 3.0, ember.float32), {}, 1),             # folded
...          Step("float_mul", (Slot(0), Slot(0)), {}, 2),                # dead
...          Step("float_add", (Slot(0), Slot(1)), {}, 3)]
>>> tape = eliminate_dead(fold_constants(Tape(b, [0], {}, steps, [3], None)))
>>> [s.name for s in tape.steps]
['float_add']
"""

from __future__ import annotations

import dataclasses

from .program import Step, Tape, _getter


def fold_constants(tape: Tape) -> Tape:
    """Run once, now, the op steps that read only constants never assigned (and creations
    with no input at all): their results become constants."""
    assigned = tape.assigned()
    known = {s for s in tape.constants if s not in assigned}
    constants, steps = dict(tape.constants), []
    for step in tape.steps:
        outs = step.outputs()
        if (step.kind == "op" and outs and not assigned.intersection(outs)
                and all(i in known for i in step.inputs())):
            args = [_getter(a)(constants) for a in step.args]
            value = tape.method(step.name)(*args, **step.kwargs)
            constants.update(zip(outs, value if isinstance(step.out, tuple) else (value,)))
            known.update(outs)
        else:
            steps.append(step)
    return dataclasses.replace(tape, constants=constants, steps=steps)


def eliminate_dead(tape: Tape) -> Tape:
    """Drop the steps whose results reach no output and no in-place update (random steps
    stay: their draws keep the generator where the eager path leaves it)."""
    live = set(tape.outputs)
    kept: list[Step] = []
    for step in reversed(tape.steps):
        if step.kind in ("assign", "random") or live.intersection(step.outputs()):
            live.update(step.inputs())
            kept.append(step)
    kept.reverse()
    constants = {s: p for s, p in tape.constants.items() if s in live}
    return dataclasses.replace(tape, constants=constants, steps=kept)


def optimize(tape: Tape) -> Tape:
    return eliminate_dead(fold_constants(tape))

