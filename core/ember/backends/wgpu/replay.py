"""``WgpuBackend.compile_tape``: an ``ember.jit`` tape as a captured :class:`~.capture.Program`.

The first call runs the tape's steps on the backend under ``engine.capture()`` (that run is
the call's result); later calls replay the program: one submit, pre-built bind groups, no
Python per op. Step kinds map onto the program's hooks:

- ``"op"`` (and a decorator's compiled programs): their dispatches, copies and uploads;
- ``"feed"``: the upload becomes a program feed, re-written from ``fn()`` at each call;
- ``"random"``: the Philox dispatch's seed and offset words are patched from ``fn()``;
- ``"assign"``: ``copy_into``'s region copy into the target's own buffer, in place.

Inputs are copied into buffers of the program's own (made contiguous first), so any layout of
a new input works; outputs are copied into fresh buffers at each call (no aliasing between
calls). The capture's int64 ops are checked (:mod:`.int_range`) against ranges of the inputs
and of the int state updated in place that every replay keeps to (:mod:`.replay_ranges`): a
call outside them captures again, and a capture those ranges refuse is made again under the
call's exact ones. The tape is read by duck typing (a step argument with an ``id`` and the
class name ``Slot`` is a slot): backends sit below ``ember.jit`` and don't import it.
"""

from __future__ import annotations

from ...errors import DTypeError, EmberError
from ..tape_steps import step_arguments
from . import replay_ranges
from .launch import contiguous
from .primitive import Storage, WgpuTensor

# philox_uniform's meta words: [n, blocks, offset_lo, offset_hi, seed_lo, seed_hi]
_PHILOX_OFFSET_WORD = 2
_MASK = 0xFFFFFFFF


def _philox_words(seed: int, offset: int) -> list[int]:
    return [offset & _MASK, (offset >> 32) & _MASK, seed & _MASK, (seed >> 32) & _MASK]



def compile_tape(backend, tape):
    """``run(input_prims) -> output_prims`` for ``tape`` (see the module docstring)."""
    rt = backend.rt
    engine = rt.engine
    state: dict = {"program": None, "hooks": []}  # hooks: (kind, number, fn) in step order
    states = replay_ranges.StateRanges(backend, tape)

    def capture(prims: list) -> list:
        ins = [_own_copy(rt, p) for p in prims]
        # this call's feeds and random draws, taken once whichever attempt below keeps
        drawn = {i: step.fn() for i, step in enumerate(tape.steps) if step.fn is not None}
        states.begin()
        try:
            return record(prims, ins, drawn, exact=False)
        except DTypeError:
            # refused under widened ranges: the call's exact ones may do (the refusal came
            # before the in-place writes, which come last and which the trace ran unrefused)
            return record(prims, ins, drawn, exact=True)

    def record(prims: list, ins: list, drawn: dict, exact: bool) -> list:
        # int64 ops are range-checked against these; a replay outside them captures again
        state["bounds"] = replay_ranges.input_bounds(backend, prims, exact)
        for own, r in zip(ins, state["bounds"]):
            own.storage.bound = r
        states.open(exact)
        env = dict(tape.constants)
        env.update(zip(tape.inputs, ins))
        hooks = []
        with engine.capture() as program:
            for i, step in enumerate(tape.steps):
                first = program.dispatches
                args, kwargs = (drawn[i], {}) if i in drawn else step_arguments(step, env)
                out = tape.method(step.name)(*args, **kwargs)
                if step.kind == "feed":
                    hooks.append(("feed", program.feed(out.block), step.fn))
                elif step.kind == "random" and program.dispatches > first:
                    _, _, seed, offset = args
                    words = program.words(first)
                    at = _PHILOX_OFFSET_WORD
                    if words[at:at + 4] != _philox_words(seed, offset):
                        raise EmberError("wgpu compile_tape: random_uniform's first dispatch "
                                         "doesn't hold (offset, seed) where expected")
                    hooks.append(("random", first, step.fn))
                if isinstance(step.out, tuple):
                    env.update(zip(step.out, out))
                elif step.out is not None:
                    env[step.out] = out
            outs = [env[o] for o in tape.outputs]
            program.inputs = [x.block for x in ins]
            program.outputs = [o.block for o in outs]
        states.close(env)
        state["program"], state["hooks"] = program, hooks
        state["layouts"] = [(o.shape, o.strides, o.offset, o.dtype) for o in outs]
        copies = {}
        for o in outs:  # the traced buffers belong to the program: hand out copies
            if id(o.block) not in copies:
                fresh = rt.allocator.alloc(o.block.size, "jit")
                engine.copy(o.block, fresh, o.block.size)
                copies[id(o.block)] = fresh
        return _wrap(rt, state["layouts"], [copies[id(o.block)] for o in outs])

    def run(prims: list) -> list:
        for hook in tape.hooks:
            hook()
        program = state["program"]
        if program is not None and not (replay_ranges.holds(backend, prims, state["bounds"])
                                        and states.ready()):
            program.close()
            program = state["program"] = None
        if program is None:
            return capture(prims)
        for kind, number, fn in state["hooks"]:
            if kind == "feed":
                program.write_feed(number, backend.upload_bytes(fn()[0]))
            else:
                _, _, seed, offset = fn()
                program.patch(number, _PHILOX_OFFSET_WORD, _philox_words(seed, offset))
        sources = [contiguous(rt, p) for p in prims]
        blocks = program.replay([s.block for s in sources])
        states.advance()
        return _wrap(rt, state["layouts"], blocks)

    return run


def _own_copy(rt, prim) -> WgpuTensor:
    """A contiguous copy of ``prim`` in a buffer of its own (the program's input buffer)."""
    source = contiguous(rt, prim)
    own = rt.empty(prim.shape, prim.dtype, "jit")
    if own.block.size:
        rt.engine.copy(source.block, own.block, min(source.block.size, own.block.size))
    return own


def _wrap(rt, layouts: list, blocks: list) -> list:
    """Primitives of the given (shape, strides, offset, dtype) over ``blocks`` (one Storage
    per block)."""
    storages: dict[int, Storage] = {}
    out = []
    for layout, block in zip(layouts, blocks):
        storage = storages.get(id(block))
        if storage is None:
            storage = storages[id(block)] = Storage(block, rt.allocator)
        out.append(WgpuTensor(storage, *layout))
    return out
