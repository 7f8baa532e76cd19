"""The integer ranges a jit capture (:mod:`.replay`) assumes, and how each replay keeps to them.

A replay runs no range check, so the int64 ops of a capture are checked (:mod:`.int_range`)
against ranges that every replay meets, never against one call's values: inside a capture a
check derives from bounds alone (a value measured then would hold for that call only). The
bounds it derives from:

- constants: their storage's bound (exact after ``from_data``; a tape's constants never
  change, and replacing one traces again);
- each int32/int64 input: its range widened to powers of two; a call whose inputs leave it
  captures again;
- each int32/int64 state the tape updates in place (a step counter, BatchNorm's
  ``num_batches_tracked``): a window around its value measured at the capture. When the update
  adds a constant (``n + 1``), the window holds the next :data:`STEPS` updates (clipped so
  that the sum stays inside int32) and the state's storage bound moves by the constant's range
  at each replay, on the host: counting needs no read. Any other update leaves the state in
  the range the capture derived for the new value (while it starts inside its window, so is
  that range); a state whose bound leaves its window is measured (a read), and a call where it
  lies outside captures again, measuring it anew.

When the checks refuse under these widened ranges, the capture is made again under exact
ones (the inputs' and the states' measured values), which a call with other values captures
again. A refusal there is the call's own: :class:`~ember.errors.DTypeError` before anything
runs, so a counter about to pass 2**31 - 1 raises instead of wrapping.
"""

from __future__ import annotations

from ... import dtype as dt
from ...contract.program import Slot
from .int_range import I32, fits, measure
from .primitive import WgpuTensor

STEPS = 4096  # in-place additions a capture's window holds before the state is captured again
_BOUNDED = (dt.int32, dt.int64)


def known(backend, x: WgpuTensor) -> tuple[int, int] | None:
    """The range of an int32/int64 ``x``: its storage's bound, else measured (None: another
    dtype)."""
    if x.dtype not in _BOUNDED:
        return None
    return x.storage.bound or tuple(measure(backend, x))


def _envelope(r: tuple[int, int]) -> tuple[int, int]:
    """``r`` widened to powers of two (so the next batch's values likely stay inside)."""
    lo = 0 if r[0] >= 0 else -(1 << (-r[0] - 1).bit_length())
    hi = 0 if r[1] <= 0 else (1 << r[1].bit_length()) - 1
    return max(lo, I32[0]), min(hi, I32[1])


def _inside(r: tuple[int, int] | None, window: tuple[int, int]) -> bool:
    return r is not None and window[0] <= r[0] and r[1] <= window[1]


def input_bounds(backend, prims: list, exact: bool) -> list:
    """What a capture assumes of its inputs' ranges (the replays check it, :func:`holds`)."""
    ranges = (known(backend, p) for p in prims)
    return [r if r is None or exact else _envelope(r) for r in ranges]


def holds(backend, prims: list, bounds: list) -> bool:
    """Whether every input lies within the range its capture assumed."""
    return all(b is None or _inside(known(backend, p), b) for p, b in zip(prims, bounds))


class _Update:
    """One in-place update of int32/int64 state: its target's window at the capture and what
    each replay makes of the target's range."""

    __slots__ = ("target", "source", "step", "window", "after")

    def __init__(self, target: WgpuTensor, source: int, step: tuple[int, int] | None):
        self.target, self.source = target, source
        self.step = step  # the range each update adds (None: not an addition of a constant)
        self.window: tuple[int, int] = I32
        self.after: tuple[int, int] | None = None  # the new value's range (step is None)

    def open(self, now: tuple[int, int], exact: bool) -> None:
        """Give the target, whose values lie in ``now``, the window the capture's checks
        assume."""
        if exact:
            self.window = now
        elif self.step is None:
            self.window = _envelope(now)
        else:  # room for STEPS additions, their sums inside int32
            lo = max(now[0] + STEPS * min(self.step[0], 0), I32[0] - min(self.step[0], 0))
            hi = min(now[1] + STEPS * max(self.step[1], 0), I32[1] - max(self.step[1], 0))
            self.window = (lo, hi) if lo <= now[0] and now[1] <= hi else now
        self.target.storage.bound = self.window

    def close(self, env: dict, start: tuple[int, int]) -> None:
        """After the capture ran the update from ``start``: keep the range derived for the
        new value, and record the target's."""
        self.after = env[self.source].storage.bound
        self._advance(start)

    def ready(self, backend) -> bool:
        """Whether the target lies within its window: measured, unless the replays counted
        its range (an addition of a constant)."""
        bound = self.target.storage.bound
        if not _inside(bound, self.window) and (bound is None or self.step is None):
            bound = self.target.storage.bound = tuple(measure(backend, self.target))
        return _inside(bound, self.window)

    def _advance(self, start: tuple[int, int]) -> None:
        if self.step is None:
            r = self.after
        else:
            r = (start[0] + self.step[0], start[1] + self.step[1])
        self.target.storage.bound = r if r is not None and fits(r) else None

    def advance(self) -> None:
        """After a replay (the target was within its window): the target's new range."""
        self._advance(self.target.storage.bound)


class StateRanges:
    """The in-place updates of int32/int64 state in ``tape``, for :mod:`.replay`.

    A capture calls :meth:`begin`, then :meth:`open` before its steps (at each attempt) and
    :meth:`close` after them; a replay runs only when :meth:`ready`, then calls
    :meth:`advance`.
    """

    def __init__(self, backend, tape):
        self.backend = backend
        assigns = [s.args for s in tape.steps if s.kind == "assign"]
        targets = [t.id for t, _ in assigns]
        made_by = {out: s for s in tape.steps for out in s.outputs()}
        self.updates = [
            _Update(
                tape.constants[t.id], src.id, self._step(tape, made_by.get(src.id), t.id, targets)
            )
            for t, src in assigns
            if tape.constants[t.id].dtype in _BOUNDED
        ]
        self._starts: list = []

    def _step(self, tape, producer, target: int, targets: list) -> tuple[int, int] | None:
        """The range ``producer`` adds to ``target`` when it is ``target + c``, ``c + target``
        or ``target - c`` for a constant ``c`` the tape doesn't write (else None), and the
        only update of ``target``."""
        if producer is None or targets.count(target) != 1:
            return None
        args = producer.args
        if producer.name not in ("int_add", "int_sub") or not all(
            isinstance(a, Slot) for a in args[:2]
        ):
            return None
        a, b = (s.id for s in args[:2])
        if producer.name == "int_add" and b == target:
            a, b = b, a
        if a != target or b not in tape.constants or b in targets:
            return None
        r = known(self.backend, tape.constants[b])
        if r is None or producer.name == "int_add":
            return r
        return -r[1], -r[0]

    def begin(self) -> None:
        """Before a capture: each target's range now (measured unless its bound is known)."""
        self._starts = [known(self.backend, u.target) for u in self.updates]

    def open(self, exact: bool) -> None:
        """Before each attempt at the capture: the targets' windows."""
        for u, now in zip(self.updates, self._starts):
            u.open(now, exact)

    def close(self, env: dict) -> None:
        for u, start in zip(self.updates, self._starts):
            u.close(env, start)

    def ready(self) -> bool:
        return all(u.ready(self.backend) for u in self.updates)

    def advance(self) -> None:
        for u in self.updates:
            u.advance()
