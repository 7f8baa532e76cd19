"""``NumpyBackend.compile_tape``: an ``ember.jit`` tape as a list of closures over raw arrays.

Each step is bound once: its backend method resolved, its constant arguments (parameters,
folded values) and literals pre-bound, its slots turned into places in a list, and each
value dropped after its last read (its memory goes back while it is still in cache).

The first call runs the steps as bound and records, per value, its shape and dtype and
whether the step made it *fresh*: an op of :data:`FRESH` (its numpy form returns a new array)
whose result is a writeable ``ndarray`` sharing no memory with the step's inputs. Later calls
run a program where a step of :data:`INPLACE` (a numpy ufunc, which takes ``out=``) writes
its result into an operand that a step made fresh, that no other step, output or constant
reads, and that has the result's shape and dtype: conv -> add bias -> relu writes into one
buffer. A tape is traced per shape signature, so the first call's shapes hold for the later
ones; were one to differ, numpy refuses the ``out=`` (an error, never a wrong value). Inputs
and constants are never written; outputs are this call's own arrays, as with
:func:`~ember.contract.program.compile_generic`. With the recorded shapes, three rewrites of
the bound program: a conv followed by per-channel constant arithmetic becomes one conv, and
a longer run of such arithmetic after anything else one multiply and one add
(:mod:`.affine_fold`), and a matmul by a constant broadcast over its batch dims (a folded
``expand``) multiplies by the one matrix (one GEMM, not one per batch).

Step kinds: ``"feed"`` and ``"random"`` steps call ``fn()`` for this call's arguments;
``"assign"`` steps are ``copy_into`` (no result); a decorator's compiled programs
(``tape.extras``) are called like methods. Hooks run before the steps.
"""

from __future__ import annotations

import numpy as np

from ...contract.program import Slot, Tape
from .affine_fold import fold_affine_chains, fold_conv_affine
from .ops import UFUNCS
from .quiet import quiet

#: methods whose numpy form returns a new array no input aliases (checked on the first call)
FRESH = frozenset(UFUNCS) | {
    "float_matmul", "int_matmul", "conv", "conv_transpose", "relu", "float_sigmoid", "gelu",
    "silu", "softmax", "log_softmax", "layer_norm", "max_pool", "avg_pool", "cat", "where",
    "float_pow",
}
#: methods computed by one numpy ufunc that may write into an operand: name -> (ufunc,
#: literal operands appended after the step's own)
INPLACE = {name: (fn, ()) for name, fn in UFUNCS.items()}
INPLACE["relu"] = (np.maximum, (0,))


def compile_tape(backend, tape: Tape):
    """``run(input_prims) -> output_prims`` for ``tape`` (see the module docstring)."""
    first = _Layout(tape)
    state: dict = {}

    def run(prims: list) -> list:
        for hook in tape.hooks:
            hook()
        program = state.get("program")
        if program is not None:
            return state["layout"].execute(program, prims)
        facts: dict[int, tuple] = {s: (p.shape, p.dtype, False) for s, p in
                                   zip(tape.inputs, prims) if type(p) is np.ndarray}
        plain = [(_recording(_bind(tape, step, first.index, backend), step, first.index, facts),
                  d) for step, d in zip(tape.steps, first.dead)]
        outs = first.execute(plain, prims)
        shapes = {s: f[:2] for s, f in facts.items()}
        folded = fold_affine_chains(fold_conv_affine(tape, shapes), shapes)
        layout = first if folded is tape else _Layout(folded)
        reuse = _reuse_plan(backend, folded, facts)
        state["program"] = [(_bind(folded, step, layout.index, backend, reuse.get(k),
                                   _unbroadcast(folded, step, facts),
                                   facts.get(step.out, (None, None))[1]), d)
                            for k, (step, d) in enumerate(zip(folded.steps, layout.dead))]
        state["layout"] = layout
        run.reused, run.steps = len(reuse), len(folded.steps)
        return outs

    # set once the first call planned them: the steps writing in place, the steps run
    run.reused = run.steps = None
    return run


