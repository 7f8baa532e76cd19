"""Recording one call into a :class:`~ember.jit.tape.Tape`.

While a function is traced, the innermost backend's op methods are shadowed by instance
attributes that run the op and record a :class:`~ember.jit.tape.Step` (only the outermost
call: a composite's inner ops are part of its step); reads of values raise
:class:`~ember.jit.JitError`. Everything above that backend (Tensor wrappers, dispatch,
autodiff bookkeeping, the optimizer's Python) runs during the trace and costs nothing at
replay.

Code that keeps state across calls cooperates through three functions, no-ops when nothing is
traced: :func:`feed` (a host scalar re-computed at each replay), :func:`assign` (an in-place
update) and :func:`on_replay` (host-side counters).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from .. import random as _random
from ..contract import registry
from ..contract.registry import Kind
from ..tensordata import TensorData
from .chain import innermost, lift, lower
from .errors import JitError
from ..tensor import Tensor
from .tape import Slot, Step, Tape

_ACTIVE: list[Tracer] = []  # the tracer of the call being traced (one at a time)
_GENERATION = [0]  # bumped when state a tape may read is replaced outside a trace
_READS = ("to_data", "to_data_async")


def active() -> Tracer | None:
    """The tracer recording now, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def generation() -> int:
    return _GENERATION[0]


def state_replaced() -> None:
    """Called when a parameter or optimizer state gets a new primitive outside a trace:
    tapes that read the old one re-trace at their next call."""
    _GENERATION[0] += 1


class Tracer:
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
            if op.kind is Kind.DATA and op.name not in _READS:
                continue
            saved[op.name] = vars(b).get(op.name, _MISSING)
            wrap = self._guard if op.name in _READS else self._recorder
            setattr(b, op.name, wrap(op, getattr(b, op.name)))
        for d in self.decorators:
            compiler = getattr(d, "compiler", None)
            if compiler is not None and hasattr(compiler, "run"):
                self._compilers.append((compiler, vars(compiler).get("run", _MISSING)))
                compiler.run = self._program_recorder(compiler)
        saved["take"] = _random.Generator.take
        _random.Generator.take = self._taker(_random.Generator.take)
        _ACTIVE.append(self)

    def remove(self) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
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
            slot = self._new(out)
            self.producer[slot] = f"a fused program of {len(program.nodes)} ops"
            self.steps.append(Step(name, (_with_leaves(program, ()), leaves), {}, slot))
            return out

        return record

    def _guard(self, op, method):
        def read(x, *args, **kwargs):
            if self.depth:  # an op reading its own operands: part of that op's step
                return method(x, *args, **kwargs)
            raise JitError(
                f"jit: {op.name} of {self.describe(x)} inside a traced function: its value "
                "can't be captured (a replay runs no Python, so control flow that depends on "
                "tensor values would stay frozen at the traced values). Return the tensor "
                "and read it outside the jitted function, or keep the choice in tensor ops "
                "(ember.where(cond, a, b) instead of `if`)"
            )

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
        if slot in self.producer:
            return f"the result of {self.producer[slot]} (step {self._step_of(slot)} of the trace)"
        return f"input tensor #{self.inputs.index(slot)} of the traced function"

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
            kind, fn = "random", self._redraw(*args)
        if isinstance(out, (tuple, list)):
            slots = tuple(self._new(o) for o in out)
        else:
            slots = self._new(out)
        for s in slots if isinstance(slots, tuple) else (slots,):
            self.producer[s] = op.name
        self.steps.append(Step(op.name, tuple(call), {}, slots, kind, fn))

    def _redraw(self, shape, dtype, seed, offset) -> Callable[[], tuple]:
        """Draw ``(seed, offset)`` again at each replay from the generator that drew them."""
        for i, (generator, n, drawn) in enumerate(self.takes):
            if drawn == (seed, offset):
                del self.takes[i]
                return lambda: (shape, dtype, *generator.take(n))
        raise JitError(
            f"jit: random_uniform{tuple(shape)} with seed {seed} and offset {offset} was drawn "
            "from no ember.Generator inside the traced function, so a replay can't draw "
            "fresh numbers; draw (seed, offset) with generator.take(n) inside it"
        )

    def feed(self, fn: Callable[[], float], like) -> object:
        """A 0-d tensor on ``like``'s backend holding ``fn()``, re-computed at every replay."""
        dtype = like.dtype

        def args() -> tuple:
            return (TensorData.from_values([fn()], (), dtype),)

        prim = self.original("from_data")(*args())
        slot = self._new(prim)
        self.producer[slot] = "a feed"
        self.steps.append(Step("from_data", args(), {}, slot, "feed", args))
        return Tensor(lift(like.backend, prim), like.backend)

    def assign(self, dst, value, settle: Callable[[], None] | None = None) -> None:
        """Update ``dst`` to ``value`` in place: the write into the primitive ``dst`` holds
        now is deferred to the end of the trace (and of every replay), so whatever read the
        old value meanwhile, a lazy graph included, reads the old value. The caller rebinds
        ``dst`` to ``value`` as an eager update would; :meth:`finish` hands ``dst`` its
        updated primitive back and calls ``settle()``."""
        b = self.backend
        if getattr(type(b), "copy_into", None) is None:
            raise JitError(
                f"jit: backend {b.name} has no copy_into(dst, src), so jit can't update "
                "parameters and optimizer state in place on it"
            )
        target, source = lower(dst.backend, dst._prim), lower(value.backend, value._prim)
        if tuple(b.shape(target)) != tuple(b.shape(source)) or b.dtype(target) != b.dtype(source):
            raise JitError(
                f"jit: in-place update of a {b.dtype(target).name}{tuple(b.shape(target))} "
                f"tensor with a {b.dtype(source).name}{tuple(b.shape(source))} value"
            )
        entry = self.updates.get(id(dst))
        if entry is None:  # the first update of dst in this call targets its current primitive
            self.updates[id(dst)] = [dst, self.slot(target), self.slot(source), settle]
        else:
            entry[2] = self.slot(source)

    def finish(self) -> None:
        """Run and record the deferred in-place updates (the traced call succeeded)."""
        copy_into = self.original("copy_into") if self.updates else None
        for dst, target, source, settle in self.updates.values():
            prim = self.keep[target]
            if target not in self.constants:
                self._settle_lazy(target)
            else:
                prim = self._adopt(target, prim)
            self.depth += 1
            try:
                copy_into(prim, self.keep[source])
            finally:
                self.depth -= 1
            self.steps.append(Step("copy_into", (Slot(target), Slot(source)), {}, None, "assign"))
            dst._prim = lift(dst.backend, prim)
            if settle is not None:
                settle()
        self.updates.clear()

    def _settle_lazy(self, slot: int) -> None:
        """State a lazy decorator computed before the trace (Fusion's pending ``w - lr * g``
        from the warm-up call) is materialised during it, as a step over constants only: its
        result is state, so it becomes a constant (the replay must read the value the last
        call wrote, not recompute the old one)."""
        for i, step in enumerate(self.steps):
            if slot in step.outputs():
                break
        else:
            raise JitError("jit: an in-place update targets an input of the traced function; "
                           "only state created outside it (parameters, buffers) can be updated")
        if not all(s in self.constants for s in step.inputs()):
            raise JitError(
                f"jit: state updated in place holds {self.describe(self.keep[slot])}, computed "
                "inside the traced call; state must exist before the call (let the warm-up "
                "call create it)"
            )
        del self.steps[i]
        for s in step.outputs():
            self.constants[s] = self.keep[s]
            self.producer.pop(s, None)

    def _adopt(self, slot: int, prim):
        """A private copy of a constant the tape will write in place: the old primitive may
        be shared (a clone, a read-only broadcast of a scalar), and primitives outside jit
        are never written."""
        self.depth += 1
        try:
            fresh = self.original("from_data")(self.original("to_data")(prim))
        finally:
            self.depth -= 1
        self.keep.append(fresh)
        self.slots[id(fresh)] = slot
        self.constants[slot] = fresh
        return fresh

    def tape(self, outputs: list, output_tree) -> Tape:
        for generator, n, _ in self.takes:  # draws no random step used: keep the stream
            self.hooks.append(lambda g=generator, k=n: g.take(k))
        return Tape(self.backend, list(self.inputs), dict(self.constants), list(self.steps),
                    [self.slot(p) for p in outputs], output_tree, list(self.hooks),
                    dict(self.extras))


