"""``WasmBackend.compile_tape``: an ``ember.jit`` tape as a recorded list of kernel calls.

The first call runs the tape's steps with the runtime's :class:`Recorder` on: every kernel
call is recorded with its arguments (addresses included) and the metadata words it read, and
every block allocated meanwhile is kept alive by the program, so the addresses stay valid.
Later calls copy the inputs into the program's input blocks and replay the calls: no Python
per op above the call itself, no allocation, no shape logic; the metadata words each call
read are staged once in the program's memory and selected with ``em_use_meta``. Outputs are
copied into fresh blocks at each call (no aliasing between calls).

Steps whose work depends on host data are re-run through the backend at each replay and their
results copied into the recorded blocks: ``"feed"`` steps (values computed on the host each
call), ``"random"`` steps (fresh seeds), and any step that uploaded or read data. ``"assign"``
steps (``copy_into``) are plain recorded copies into the target's own memory. The tape is
read by duck typing (a step argument whose class is named ``Slot`` is a slot): backends sit
below ``ember.jit`` and don't import it.
"""

from __future__ import annotations

from ...errors import EmberError
from ..tape_steps import step_arguments
from .tensor import WasmTensor


class Recorder:
    """What a capture collects: kernel calls ``(fn, args, meta)`` and the blocks to keep."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.blocks: list = []
        #: set when the step being run uploaded or read data (it can't be replayed as calls)
        self.data_dependent = False

    def call(self, fn, args: tuple, meta: bytes) -> None:
        self.calls.append((fn, args, meta))

    def keep(self, block) -> None:
        self.blocks.append(block)



def compile_tape(backend, tape):
    """``run(input_prims) -> output_prims`` for ``tape`` (see the module docstring)."""
    rt = backend.rt
    memcpy = rt.fn("em_memcpy")
    state: dict = {}

    def capture(prims: list) -> list:
        recorder = Recorder()
        rt.recorder = recorder
        try:
            ins = [_own_copy(rt, p) for p in prims]
            env = dict(tape.constants)
            env.update(zip(tape.inputs, ins))
            program: list = []  # a tuple of recorded calls, or [step, env, outputs] to re-run
            for step in tape.steps:
                start = len(recorder.calls)
                recorder.data_dependent = False
                args, kwargs = step_arguments(step, env)
                out = tape.method(step.name)(*args, **kwargs)
                outs = out if isinstance(step.out, tuple) else (out,)
                if step.out is not None:
                    env.update(zip(step.outputs(), outs))
                if step.kind in ("feed", "random") or recorder.data_dependent:
                    del recorder.calls[start:]
                    # a list, not a tuple: run() tells re-runs from recorded calls by type
                    program.append([step, env, outs if step.out is not None else ()])
                elif len(recorder.calls) > start:
                    program.append(tuple(recorder.calls[start:]))
            start = len(recorder.calls)
            results = [rt.contiguous(env[o]) for o in tape.outputs]
            program.append(tuple(recorder.calls[start:]))
        finally:
            rt.recorder = None
        staged, program = _stage_meta(rt, [p for p in program if p])
        state.update(program=program, ins=ins, results=results, blocks=recorder.blocks,
                     meta=staged)
        return _fresh(rt, memcpy, results)

    def run(prims: list) -> list:
        for hook in tape.hooks:
            hook()
        if not state:
            return capture(prims)
        for own, p in zip(state["ins"], prims):
            p = rt.contiguous(p)
            memcpy(own.ptr, p.ptr, own.numel * own.dtype.itemsize)
        use_meta, current = rt.fn("em_use_meta"), 0
        try:
            for item in state["program"]:
                if isinstance(item, tuple):
                    for fn, args, meta in item:
                        if meta and meta != current:
                            use_meta(meta)
                            current = meta
                        if fn(*args):
                            raise EmberError(f"wasm: a replayed kernel failed ({args})")
                else:
                    if current:  # a re-run writes the scratch, as eager ops do
                        use_meta(0)
                        current = 0
                    _rerun(backend, *item)
        finally:
            if current:
                use_meta(0)
        return _fresh(rt, memcpy, state["results"])

    return run


def _stage_meta(rt, program: list):
    """Every recorded call's metadata words copied once into a block of the program's own;
    calls then carry the address (``em_use_meta`` switches the kernels to it: one call
    instead of a write per op). Returns the block and the program with addresses."""
    offsets: dict[int, int] = {}
    chunks: list[bytes] = []
    size = 0
    for item in program:
        for _, _, meta in item if isinstance(item, tuple) else ():
            if meta is not None and id(meta) not in offsets:
                offsets[id(meta)] = size
                padded = meta + bytes(-len(meta) % 8)
                chunks.append(padded)
                size += len(padded)
    block = rt.block(max(size, 8), "jit")
    rt.host.write(block.ptr, b"".join(chunks))
    staged = [
        tuple((fn, args, None if meta is None else block.ptr + offsets[id(meta)])
              for fn, args, meta in item) if isinstance(item, tuple) else item
        for item in program
    ]
    return block, staged


def _rerun(backend, step, env: dict, targets) -> None:
    """Run a data-dependent step again and copy its results into the recorded blocks."""
    args, kwargs = step_arguments(step, env)
    out = getattr(backend, step.name)(*args, **kwargs)
    for target, value in zip(targets, out if isinstance(step.out, tuple) else (out,)):
        backend.copy_into(target, value)


def _own_copy(rt, prim: WasmTensor) -> WasmTensor:
    """A contiguous copy of ``prim`` in a block of its own (the program's input block)."""
    src = rt.contiguous(prim)
    own = rt.empty(prim.shape, prim.dtype, "jit")
    rt.call("em_memcpy", own.ptr, src.ptr, own.numel * own.dtype.itemsize)
    return own


def _fresh(rt, memcpy, results: list) -> list:
    out = []
    for r in results:
        fresh = rt.empty(r.shape, r.dtype, "jit")
        memcpy(fresh.ptr, r.ptr, r.numel * r.dtype.itemsize)
        out.append(fresh)
    return out
