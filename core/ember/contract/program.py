"""The program every front end lowers to: what ``ember.jit`` records of one traced call (a
tape), and the generic compiler that replays it with a backend's methods.

The types live in the contract layer so that backends compile programs through them (a
``Slot`` is a ``Slot``, not a class name) and passes are written once for every front end.

A tape is a straight-line program over *slots* (numbered primitive values) on ONE backend,
the innermost of the traced tensors' backends. Each :class:`Step` calls a method of that
backend with its arguments, where primitives are :class:`Slot` markers (also inside lists and
tuples). Step kinds:

- ``"op"``: a backend op; replay calls it with the slots' current values;
- ``"feed"``: ``from_data`` of a host value re-computed at every replay: ``fn()`` returns the
  call's arguments (a learning rate a scheduler changes, a bias correction of the step count);
- ``"random"``: ``random_uniform`` whose ``(seed, offset)`` are drawn again at every replay,
  as the eager path draws them: ``fn()`` returns the call's arguments;
- ``"assign"``: ``copy_into(dst, src)``: the value of slot ``src`` is written INTO the existing
  primitive of slot ``dst`` (parameters, optimizer state), in place; ``out`` is None.

``hooks`` run before the steps at every replay (host-side counters: ``optimizer.steps``);
``extras`` are the callables of steps that aren't backend methods (a decorator's compiled
program: Fusion's fused chains, ``run_program_<i>(program, leaves)``).

>>> import ember
>>> b = ember.get_backend("numpy")
>>> tape = Tape(b, [0], {1: b.full((2,), 10.0, ember.float32)},
...             [Step("float_add", (Slot(0), Slot(1)), {}, 2, "op")], [2], None)
>>> replay(tape, [b.from_data(ember.TensorData.from_list([1.0, 2.0]))])[0].tolist()
[11.0, 12.0]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KINDS = ("op", "feed", "random", "assign")


class Slot:
    """A primitive's place in a tape (an argument marker, distinct from a literal int).

    >>> Slot(3) == Slot(3), Slot(3) == 3, Slot(3)
    (True, False, %3)
    """

    __slots__ = ("id",)

    def __init__(self, id: int):
        self.id = id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Slot) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("slot", self.id))

    def __repr__(self) -> str:
        return f"%{self.id}"


@dataclass
class Step:
    """``out = backend.<name>(*args, **kwargs)``; see the module docstring for ``kind``.

    >>> import ember
    >>> f = ember.jit(lambda x: x * 2 + 1)
    >>> for _ in range(2):
    ...     _ = f(ember.ones(2))
    >>> step = f.tapes()[0].steps[0]
    >>> step, step.name, step.inputs(), step.outputs()
    (%2 = float_mul(%0, %1), 'float_mul', [0, 1], (2,))
    """

    name: str
    args: tuple
    kwargs: dict
    out: int | tuple[int, ...] | None
    kind: str = "op"
    #: feed and random steps: returns this replay's ``args``
    fn: Callable[[], tuple] | None = None

    def inputs(self) -> list[int]:
        """The slots this step reads (for an assign: both the source and the target)."""
        found: list[int] = []
        _collect(self.args, found)
        _collect(tuple(self.kwargs.values()), found)
        return found

    def outputs(self) -> tuple[int, ...]:
        """The slots this step writes."""
        if self.out is None:
            return ()
        return self.out if isinstance(self.out, tuple) else (self.out,)

    def __repr__(self) -> str:
        outs = ", ".join(f"%{o}" for o in self.outputs()) or "-"
        kind = "" if self.kind == "op" else f" [{self.kind}]"
        return f"{outs} = {self.name}{self.args!r}{kind}"


def _collect(args, found: list[int]) -> None:
    for a in args:
        if isinstance(a, Slot):
            found.append(a.id)
        elif isinstance(a, (list, tuple)):
            _collect(a, found)


@dataclass
class Tape:
    """One traced call: ``inputs`` and ``outputs`` are slot ids, ``constants`` the primitives
    created outside the trace that it reads (parameters, optimizer state, buffers),
    ``output_tree`` what rebuilds the function's return value around the output tensors.

    >>> import ember
    >>> f = ember.jit(lambda x: x * 2 + 1)
    >>> for _ in range(2):
    ...     _ = f(ember.ones(2))
    >>> tape = f.tapes()[0]
    >>> tape.steps, tape.inputs, tape.outputs
    ([%2 = float_mul(%0, %1), %4 = float_add(%2, %3)], [0], [4])
    >>> tape.method("float_mul") == tape.backend.float_mul, tape.assigned()
    (True, set())
    """

    backend: Any
    inputs: list[int]
    constants: dict[int, Any]
    steps: list[Step]
    outputs: list[int]
    output_tree: Any
    hooks: list[Callable[[], None]] = field(default_factory=list)
    #: step names that aren't methods of ``backend``: a decorator's compiled programs
    #: (Fusion's fused chains), ``name -> fn(*args)``
    extras: dict[str, Callable] = field(default_factory=dict)

    def method(self, name: str) -> Callable:
        """What a step named ``name`` calls."""
        extra = self.extras.get(name)
        return extra if extra is not None else getattr(self.backend, name)

    def assigned(self) -> set[int]:
        """The slots written in place by assign steps."""
        return {s.args[0].id for s in self.steps if s.kind == "assign"}


def _has_slot(args) -> bool:
    found: list[int] = []
    _collect(args, found)
    return bool(found)


def _getter(arg):
    """A function of the slot environment giving ``arg``'s value for this replay."""
    if isinstance(arg, Slot):
        i = arg.id
        return lambda env: env[i]
    if isinstance(arg, (list, tuple)) and any(isinstance(a, (Slot, list, tuple)) for a in arg):
        parts, kind = [_getter(a) for a in arg], type(arg)
        return lambda env: kind(p(env) for p in parts)
    return lambda env: arg


