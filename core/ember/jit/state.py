"""State that lives across calls of a jitted function, and the functions code that keeps
such state calls (no-ops when nothing is traced): :func:`feed` (a host scalar re-computed at
each replay), :func:`assign` (an in-place update) and :func:`on_replay` (host-side counters).

:class:`StateRecorder` is the part of the tracer that records them.

>>> import ember
>>> feed(lambda: 0.5, ember.ones(2)), tracing()
(0.5, False)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ..tensor import Tensor
from ..tensordata import TensorData
from .chain import innermost, lift, lower
from .errors import JitError
from ..contract.program import Slot, Step

_ACTIVE: list = []  # the tracer of the call being traced (one at a time)
_GENERATION = [0]  # bumped when state a tape reads is replaced outside a trace
_WATCHED: dict[int, int] = {}  # id(primitive) -> how many tapes read it as a constant
# id(primitive) -> [primitive, how many tapes write it]: the private copies tapes update in
# place. Another trace (a second signature) writes the same copy instead of making its own,
# so the tapes of one function keep sharing their state. The primitive is held, so its id
# can't be reused while registered.
_OWNED: dict[int, list] = {}
# id(primitive) -> the tensor holding it, for tensors whose values never change in place
_FROZEN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def freeze(t: Tensor) -> Tensor:
    """Promise that ``t``'s values never change in place, so a traced function may read them
    (an ONNX graph's shape constants): the tape keeps what it read, and replacing ``t``'s
    storage outside (``Parameter.assign``, ``load_state_dict``) makes it trace again, as for
    any constant. Returns ``t``.

    >>> import ember
    >>> shape = freeze(ember.tensor([2, 3]))
    >>> f = ember.jit(lambda x: x.reshape(shape.tolist()))
    >>> [f(ember.ones(6)).shape for _ in range(3)]
    [(2, 3), (2, 3), (2, 3)]
    """
    _FROZEN[id(t._prim)] = t
    return t


def frozen(prim) -> bool:
    """Whether ``prim`` is the storage of a tensor given to :func:`freeze`."""
    t = _FROZEN.get(id(prim))
    return t is not None and t._prim is prim


def active():
    """The tracer recording now, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def generation() -> int:
    return _GENERATION[0]


def state_replaced(old=None) -> None:
    """Called when a parameter or optimizer state tensor ``old`` is about to get a new
    primitive outside a trace (no argument: any state may have): the tapes that read its
    primitive re-trace at their next call. Inside a trace it does nothing: the traced code
    rebinds state only for the duration of the call, and :meth:`StateRecorder.finish`
    reports the primitives that really changed.

    >>> import ember
    >>> w = ember.ones(1)
    >>> f = ember.jit(lambda x: x * w)
    >>> for _ in range(3):
    ...     _ = f(ember.ones(1))
    >>> state_replaced()  # as if w got a new value: the tape re-traces at its next call
    >>> _ = f(ember.ones(1)); f.stats()["traces"]
    2
    """
    if active() is not None:
        return
    if old is None:
        _GENERATION[0] += 1
    else:
        _primitive_replaced(lower(old.backend, old._prim))


def _primitive_replaced(prim) -> None:
    if id(prim) in _WATCHED:
        _GENERATION[0] += 1


def watch(constants, add: bool) -> None:
    """Count (or, ``add=False``, uncount) a tape's constants as read by it."""
    for prim in constants:
        key = id(prim)
        count = _WATCHED.get(key, 0) + (1 if add else -1)
        if count > 0:
            _WATCHED[key] = count
        else:
            _WATCHED.pop(key, None)


def own(prims, add: bool) -> None:
    """Register (or, ``add=False``, release) primitives a tape writes in place."""
    for prim in prims:
        entry = _OWNED.setdefault(id(prim), [prim, 0])
        entry[1] += 1 if add else -1
        if entry[1] <= 0:
            del _OWNED[id(prim)]


class StateRecorder:
    """Feeds and in-place updates, for :class:`~ember.jit.trace.Tracer`."""

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
            prim = original = self.keep[target]
            if target not in self.constants:
                self._settle_lazy(target)
            elif target not in self.owned:
                prim = self._adopt(target, prim)
            else:  # a second tensor sharing the primitive: the same private copy
                prim = self.constants[target]
            self.depth += 1
            try:
                copy_into(prim, self.keep[source])
            finally:
                self.depth -= 1
            self.steps.append(Step("copy_into", (Slot(target), Slot(source)), {}, None, "assign"))
            dst._prim = lift(dst.backend, prim)
            if settle is not None:
                settle()
            if prim is not original:  # other tapes reading the old primitive re-trace
                _primitive_replaced(original)
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
        are never written. A copy another tape already writes is jit's own: used as is."""
        if id(prim) in _OWNED:
            self.owned.add(slot)
            return prim
        self.depth += 1
        try:
            fresh = self.original("from_data")(self.original("to_data")(prim))
        finally:
            self.depth -= 1
        self.keep.append(fresh)
        self.slots[id(fresh)] = slot
        self.constants[slot] = fresh
        self.owned.add(slot)
        return fresh


def _tracer_for(tensor):
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
    caller then rebinds ``dst`` to ``value`` as an eager update does.

    >>> import ember
    >>> assign(ember.zeros(1), ember.ones(1))  # not tracing: the caller rebinds eagerly
    False
    """
    tracer = _tracer_for(dst)
    if tracer is None:
        return False
    tracer.assign(dst, value, settle)
    return True


def on_replay(hook: Callable[[], None], like) -> None:
    """Inside a traced function, run ``hook()`` before the steps of every replay (host-side
    counters the traced Python advanced); elsewhere nothing.

    >>> import ember
    >>> calls = []
    >>> def f(x):
    ...     calls.append("python")
    ...     on_replay(lambda: calls.append("replay"), x)
    ...     return x + 1
    >>> g = ember.jit(f)
    >>> for _ in range(3):  # warm-up (eager), trace, replay
    ...     _ = g(ember.ones(1))
    >>> calls
    ['python', 'python', 'replay']
    """
    tracer = _tracer_for(like)
    if tracer is not None:
        tracer.hooks.append(hook)


def tracing(like=None) -> bool:
    """Whether a traced function is running (on ``like``'s backend, when given).

    >>> import ember
    >>> seen = []
    >>> g = ember.jit(lambda x: seen.append(tracing(x)) or x * 2)
    >>> for _ in range(3):  # warm-up (eager), trace, replay (no Python)
    ...     _ = g(ember.ones(1))
    >>> seen, tracing()
    ([False, True], False)
    """
    return active() is not None if like is None else _tracer_for(like) is not None
