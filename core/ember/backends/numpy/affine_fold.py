"""Per-channel constant arithmetic folded: into the conv before it, or into one multiply and
one add (numpy tapes).

Exporters write an inference BatchNormalization as ``(y - mean) * inv * scale + bias`` (ember's
own ONNX export, TF-style models), and a traced trace folds each constant into an array of
the activations' full size: four passes over the activations after every conv, each reading
a constant as large. When a conv's weight and bias are constants and its result is read once,
by an add/sub/mul/div with a constant that is one value per output channel (checked against
the shapes the first call recorded), that chain folds into the conv's weight and bias
(:func:`ember.contract.batchnorm_fold.fold_chain_into`, float64): one step instead of five.
A run of three or more such steps after anything else (a BatchNormalization after a Concat,
then a Caffe-style Scale's Mul and Add: DenseNet) becomes ``x * s + t`` with ``s`` and ``t``
one value per channel (:func:`fold_affine_chains`): two passes instead of four.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...contract.batchnorm_fold import chain_affine, fold_chain_into, per_channel
from ...contract.program import Slot, Step, Tape

_ARITH = {"float_add": "add", "float_sub": "sub", "float_mul": "mul", "float_div": "div"}


def _index(tape: Tape) -> tuple:
    """What both folds start from: slot -> the steps reading it, the slots no fold may drop
    (inputs, outputs, constants), copies of the steps and constants, the first unused slot."""
    reads: dict[int, list[int]] = {}
    for k, step in enumerate(tape.steps):
        for s in step.inputs():
            reads.setdefault(s, []).append(k)
    pinned = set(tape.outputs) | set(tape.inputs) | set(tape.constants)
    steps, constants = list(tape.steps), dict(tape.constants)
    fresh_slot = max([*constants, *(s for st in steps for s in (*st.inputs(), *st.outputs())),
                      *tape.inputs], default=-1) + 1
    return reads, pinned, steps, constants, fresh_slot


def _rebuilt(tape: Tape, steps: list, constants: dict, dropped: set[int]) -> Tape:
    """``tape`` with ``steps`` less the ``dropped`` ones, and the constants still read."""
    kept = [s for k, s in enumerate(steps) if k not in dropped]
    used = {s for st in kept for s in st.inputs()} | set(tape.outputs)
    constants = {s: v for s, v in constants.items() if s in used}
    return dataclasses.replace(tape, constants=constants, steps=kept)


def fold_conv_affine(tape: Tape, shapes: dict[int, tuple]) -> Tape:
    """``tape`` with each foldable chain folded (the same tape when none is); ``shapes``:
    slot -> ``(shape, dtype)`` it had on a run."""
    reads, pinned, steps, constants, fresh_slot = _index(tape)
    dropped: set[int] = set()
    for k, step in enumerate(tape.steps):
        w, b = _conv_constants(tape, step)
        if w is None:
            continue
        cur, chain = step.out, []
        while cur not in pinned and len(reads.get(cur, ())) == 1:
            r = reads[cur][0]
            c = _per_channel_operand(tape, tape.steps[r], cur, w, shapes)
            if c is None:
                break
            chain.append((_ARITH[tape.steps[r].name], c))
            dropped.add(r)
            cur = tape.steps[r].out
        if not chain:
            continue
        w2, b2 = fold_chain_into(w, b, chain)
        constants[fresh_slot], constants[fresh_slot + 1] = w2, b2
        args = (step.args[0], Slot(fresh_slot), Slot(fresh_slot + 1), *step.args[3:])
        steps[k] = Step("conv", args, {}, cur, "op")
        fresh_slot += 2
    if not dropped:
        return tape
    return _rebuilt(tape, steps, constants, dropped)


def fold_affine_chains(tape: Tape, shapes: dict[int, tuple]) -> Tape:
    """``tape`` with each run of three or more per-channel constant add/sub/mul/div steps
    (each result read once, by the next) replaced by a multiply and an add by per-channel
    vectors (the same tape when there is none); ``shapes`` as for :func:`fold_conv_affine`.
    The multiply writes the run's first result slot and the add its last, so the facts the
    first call recorded for them hold."""
    reads, pinned, steps, constants, fresh_slot = _index(tape)
    consumed: set[int] = set()
    dropped: set[int] = set()
    for k, step in enumerate(tape.steps):
        start = None if k in consumed else _chain_start(tape, step, shapes)
        if start is None:
            continue
        value, ref = start
        run, chain, cur, r = [], [], value, k
        while True:
            c = _per_channel_operand(tape, tape.steps[r], cur, ref, shapes)
            if c is None:
                break
            chain.append((_ARITH[tape.steps[r].name], c))
            run.append(r)
            cur = tape.steps[r].out
            if cur in pinned or len(reads.get(cur, ())) != 1:
                break
            r = reads[cur][0]
        if len(run) < 3:
            continue
        scale, shift = chain_affine(ref, chain)
        per = (1, ref.shape[0]) + (1,) * (ref.ndim - 2)
        constants[fresh_slot] = scale.astype(ref.dtype).reshape(per)
        constants[fresh_slot + 1] = shift.astype(ref.dtype).reshape(per)
        first, last = tape.steps[run[0]].out, tape.steps[run[-1]].out
        steps[run[0]] = Step("float_mul", (Slot(value), Slot(fresh_slot)), {}, first, "op")
        steps[run[-1]] = Step("float_add", (Slot(first), Slot(fresh_slot + 1)), {}, last, "op")
        consumed.update(run)
        dropped.update(run[1:-1])
        fresh_slot += 2
    if not consumed:
        return tape
    return _rebuilt(tape, steps, constants, dropped)


def _chain_start(tape: Tape, step: Step, shapes: dict):
    """``(value, reference)`` when ``step`` is a float add/sub/mul/div of a computed value
    (N, C, ...) by a constant: ``reference`` is a weight-shaped stand-in, ``(C, 1, ...)`` of
    the value's dtype, that :func:`per_channel` reads the channel count and rank from."""
    if (step.kind != "op" or step.name not in _ARITH or step.name in tape.extras or step.kwargs
            or len(step.args) != 2 or not all(isinstance(a, Slot) for a in step.args)):
        return None
    values = [a.id for a in step.args if a.id not in tape.constants]
    if len(values) != 1 or values[0] not in shapes:
        return None
    shape, dtype = shapes[values[0]]
    if len(shape) < 2 or dtype.kind != "f":
        return None
    return values[0], np.broadcast_to(np.zeros((), dtype), (shape[1],) + (1,) * (len(shape) - 1))


