"""The op registry: every backend op declared once, with all that the layers above need.

An :class:`Op` names a backend method (``float_tanh``) and carries:

- ``kind`` — what Fusion and the graph compiler need to know about it (:class:`Kind`);
- ``args`` — the parameter names, and which of them are tensors (primitives);
- ``infer`` — the result's shape and dtype from the inputs' (:class:`Spec`), without running;
- ``default`` — the composite body, written with backend primitives only (None: a required
  primitive every backend implements);
- ``grad`` — its reverse-mode rule (:class:`Gradient`), which Autodiff runs;
- ``wgsl`` — an expression template for fused elementwise kernels.

Ops are declared in the family modules next to this one (``elementwise``, ``reduce``,
``movement``, ...). :class:`~ember.contract.backend.Backend` gets one method per op (the default
body, or one raising :class:`~ember.errors.UnsupportedOpError`); a backend implements an op by
defining the method of that name or with ``Backend.implement(op, fn)``, and
:meth:`Backend.__init_subclass__` rejects a method named like no op. Decorators (Autodiff,
Fusion, ...) wrap every op by reading this table.

>>> from ember.contract import registry
>>> op = registry.get("float_tanh")
>>> op.kind.value, op.tensors, op.infer(registry.Spec((2, 3), "float32"))
('elementwise', ('x',), Spec(shape=(2, 3), dtype='float32'))
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ..errors import UnsupportedOpError


class Kind(enum.Enum):
    """How an op moves data; what a lazy graph needs to fuse or schedule it."""

    ELEMENTWISE = "elementwise"  # out[i] depends on each input's element i only
    REDUCTION = "reduction"  # over ``dims``, kept as size 1
    SCAN = "scan"  # cumulative along one dim
    MOVEMENT = "movement"  # values move, unchanged: reshape, permute, expand, slice, cat, flip
    INDEX = "index"  # data-dependent movement: gather, scatter, index_select, slice_assign
    CONTRACTION = "contraction"  # matmul
    SORT = "sort"
    CREATION = "creation"  # full, arange, random numbers: no tensor inputs
    MODULE = "module"  # layers with their own loops: conv, pool, interpolate, norms, softmax
    DATA = "data"  # crosses the backend boundary or reads metadata: no graph node


class Spec(NamedTuple):
    """A tensor's shape and dtype: what ``infer`` takes and returns (dtype may be a DType or
    its name)."""

    shape: tuple[int, ...]
    dtype: Any


class Gradient(NamedTuple):
    """A backward rule ``fn(c, g)`` → one gradient (or None) per tensor input.

    ``inputs`` lists the inputs the rule reads and ``out`` whether it reads the output (only
    those are kept alive); ``cheap`` marks memory-bound ops that checkpointing recomputes.
    """

    fn: Callable
    inputs: tuple[int, ...] = ()
    out: bool = False
    cheap: bool = False


class Op:
    """One backend op. Create with :func:`declare` (or the family helpers built on it)."""

    __slots__ = (
        "name", "kind", "args", "tensors", "tensor_positions", "infer", "default", "grad",
        "differentiable", "wgsl", "doc", "outputs", "defaults",
    )

    def __init__(
        self,
        name: str,
        kind: Kind,
        args: tuple[str, ...],
        defaults: dict[str, Any],
        tensors: tuple[str, ...],
        infer: Callable,
        differentiable: bool,
        wgsl: str | None,
        doc: str,
        outputs: int,
    ):
        self.name, self.kind, self.args, self.tensors = name, kind, args, tensors
        self.defaults = defaults
        self.tensor_positions = tuple(i for i, a in enumerate(args) if a in tensors)
        self.infer, self.differentiable, self.wgsl, self.doc = infer, differentiable, wgsl, doc
        self.outputs = outputs
        self.default: Callable | None = None
        self.grad: Gradient | None = None

    @property
    def required(self) -> bool:
        """A primitive every backend must implement (it has no default body)."""
        return self.default is None

    def implements(self, fn: Callable) -> Op:
        """Decorator: ``fn(self, *args)`` is this op's composite default body, a method of
        every backend that doesn't override it. Returns the op, so the module-level name
        stays the op."""
        if self.default is not None:
            raise ValueError(f"{self.name}: a default body is already declared")
        fn.__name__ = fn.__qualname__ = self.name
        self.doc = fn.__doc__ = fn.__doc__ or self.doc
        self.default = fn
        return self

    def gradient(self, inputs: tuple[int, ...] = (), out: bool = False, cheap: bool = False):
        """Decorator: ``fn(c, g)`` is this op's backward rule (see :class:`Gradient`)."""

        def register(fn: Callable) -> Callable:
            if not self.differentiable:
                raise ValueError(f"{self.name} is declared non-differentiable")
            self.grad = Gradient(fn, tuple(inputs), out, cheap)
            return fn

        return register

    def missing(self) -> Callable:
        """The method a backend without this op has: it raises, naming the op."""
        name = self.name

        def missing(b, *args, **kwargs):
            raise UnsupportedOpError(
                f"{name}: backend '{b.name}' does not implement this required primitive"
            )

        missing.__name__ = missing.__qualname__ = name
        missing.__doc__ = self.doc
        missing.is_required = True
        return missing

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """``args`` and ``kwargs`` of a call as one positional tuple in declared order, with
        the declared defaults filled in."""
        out = list(args)
        kwargs = dict(kwargs)
        for name in self.args[len(args):]:
            if name in kwargs:
                out.append(kwargs.pop(name))
            elif name in self.defaults:
                out.append(self.defaults[name])
            else:
                raise TypeError(f"{self.name}: missing argument {name!r}")
        if kwargs:
            raise TypeError(f"{self.name}: unexpected arguments {', '.join(kwargs)}")
        return tuple(out)

    def __repr__(self) -> str:
        return f"<op {self.name} ({self.kind.value})>"


