"""State that outlives a call — parameters, buffers, running statistics, optimizer moments and
counters — updated through the functions here, so that a recorder (``ember.jit``'s tracer)
makes the updates part of the program it records: :func:`assign` (an in-place update),
:func:`feed` (a host scalar re-computed at every replay), :func:`on_replay` (host-side
counters), :func:`new_state` (state that must exist before a recording) and
:func:`state_replaced` (storage replaced outside a recording). Eagerly each is plain Python.

nn and optim call these; a recorder registers itself with :func:`start_recording`, and code
that caches what it read listens with :func:`on_state_replaced`. Nothing here imports the
recorder, so the layers above need no jit hooks.

>>> import ember
>>> feed(lambda: 0.5, ember.ones(2)), tracing()
(0.5, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..tensor import Tensor


class Recorder(Protocol):
    """What a recorder of traced calls (``ember.jit.trace.Tracer``) does with state updates."""

    def records(self, tensor: Tensor) -> bool:
        """Whether ops on ``tensor``'s backend are being recorded."""

    def assign(self, dst: Tensor, value: Tensor, settle: Callable[[], None] | None) -> None:
        """Record an in-place update of ``dst`` to ``value`` (see :func:`assign`)."""

    def feed(self, fn: Callable[[], float], like: Tensor) -> Tensor:
        """A 0-d tensor on ``like``'s backend holding ``fn()``, re-computed at every replay."""

    def on_replay(self, hook: Callable[[], None]) -> None:
        """Run ``hook()`` before the steps of every replay."""

    def refuse_new_state(self, what: str) -> None:
        """Raise: ``what`` is state created while recording (see :func:`new_state`)."""


_RECORDING: list[Recorder] = []  # the recorder of the call being recorded (one at a time)
_LISTENERS: list[Callable[[Tensor | None], None]] = []


def start_recording(recorder: Recorder) -> None:
    """Make ``recorder`` the one the functions here report to, until :func:`stop_recording`."""
    _RECORDING.append(recorder)


def stop_recording(recorder: Recorder) -> None:
    if recorder in _RECORDING:
        _RECORDING.remove(recorder)


def active() -> Recorder | None:
    """The recorder running now, or None."""
    return _RECORDING[-1] if _RECORDING else None


def recorder_for(like) -> Recorder | None:
    """The running recorder when it records ops on ``like``'s backend, else None (numpy
    arrays and tensors of other backends take the eager path)."""
    recorder = active()
    if recorder is None or not isinstance(like, Tensor) or not recorder.records(like):
        return None
    return recorder


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
    return active() is not None if like is None else recorder_for(like) is not None


def feed(fn: Callable[[], float], like):
    """``fn()`` as a Python number; inside a traced function, a 0-d tensor on ``like``'s
    backend whose value ``fn`` re-computes at every replay (use it for values that change
    between calls: a learning rate, a bias correction of the step count).

    >>> import ember
    >>> feed(lambda: 0.5, ember.ones(2))
    0.5
    """
    recorder = recorder_for(like)
    return fn() if recorder is None else recorder.feed(fn, like)


def assign(dst, value, settle: Callable[[], None] | None = None) -> bool:
    """Inside a traced function, record an in-place update of ``dst`` to ``value`` (done at
    the end of the call and of every replay, into a primitive the tape owns; ``settle()``
    runs after ``dst`` gets it) and return True; elsewhere return False. Either way the
    caller then rebinds ``dst`` to ``value`` as an eager update does.

    >>> import ember
    >>> assign(ember.zeros(1), ember.ones(1))  # not tracing: the caller rebinds eagerly
    False
    """
    recorder = recorder_for(dst)
    if recorder is None:
        return False
    recorder.assign(dst, value, settle)
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
    recorder = recorder_for(like)
    if recorder is not None:
        recorder.on_replay(hook)


def new_state(value, what: str) -> None:
    """``value`` becomes new state (``what`` names it in the error): fine eagerly, refused
    inside a traced function, whose replays would create it afresh at every call.

    >>> import ember
    >>> new_state(ember.zeros(1), "SGD: state 'momentum'")  # eagerly: nothing to refuse
    """
    recorder = recorder_for(value)
    if recorder is not None:
        recorder.refuse_new_state(what)


def on_state_replaced(listener: Callable[[Tensor | None], None]) -> None:
    """Call ``listener(old)`` whenever :func:`state_replaced` reports state replaced outside
    a recording (``ember.jit`` listens: its tapes that read ``old`` trace again)."""
    _LISTENERS.append(listener)


def state_replaced(old: Tensor | None = None) -> None:
    """Called when a parameter or optimizer state tensor ``old`` is about to get a new
    primitive outside a trace (no argument: any state may have): the tapes that read its
    primitive re-trace at their next call. Inside a trace it does nothing: the traced code
    rebinds state only for the duration of the call, and the recorder reports the
    primitives that really changed.

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
    for listener in _LISTENERS:
        listener(old)