def _conv_constants(tape: Tape, step: Step):
    """``(weight, bias or None)`` of a float conv whose weight (and bias) are constants;
    ``(None, None)`` for any other step."""
    if step.kind != "op" or step.name != "conv" or step.kwargs or len(step.args) != 7 or (
            step.name in tape.extras or not isinstance(step.out, int)):
        return None, None
    _, w, b = step.args[:3]
    w = tape.constants.get(w.id) if isinstance(w, Slot) else None
    if type(w) is not np.ndarray or w.dtype.kind != "f" or w.ndim < 3:
        return None, None
    if b is None:
        return w, None
    b = tape.constants.get(b.id) if isinstance(b, Slot) else None
    if type(b) is not np.ndarray or b.dtype != w.dtype or b.shape != w.shape[:1]:
        return None, None
    return w, b


def _per_channel_operand(tape: Tape, step: Step, value: int, w, shapes: dict):
    """The constant ``step`` combines ``value`` with, when the step is a foldable add, sub,
    mul or div (``value`` on the left of sub and div) by a per-channel constant that leaves
    ``value``'s shape and dtype as they are; else None."""
    if (step.kind != "op" or step.name not in _ARITH or step.name in tape.extras or step.kwargs
            or len(step.args) != 2 or not isinstance(step.out, int)):
        return None
    a, b = step.args
    if not (isinstance(a, Slot) and isinstance(b, Slot)):
        return None
    if b.id == value and a.id != value and step.name in ("float_add", "float_mul"):
        a, b = b, a
    if a.id != value or b.id == value:
        return None
    c = tape.constants.get(b.id)
    if (type(c) is not np.ndarray or c.dtype != w.dtype or value not in shapes
            or shapes.get(step.out) != shapes[value] or per_channel(c, w) is None):
        return None
    return c