class _Layout:
    """A tape's values as places in a list: constants pre-set, each value dropped after
    its last read."""

    def __init__(self, tape: Tape):
        self.index = _slot_index(tape)
        self.template: list = [None] * len(self.index)
        for s, v in tape.constants.items():
            self.template[self.index[s]] = v
        self.inputs = [self.index[s] for s in tape.inputs]
        self.outputs = [self.index[s] for s in tape.outputs]
        self.dead = _dead_after(tape, self.index)

    def execute(self, program: list, prims: list) -> list:
        env = self.template.copy()
        for i, p in zip(self.inputs, prims):
            env[i] = p
        with quiet():
            for step, drop in program:
                step(env)
                for i in drop:
                    env[i] = None
        return [env[o] for o in self.outputs]


def _slot_index(tape: Tape) -> dict[int, int]:
    """Every slot the tape names -> its place in the value list."""
    index: dict[int, int] = {}
    for s in [*tape.inputs, *tape.constants, *tape.outputs]:
        index.setdefault(s, len(index))
    for step in tape.steps:
        for s in [*step.inputs(), *step.outputs()]:
            index.setdefault(s, len(index))
    return index


def _dead_after(tape: Tape, index: dict[int, int]) -> list[tuple[int, ...]]:
    """Per step, the places no later step (nor the outputs) reads; constants stay."""
    keep = set(tape.outputs) | set(tape.constants) | set(tape.inputs)
    seen: set[int] = set(keep)
    out: list[tuple[int, ...]] = []
    for step in reversed(tape.steps):
        here = [s for s in dict.fromkeys([*step.inputs(), *step.outputs()]) if s not in seen]
        seen.update(here)
        out.append(tuple(index[s] for s in here))
    out.reverse()
    return out


def _value(arg, tape: Tape, index: dict[int, int], bound: dict | None = None):
    """``(place, None)`` for a slot computed at run time, ``(None, value)`` for a literal or
    a constant (pre-bound; ``bound``: slot -> the value to bind instead); lists and tuples
    holding slots give ``(getter, None)``."""
    if isinstance(arg, Slot):
        if bound and arg.id in bound:
            return None, bound[arg.id]
        if arg.id in tape.constants:
            return None, tape.constants[arg.id]
        return index[arg.id], None
    if isinstance(arg, (list, tuple)):
        parts = [_value(a, tape, index) for a in arg]
        if all(p is None for p, _ in parts):
            return None, type(arg)(v for _, v in parts)
        kind = type(arg)
        getters = [_getter(p, v) for p, v in parts]
        return (lambda env: kind(g(env) for g in getters)), None
    return None, arg


def _getter(place, value):
    if place is None:
        return lambda env: value
    if callable(place):
        return place
    return lambda env: env[place]


def _bind(tape: Tape, step, index: dict[int, int], backend, target: int | None = None,
          bound: dict | None = None, dtype=None):
    """The step as ``step(env)`` writing its results into ``env``; ``target``: the operand
    (argument position) an :data:`INPLACE` step writes into, ``dtype`` its result's;
    ``bound``: constants bound in another form (slot -> value)."""
    out = step.out
    if step.fn is not None:  # feed, random: this call's arguments
        method, fn = tape.method(step.name), step.fn
        return _store(lambda env: method(*fn()), out, index)
    if target is not None:
        return _inplace(tape, step, index, target, dtype)
    method = tape.method(step.name)
    parts = [_value(a, tape, index, bound) for a in step.args]
    kw = {k: _value(v, tape, index, bound) for k, v in step.kwargs.items()}
    places = [p for p, _ in parts if p is not None]
    if not kw and len(places) == 1 and isinstance(parts[0][0], int):
        a, rest = parts[0][0], tuple(v for _, v in parts[1:])
        if all(p is None for p, _ in parts[1:]):
            return _store(lambda env: method(env[a], *rest), out, index)
    if not kw and len(parts) == 2 and all(isinstance(p, int) for p, _ in parts):
        a, b = parts[0][0], parts[1][0]
        return _store(lambda env: method(env[a], env[b]), out, index)
    getters = [_getter(p, v) for p, v in parts]
    kwgetters = {k: _getter(p, v) for k, (p, v) in kw.items()}
    return _store(lambda env: method(*[g(env) for g in getters],
                                     **{k: g(env) for k, g in kwgetters.items()}), out, index)


def _store(call, out, index: dict[int, int]):
    if out is None:
        return call
    if isinstance(out, tuple):
        places = [index[o] for o in out]

        def step(env):
            for i, v in zip(places, call(env)):
                env[i] = v

        return step
    o = index[out]

    def step(env):
        env[o] = call(env)

    return step


