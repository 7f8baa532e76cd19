"""Recording one call into a :class:`~ember.contract.program.Tape`.

While a function is traced, the innermost backend's op methods are shadowed by instance
attributes that run the op and record a :class:`~ember.contract.program.Step` (only the outermost
call: a composite's inner ops are part of its step); reads of values raise
:class:`~ember.jit.JitError`. Everything above that backend (Tensor wrappers, dispatch,
autodiff bookkeeping, the optimizer's Python) runs during the trace and costs nothing at
replay.

The tracer is the :class:`~ember.ops.state.Recorder` of the call: the in-place updates, feeds
and replay hooks that code keeping state reports through :mod:`ember.ops.state` become steps
and hooks of the tape (recorded by :mod:`ember.jit.state`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from .. import random as _random
from ..contract import registry
from ..contract.registry import Kind
from .errors import JitError
from ..ops import state as _ops_state
from .state import StateRecorder, frozen
from ..contract.program import Slot, Step, Tape

_READS = ("to_data", "to_data_async")
_VIEWS = {op.name for op in registry.ops(Kind.MOVEMENT)}


class Tracer(StateRecorder):
    """Records the ops run on ``backend`` (an innermost backend) between :meth:`install` and
    :meth:`remove`."""

    def __init__(self, backend, chain=None):
        self.backend = backend
        #: the decorators above ``backend`` (``chain`` is the top one): their compilers' runs
        #: are steps too
        self.decorators = []
        while chain is not None and chain is not backend:
            self.decorators.append(chain)
            chain = chain.inner
        self.extras: dict[str, Callable] = {}
        self.slots: dict[int, int] = {}  # id(primitive) -> slot
        self.keep: list = []  # every primitive seen stays alive, so ids stay unique
        self.constants: dict[int, object] = {}
        self.inputs: list[int] = []
        self.steps: list[Step] = []
        self.producer: dict[int, str] = {}  # slot -> the op that made it
        self.hooks: list[Callable[[], None]] = []
        self.takes: list[tuple] = []  # generator draws not yet matched to a random step
        self.updates: dict[int, list] = {}  # id(tensor) -> [tensor, target, source, settle]
        self.owned: set[int] = set()  # constants replaced by private copies the tape writes
        #: slots whose values this trace fixes: literals made inside it (from_data) and what
        #: pure ops compute from them alone (shape arithmetic); reading one is allowed, since
        #: every replay of this signature computes the same values
        self.static: set[int] = set()
        self._literals: set[int] = set()  # id(prim) of from_data results made in the trace
        self.depth = 0
        self._saved: dict[str, object] = {}
        self._compilers: list[tuple] = []

    # ------------------------------------------------------------------ slots
    def _new(self, prim) -> int:
        slot = len(self.keep)
        self.keep.append(prim)
        self.slots[id(prim)] = slot
        return slot

    def slot(self, prim) -> int:
        """The slot of ``prim``: a new constant when the trace hasn't seen it."""
        found = self.slots.get(id(prim))
        if found is None:
            found = self._new(prim)
            self.constants[found] = prim
            if id(prim) in self._literals or frozen(prim):
                self.static.add(found)
        return found

    def add_input(self, prim) -> int:
        found = self.slots.get(id(prim))
        if found is None:
            found = self._new(prim)
        self.inputs.append(found)
        return found

    def _marks(self, value):
        if isinstance(value, (list, tuple)):
            return type(value)(self._marks(v) for v in value)
        return None if value is None else Slot(self.slot(value))

    # ------------------------------------------------------------------ shadowing
    def install(self) -> None:
        b, saved = self.backend, self._saved
        for op in registry.ops():
            if op.kind is Kind.DATA and op.name not in (*_READS, "from_data"):
                continue
            saved[op.name] = vars(b).get(op.name, _MISSING)
            wrap = (self._guard if op.name in _READS else self._literal if op.name == "from_data"
                    else self._recorder)
            setattr(b, op.name, wrap(op, getattr(b, op.name)))
        for d in self.decorators:
            compiler = getattr(d, "compiler", None)
            if compiler is not None and hasattr(compiler, "run"):
                self._compilers.append((compiler, vars(compiler).get("run", _MISSING)))
                compiler.run = self._program_recorder(compiler)
        saved["take"] = _random.Generator.take
        _random.Generator.take = self._taker(_random.Generator.take)
        _ops_state.start_recording(self)

    def remove(self) -> None:
        _ops_state.stop_recording(self)
        take = self._saved.pop("take", None)
        if take is not None:
            _random.Generator.take = take
        for name, old in self._saved.items():
            if old is _MISSING:
                vars(self.backend).pop(name, None)
            else:
                setattr(self.backend, name, old)
        self._saved.clear()
        for compiler, old in self._compilers:
            if old is _MISSING:
                vars(compiler).pop("run", None)
            else:
                compiler.run = old
        self._compilers.clear()

    def original(self, name: str):
        """The backend's own method, not the recorder."""
        return getattr(type(self.backend), name).__get__(self.backend)

    def _recorder(self, op, method):
        def record(*args, **kwargs):
            if self.depth:
                return method(*args, **kwargs)
            self.depth += 1
            try:
                out = method(*args, **kwargs)
            finally:
                self.depth -= 1
            self._record(op, op.bind(args, kwargs), out)
            return out

        return record

    def _program_recorder(self, compiler):
        """A decorator's compiled program (Fusion's fused chain) run on the innermost
        backend: one step, ``run_program(program, leaves)``, its leaves as slots."""
        run = type(compiler).run.__get__(compiler)
        name = f"run_program_{len(self.extras)}"
        self.extras[name] = lambda shell, leaves: run(_with_leaves(shell, leaves))

        def record(program):
            if self.depth:
                return run(program)
            self.depth += 1
            try:
                out = run(program)
            finally:
                self.depth -= 1
            leaves = [Slot(self.slot(p)) for p in program.leaves]
            static = all(leaf.id in self.static for leaf in leaves)  # shape arithmetic
            # one result, or several (a program that also keeps values computed in passing)
            several = isinstance(out, (list, tuple))
            slots = tuple(self._new(o) for o in out) if several else self._new(out)
            for s in slots if several else (slots,):
                self.producer[s] = f"a fused program of {len(program.nodes)} ops"
                if static:
                    self.static.add(s)
            self.steps.append(Step(name, (_with_leaves(program, ()), leaves), {}, slots))
            return out

        return record

    def _literal(self, op, method):
        def make(*args, **kwargs):
            out = method(*args, **kwargs)
            if not self.depth:
                self.keep.append(out)  # its id stays unique while the trace runs
                self._literals.add(id(out))
            return out

        return make

    def _is_static(self, prim) -> bool:
        slot = self.slots.get(id(prim))
        if slot is None:  # not used by any step yet
            return id(prim) in self._literals or frozen(prim)
        if slot not in self.static:
            return False
        return not any(s.kind == "assign" and s.args[0].id == slot for s in self.steps)

    def _guard(self, op, method):
        def read(x, *args, **kwargs):
            if self.depth or self._is_static(x):
                # an op reading its own operands (part of that op's step), or a value every
                # replay of this signature computes alike
                return method(x, *args, **kwargs)
            error = JitError(
                f"jit: {op.name} of {self.describe(x)} inside a traced function: its value "
                "can't be captured (a replay runs no Python, so control flow that depends on "
                "tensor values would stay frozen at the traced values). Return the tensor "
                "and read it outside the jitted function, or keep the choice in tensor ops "
                "(ember.where(cond, a, b) instead of `if`)"
            )
            #: the traced function's input tensors (positions) the value was computed from
            error.sources = self.sources(x)
            raise error

        return read

    def _taker(self, take):
        def traced_take(generator, n):
            drawn = take(generator, n)
            self.takes.append((generator, n, drawn))
            return drawn

        return traced_take

    def describe(self, prim) -> str:
        slot = self.slots.get(id(prim))
        if slot is None or slot in self.constants:
            return "a tensor created outside the traced function"
        if slot not in self.producer:
            return f"input tensor #{self.inputs.index(slot)} of the traced function"
        index = self._step_of(slot)
        views = []
        while self.producer.get(slot) in _VIEWS:  # name the op that computed the values
            views.append(self.producer[slot])
            slot = self.steps[self._step_of(slot)].inputs()[0]
        if slot not in self.producer:
            return "a view of " + self.describe(self.keep[slot])
        through = f", through {', '.join(views)}" if views else ""
        return f"the result of {self.producer[slot]}{through} (step {index} of the trace)"

    def sources(self, prim) -> list[int]:
        """The positions of the traced function's input tensors that ``prim`` was computed
        from (through the recorded steps)."""
        todo, seen, found = [self.slots.get(id(prim))], set(), set()
        while todo:
            slot = todo.pop()
            if slot is None or slot in seen:
                continue
            seen.add(slot)
            if slot in self.inputs:
                found.add(self.inputs.index(slot))
            elif slot in self.producer:
                todo += self.steps[self._step_of(slot)].inputs()
        return sorted(found)

    def _step_of(self, slot: int) -> int:
        return next(i for i, s in enumerate(self.steps) if slot in s.outputs())

    # ------------------------------------------------------------------ recording
    def _record(self, op, args: tuple, out) -> None:
        call = list(args)
        for i in op.tensor_positions:
            call[i] = self._marks(call[i])
        inputs = [call[i] for i in op.tensor_positions]
        if not isinstance(out, (tuple, list)) and id(out) in self.slots and any(
            isinstance(m, Slot) and m.id == self.slots[id(out)] for m in inputs
        ):
            return  # the op handed an operand back (a cast to its own dtype): nothing to run
        kind, fn = "op", None
        if op.name == "random_uniform":
            fn = self._redraw(*args)
            kind = "op" if fn is None else "random"
        if isinstance(out, (tuple, list)):
            slots = tuple(self._new(o) for o in out)
        else:
            slots = self._new(out)
        static = kind == "op" and all(
            m in self.static for i in inputs for m in _slot_ids(i))
        for s in slots if isinstance(slots, tuple) else (slots,):
            self.producer[s] = op.name
            if static:
                self.static.add(s)
        self.steps.append(Step(op.name, tuple(call), {}, slots, kind, fn))

    def _redraw(self, shape, dtype, seed, offset) -> Callable[[], tuple] | None:
        """Draw ``(seed, offset)`` again at each replay from the generator that drew them
        in the call (None: the function passed them itself, and eagerly gets the same
        numbers at every call, so the replay does too)."""
        for i, (generator, n, drawn) in enumerate(self.takes):
            if drawn == (seed, offset):
                del self.takes[i]
                return lambda: (shape, dtype, *generator.take(n))
        return None

    def tape(self, outputs: list, output_tree) -> Tape:
        for generator, n, _ in self.takes:  # draws no random step used: keep the stream
            self.hooks.append(lambda g=generator, k=n: g.take(k))
        # first: an output the trace made without any op (a literal) becomes a constant here
        outs = [self.slot(p) for p in outputs]
        return Tape(self.backend, list(self.inputs), dict(self.constants), list(self.steps),
                    outs, output_tree, list(self.hooks), dict(self.extras))


_MISSING = object()


def _slot_ids(marks) -> list[int]:
    if isinstance(marks, Slot):
        return [marks.id]
    if isinstance(marks, (list, tuple)):
        return [i for m in marks for i in _slot_ids(m)]
    return []


def _with_leaves(program, leaves):
    """A copy of a compiled program reading ``leaves`` (its other fields are literals)."""
    out = copy.copy(program)
    out.leaves = leaves
    return out
