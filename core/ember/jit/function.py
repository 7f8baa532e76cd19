"""``ember.jit(fn)``: warm up, trace once per signature, replay.

Per signature (the structure of the arguments, each tensor's shape, dtype and backend, the
non-tensor values): call 1 runs ``fn`` eagerly (lazily created state settles: optimizer
moments, caches), call 2 runs it eagerly while recording a :class:`~ember.contract.program.Tape`, and
later calls replay the optimised tape. A call re-traces when state the tape reads was
replaced outside it (an eager ``Parameter.assign`` of one of its parameters,
``load_state_dict``).
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable

from ..backends import default_backend
from ..tensor import Tensor
from . import state, trace
from .chain import innermost, lift, lower
from .errors import JitError
from ..ops import state as _ops_state
from ..contract.passes import eliminate_dead, fold_constants
from ..contract.program import Tape, compile_generic
from .tree import flatten, unflatten


class _Entry:
    """One signature: its calls so far and, once traced, its tape and compiled runner."""

    __slots__ = ("__weakref__", "calls", "generation", "owned", "run", "steps", "tape",
                 "watched")

    def __init__(self):
        self.calls = 0
        self.tape: Tape | None = None
        self.run: Callable | None = None
        self.generation = -1
        self.steps: dict[str, int] = {}
        self.watched: list = []  # the primitives the trace read as constants
        self.owned: list = []  # the private copies its tape writes in place
        weakref.finalize(self, state.watch, self.watched, False)  # a dead tape watches none
        weakref.finalize(self, state.own, self.owned, False)


class Jitted:
    """A function traced once per signature and replayed (see :func:`jit`).

    >>> import ember
    >>> f = ember.jit(lambda x: x * 2 + 1)
    >>> [f(ember.ones(2)).tolist() for _ in range(3)][-1], f
    ([3.0, 3.0], <ember.jit of <lambda>: 1 traces, 1 replays>)
    >>> f.stats()["steps"], len(f.tapes())  # the two constants folded into the tape
    ([{'traced': 4, 'after_folding': 2, 'replayed': 2}], 1)
    """

    def __init__(self, fn: Callable, backend=None, warmup: int = 1):
        self.fn = fn
        self.backend = backend
        self.warmup = warmup
        self.entries: dict = {}
        self.traces = 0
        self.replays = 0
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__name__ = getattr(fn, "__name__", "jitted")

    def __repr__(self) -> str:
        return f"<ember.jit of {self.__name__}: {self.traces} traces, {self.replays} replays>"

    def __get__(self, obj, owner=None):
        """``@ember.jit`` on a method: bound like a function (the instance is part of the
        key, by identity)."""
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if _ops_state.active() is not None:  # called from a traced function: part of its trace
            return self.fn(*args, **kwargs)
        tensors, key = flatten((args, kwargs))
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = _Entry()
        entry.calls += 1
        # A warm-up call lets lazily created state (optimizer moments) settle. Once another
        # signature has a tape the state exists, and an eager call would replace it (making
        # every tape re-trace): a new signature then traces at once, into the same state.
        if entry.calls <= self.warmup and not any(e.tape is not None for e in self.entries.values()):
            return self.fn(*args, **kwargs)
        if entry.tape is None or entry.generation != state.generation():
            return self._trace(entry, tensors, args, kwargs)
        self.replays += 1
        prims = [lower(t.backend, t._prim) for t in tensors]
        outs = entry.run(prims)
        tree, backends = entry.tape.output_tree
        return unflatten(tree, [Tensor(lift(b, p), b) for b, p in zip(backends, outs)])

    def _backend(self, tensors: list[Tensor]):
        if tensors:
            return innermost(tensors[0].backend)
        from ..backends import get_backend

        return innermost(get_backend(self.backend) if self.backend else default_backend())

    def _trace(self, entry: _Entry, tensors: list[Tensor], args, kwargs):
        tracer = trace.Tracer(self._backend(tensors), tensors[0].backend if tensors else None)
        for t in tensors:
            if innermost(t.backend) is not tracer.backend:
                raise JitError(
                    f"jit: {self.__name__} takes tensors of backends {tensors[0].backend.name} "
                    f"and {t.backend.name}; a traced function runs on one backend"
                )
            tracer.add_input(lower(t.backend, t._prim))
        tracer.install()
        try:
            result = self.fn(*args, **kwargs)
            outs, tree = flatten(result)
            prims = [lower(t.backend, t._prim) for t in outs]
            tracer.finish()
        finally:
            tracer.remove()
        tape = tracer.tape(prims, (tree, [t.backend for t in outs]))
        if tape.assigned().intersection(tape.outputs):
            raise JitError(
                f"jit: {self.__name__} returns a tensor holding state it also updates in place "
                "(a parameter or optimizer state read before its update); a replay would "
                "return the updated value. Return a copy computed before the update (t * 1)"
            )
        traced, read = len(tape.steps), list(tape.constants.values())
        folded = fold_constants(tape)
        tape = eliminate_dead(folded)
        compile_tape = getattr(tape.backend, "compile_tape", None)
        entry.run = compile_tape(tape) if compile_tape is not None else compile_generic(tape)
        # what the trace read, folded or not: replacing any of it outside makes this stale
        state.watch(entry.watched, add=False)
        entry.watched[:] = read
        state.watch(entry.watched, add=True)
        state.own(entry.owned, add=False)
        entry.owned[:] = [tape.constants[s] for s in tape.assigned() if s in tape.constants]
        state.own(entry.owned, add=True)
        entry.tape, entry.generation = tape, state.generation()
        entry.steps = {"traced": traced, "after_folding": len(folded.steps),
                       "replayed": len(tape.steps)}
        self.traces += 1
        return result

    def stats(self) -> dict:
        """Traces, replays and, per traced signature, the step counts: as traced, after
        constant folding, and replayed (after dead-step elimination)."""
        return {
            "traces": self.traces,
            "replays": self.replays,
            "signatures": len(self.entries),
            "steps": [e.steps for e in self.entries.values() if e.tape is not None],
        }

    def tapes(self) -> list[Tape]:
        """The current tape of each traced signature."""
        return [e.tape for e in self.entries.values() if e.tape is not None]


def jit(fn: Callable | None = None, *, backend=None, warmup: int = 1):
    """Trace ``fn`` once per signature and replay it: forward, backward and the optimizer's
    update, with no Python per op (see docs/jit.md).

    Call 1 of a signature runs eagerly (``warmup`` calls), the next one traces, later calls
    replay. A new shape, dtype, backend or non-tensor argument traces again. Reading a
    tensor's value inside ``fn`` raises :class:`~ember.jit.JitError`. ``backend`` is the one
    traced when ``fn`` takes no tensor (default: the default backend).

    >>> import ember
    >>> @ember.jit
    ... def f(x, y):
    ...     return (x * y + 1).sum(dim=1)
    >>> x = ember.ones(2, 3)
    >>> [f(x, x * 2).tolist() for _ in range(3)]
    [[9.0, 9.0], [9.0, 9.0], [9.0, 9.0]]
    >>> f.stats()["traces"], f.stats()["replays"]
    (1, 1)
    """
    if fn is None:
        return lambda f: Jitted(f, backend=backend, warmup=warmup)
    if not callable(fn):
        raise TypeError(f"jit: expected a function, got {type(fn).__name__}")
    return Jitted(fn, backend=backend, warmup=warmup)