def _inplace(tape: Tape, step, index: dict[int, int], target: int, dtype):
    """An :data:`INPLACE` step writing into its operand at position ``target``; its literal
    operands as scalars of the result's ``dtype`` (a Python int costs a conversion a call)."""
    ufunc, extra = INPLACE[step.name]
    parts = [_value(a, tape, index) for a in step.args] + [(None, dtype.type(e)) for e in extra]
    t, o = parts[target][0], index[step.out]
    if len(parts) == 1:
        def unary(env):
            x = env[t]
            env[o] = ufunc(x, out=x)

        return unary
    (p0, v0), (p1, v1) = parts
    if p0 is not None and p1 is not None:
        def both(env):
            env[o] = ufunc(env[p0], env[p1], out=env[t])

        return both
    if p0 is not None:
        def left(env):
            x = env[t]
            env[o] = ufunc(x, v1, out=x)

        return left

    def right(env):
        x = env[t]
        env[o] = ufunc(v0, x, out=x)

    return right


def _recording(bound, step, index: dict[int, int], facts: dict[int, tuple]):
    """``bound`` noting, per value (slot) it makes, ``(shape, dtype, fresh)`` in ``facts``."""
    ins = [index[s] for s in step.inputs()]
    outs = step.outputs()
    fresh_op = step.kind == "op" and step.name in FRESH

    def step_(env):
        operands = [env[i] for i in ins]
        bound(env)
        for i in outs:
            v = env[index[i]]
            if type(v) is np.ndarray:
                fresh = fresh_op and v.flags.writeable and not any(
                    isinstance(a, np.ndarray) and np.may_share_memory(v, a) for a in operands)
                facts[i] = (v.shape, v.dtype, fresh)

    return step_


def _reuse_plan(backend, tape: Tape, facts: dict) -> dict[int, int]:
    """step number -> the operand position it may write into (see the module docstring)."""
    reads: dict[int, int] = {}
    for step in tape.steps:
        for s in step.inputs():
            reads[s] = reads.get(s, 0) + 1
    pinned = set(tape.outputs) | set(tape.constants) | set(tape.inputs)
    fresh = {i for i, (_, _, f) in facts.items() if f}
    plan: dict[int, int] = {}
    for k, step in enumerate(tape.steps):
        if (step.kind != "op" or step.name not in INPLACE or step.name in tape.extras
                or step.kwargs or step.fn is not None
                or not _own_method(backend, step.name) or isinstance(step.out, tuple)
                or step.out is None or step.out not in facts):
            continue
        result = facts[step.out][:2]
        for pos, a in enumerate(step.args):
            if (isinstance(a, Slot) and a.id not in pinned and reads.get(a.id) == 1
                    and a.id in fresh and facts[a.id][:2] == result):
                plan[k] = pos
                fresh.add(step.out)  # the operand's buffer, now the result's
                break
    return plan


def _own_method(backend, name: str) -> bool:
    """Whether ``backend`` runs ``name`` with the numpy backend's own ufunc method (a
    subclass may override it)."""
    from .ops import NumpyOps
    from .nn import NumpyNNOps

    own = getattr(NumpyOps, name, None) if name in UFUNCS else getattr(NumpyNNOps, name, None)
    return getattr(type(backend), name, None) is own


def _unbroadcast(tape: Tape, step, facts: dict) -> dict | None:
    """For a matmul by a constant broadcast over its batch dims (stride 0: a traced
    ``expand`` of a weight, folded), the constant's one matrix (slot -> matrix) where the
    product keeps its shape without them: numpy then runs one GEMM, not one per batch."""
    if step.kind != "op" or step.name not in ("float_matmul", "int_matmul") or len(
            step.args) != 2 or not all(isinstance(a, Slot) for a in step.args):
        return None
    out = facts.get(step.out) if isinstance(step.out, int) else None
    for a, other in (step.args, step.args[::-1]):
        c = tape.constants.get(a.id)
        fact = facts.get(other.id)
        if (type(c) is np.ndarray and c.ndim > 2 and not any(c.strides[:-2])
                and out is not None and fact is not None
                and fact[0][:-2] == out[0][:-2] and len(fact[0]) == len(out[0])):
            return {a.id: c[(0,) * (c.ndim - 2)]}
    return None
