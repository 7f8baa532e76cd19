"""State that lives across calls of a jitted function: which primitives the tapes read as
constants (replacing one outside a trace makes them trace again) and which private copies
they write in place.

:class:`StateRecorder` is the part of the tracer that records what code keeping state
reports through :mod:`ember.ops.state` (in-place updates, feeds, replay hooks); nn and optim
call those functions, never this module.

>>> import ember
>>> w = freeze(ember.tensor([2, 3]))
>>> frozen(w._prim), generation() >= 0
(True, True)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ..contract.program import Slot, Step
from ..ops import state as _ops_state
from ..tensor import Tensor
from ..tensordata import TensorData
from .chain import innermost, lift, lower
from .errors import JitError

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
    inner = lower(t.backend, t._prim)  # what a decorator (Fusion) hands its inner backend
    if inner is not t._prim:
        _FROZEN[id(inner)] = t
    return t


def frozen(prim) -> bool:
    """Whether ``prim`` is the storage of a tensor given to :func:`freeze`, or that storage
    on the innermost backend (a read through ``Fusion`` reaches the tracer there)."""
    t = _FROZEN.get(id(prim))
    return t is not None and (t._prim is prim or lower(t.backend, t._prim) is prim)


def generation() -> int:
    return _GENERATION[0]


def _state_replaced(old: Tensor | None) -> None:
    """The tapes that read ``old``'s primitive (no ``old``: any state) trace again."""
    if old is None:
        _GENERATION[0] += 1
    else:
        _primitive_replaced(lower(old.backend, old._prim))


_ops_state.on_state_replaced(_state_replaced)


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
    """Feeds, in-place updates and replay hooks, for :class:`~ember.jit.trace.Tracer` (the
    :class:`~ember.ops.state.Recorder` interface)."""

    def records(self, tensor: Tensor) -> bool:
        return innermost(tensor.backend) is self.backend

    def on_replay(self, hook: Callable[[], None]) -> None:
        self.hooks.append(hook)

    def refuse_new_state(self, what: str) -> None:
        raise JitError(
            f"{what} is created inside a traced function, so replays would start it afresh "
            "each time; let jit run its warm-up call (ember.jit(fn, warmup=1), the default) "
            "so the state exists before the trace"
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