def _runner(tape: Tape, step: Step) -> Callable[[dict], None]:
    """One step as ``run(env)``: reads its slots from ``env``, stores its results there."""
    method = tape.method(step.name)
    if step.fn is not None:
        fn = step.fn

        def call(env):
            return method(*fn())
    elif not step.kwargs and not any(isinstance(a, (list, tuple)) and _has_slot(a)
                                     for a in step.args):
        # the common case, kept cheap: each argument a slot or a literal
        spec = tuple((a.id, True) if isinstance(a, Slot) else (a, False) for a in step.args)

        def call(env):
            return method(*[env[v] if is_slot else v for v, is_slot in spec])
    else:
        args = [_getter(a) for a in step.args]
        kwargs = {k: _getter(v) for k, v in step.kwargs.items()}

        def call(env):
            return method(*[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})

    out = step.out
    if out is None:
        return call
    if isinstance(out, tuple):

        def run(env):
            env.update(zip(out, call(env)))
    else:

        def run(env):
            env[out] = call(env)

    return run


def compile_generic(tape: Tape) -> Callable[[list], list]:
    """``run(input_prims) -> output_prims`` calling the backend's methods step by step (the
    per-step work done once here: argument getters, bound methods, and when each value is
    last read, so it is dropped then and its memory reused, as eagerly).

    >>> import ember
    >>> from ember.tensordata import TensorData
    >>> f = ember.jit(lambda x: x * 2 + 1)
    >>> for _ in range(2):
    ...     _ = f(ember.ones(2))
    >>> tape = f.tapes()[0]
    >>> run = compile_generic(tape)
    >>> (out,) = run([tape.backend.from_data(TensorData.from_list([3.0, 4.0]))])
    >>> ember.Tensor(out, tape.backend).tolist()
    [7.0, 9.0]
    """
    runners = [_runner(tape, s) for s in tape.steps]
    drops = _last_reads(tape)
    program = list(zip(runners, drops))
    constants, inputs, outputs, hooks = dict(tape.constants), tape.inputs, tape.outputs, tape.hooks

    def run(prims: list) -> list:
        for hook in hooks:
            hook()
        env = dict(constants)
        env.update(zip(inputs, prims))
        for step, dead in program:
            step(env)
            for slot in dead:
                del env[slot]
        return [env[o] for o in outputs]

    return run


def _last_reads(tape: Tape) -> list[tuple[int, ...]]:
    """Per step, the slots no later step reads (nor the outputs, nor a constant: kept)."""
    keep = set(tape.outputs) | set(tape.constants)
    seen: set[int] = set(keep)
    drops: list[tuple[int, ...]] = []
    for step in reversed(tape.steps):
        here = [s for s in dict.fromkeys(step.inputs() + list(step.outputs())) if s not in seen]
        seen.update(here)
        drops.append(tuple(here))
    drops.reverse()
    return drops


def replay(tape: Tape, input_prims: list) -> list:
    """Run ``tape`` once on ``input_prims``; returns the output primitives.

    >>> import ember
    >>> from ember.tensordata import TensorData
    >>> f = ember.jit(lambda x: x * 2 + 1)
    >>> for _ in range(2):
    ...     _ = f(ember.ones(2))
    >>> tape = f.tapes()[0]
    >>> (out,) = replay(tape, [tape.backend.from_data(TensorData.from_list([3.0, 4.0]))])
    >>> ember.Tensor(out, tape.backend).tolist()
    [7.0, 9.0]
    """
    return compile_generic(tape)(input_prims)