REGISTRY: dict[str, Op] = {}


def declare(
    name: str,
    kind: Kind,
    args: str,
    infer: Callable,
    *,
    tensors: str | None = None,
    differentiable: bool = True,
    wgsl: str | None = None,
    doc: str = "",
    outputs: int = 1,
) -> Op:
    """Declare an op. ``args`` is its parameter list (``"x, dims"``, defaults as Python
    literals: ``"x, approximate='none'"``); ``tensors`` the names among them that are
    primitives (default: ``x``, ``a``, ``b``, ``y`` and ``cond``).

    A declaration without a later ``@op.implements`` body is a required primitive.
    """
    if name in REGISTRY:
        raise ValueError(f"op {name} is declared twice")
    names, defaults = _parse_args(args)
    if tensors is None:
        chosen = tuple(a for a in names if a in _TENSOR_NAMES)
    else:
        chosen = tuple(a.strip() for a in tensors.split(",") if a.strip())
    op = Op(name, kind, names, defaults, chosen, infer, differentiable, wgsl, doc, outputs)
    REGISTRY[name] = op
    return op


_TENSOR_NAMES = frozenset({"x", "y", "a", "b", "cond"})


def _parse_args(args: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    names, defaults = [], {}
    for part in (p.strip() for p in args.split(",")):
        if not part:
            continue
        name, eq, default = (s.strip() for s in part.partition("="))
        names.append(name)
        if eq:
            defaults[name] = ast.literal_eval(default)
    return tuple(names), defaults


def get(name: str) -> Op:
    """The op called ``name``; UnsupportedOpError naming the closest ones when there is none."""
    op = REGISTRY.get(name)
    if op is None:
        import difflib

        near = difflib.get_close_matches(name, REGISTRY, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise UnsupportedOpError(f"no op named {name!r} in the registry{hint}")
    return op


def ops(kind: Kind | None = None) -> Iterator[Op]:
    """Every declared op (of one kind)."""
    return (op for op in REGISTRY.values() if kind is None or op.kind is kind)