_MISSING = object()


def _with_leaves(program, leaves):
    """A copy of a compiled program reading ``leaves`` (its other fields are literals)."""
    out = copy.copy(program)
    out.leaves = leaves if leaves is not None else ()
    return out


def _tracer_for(tensor) -> Tracer | None:
    tracer = active()
    if tracer is None or not isinstance(tensor, Tensor):  # numpy arrays: an eager fast path
        return None
    if innermost(tensor.backend) is not tracer.backend:
        return None
    return tracer


def feed(fn: Callable[[], float], like):
    """``fn()`` as a Python number; inside a traced function, a 0-d tensor on ``like``'s
    backend whose value ``fn`` re-computes at every replay (use it for values that change
    between calls: a learning rate, a bias correction of the step count).

    >>> import ember
    >>> feed(lambda: 0.5, ember.ones(2))
    0.5
    """
    tracer = _tracer_for(like)
    return fn() if tracer is None else tracer.feed(fn, like)


def assign(dst, value, settle: Callable[[], None] | None = None) -> bool:
    """Inside a traced function, record an in-place update of ``dst`` to ``value`` (done at
    the end of the call and of every replay, into a primitive the tape owns; ``settle()``
    runs after ``dst`` gets it) and return True; elsewhere return False. Either way the
    caller then rebinds ``dst`` to ``value`` as an eager update does."""
    tracer = _tracer_for(dst)
    if tracer is None:
        return False
    tracer.assign(dst, value, settle)
    return True


def on_replay(hook: Callable[[], None], like) -> None:
    """Inside a traced function, run ``hook()`` before the steps of every replay (host-side
    counters the traced Python advanced); elsewhere nothing."""
    tracer = _tracer_for(like)
    if tracer is not None:
        tracer.hooks.append(hook)


def tracing(like=None) -> bool:
    """Whether a traced function is running (on ``like``'s backend, when given)."""
    return active() is not None if like is None else _tracer_for(like) is not None
