"""``Autodiff(inner)``: a backend that records a graph over any backend's primitives.

Generic over the op registry: every op with a gradient rule (declared next to the op in
:mod:`ember.contract`) runs on the inner backend and, when an input is tracked (and recording
is on), its result gets a :class:`~ember.autodiff.graph.Node` holding that rule.
Non-differentiable ops (comparisons, arg-reductions, int and bool ops, creation) just forward.
Composites without a rule run their default bodies on Autodiff primitives, so they are
differentiable through their parts.
"""

from __future__ import annotations

import dataclasses

from ..contract import Backend, registry
from ..errors import EmberError
from .checkpoint import STRATEGIES, current_strategy
from .graph import SELF, Node, grad_enabled


class ADPrim:
    """An Autodiff primitive: the inner backend's primitive and, when tracked, its node.

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python")
    >>> type(x._prim).__name__, x._prim.node is None, x.require_grad()._prim.node is not None
    ('ADPrim', True, True)
    """

    __slots__ = ("__weakref__", "inner", "node")

    def __init__(self, inner, node: Node | None = None):
        self.inner = inner
        self.node = node

    def __repr__(self) -> str:
        return f"ADPrim({self.inner!r}, node={self.node!r})"


def _unwrap(v):
    if isinstance(v, ADPrim):
        return v.inner
    if isinstance(v, (list, tuple)):
        return type(v)(_unwrap(x) for x in v)
    return v


def _slot(x: ADPrim):
    """What a node keeps of input ``x``: its producer when that one can be recomputed."""
    node = x.node
    return node if node is not None and node.recompute is not None else x.inner


class Autodiff(Backend):
    """Reverse-mode autodiff over any backend (Burn's ``Autodiff<B>``).

    ``checkpointing="balanced"`` recomputes cheap elementwise ops in backward instead of
    keeping their outputs alive (see :mod:`ember.autodiff.checkpoint`).

    >>> import ember
    >>> from ember import Autodiff, get_backend
    >>> b = Autodiff(get_backend("numpy"))
    >>> x = ember.tensor([3.0], backend=b).require_grad()
    >>> (x * x).sum().backward().get(x).tolist()
    [6.0]
    """

    def __init__(self, inner: Backend | str, checkpointing: str | None = None):
        from ..backends import get_backend

        self.inner = get_backend(inner)
        self.name = f"autodiff-{self.inner.name}"
        self.caps = dataclasses.replace(self.inner.caps, gradients=True, threadsafe=False)
        self.device = self.inner.device
        if checkpointing not in STRATEGIES:
            raise EmberError(
                f"Autodiff: unknown checkpointing {checkpointing!r}; valid: "
                + ", ".join(repr(s) for s in STRATEGIES)
            )
        self.checkpointing = None if checkpointing == "none" else checkpointing

    # ------------------------------------------------------------------ plumbing
    def from_inner(self, primitive) -> ADPrim:
        """Lift an inner-backend primitive (untracked, no copy)."""
        return ADPrim(primitive)

    def _apply(self, name: str, inputs: tuple, params: tuple = (), fwd=None) -> ADPrim:
        if fwd is None:
            fn = getattr(self.inner, name)
            fwd = (lambda *v: fn(*v, *params)) if params else fn
        return self._record(name, inputs, params, fwd(*(x.inner for x in inputs)), fwd)

    def _record(self, name: str, inputs: tuple, params: tuple, out, fwd) -> ADPrim:
        parents = tuple(x.node for x in inputs)
        if not any(parents) or not grad_enabled():
            return ADPrim(out)
        spec = registry.REGISTRY[name].grad
        inner = self.inner
        shapes = tuple(tuple(inner.shape(x.inner)) for x in inputs)
        dtypes = tuple(inner.dtype(x.inner) for x in inputs)
        if spec.cheap and (self.checkpointing or current_strategy()):
            # keep the inputs (or their producers), not the output: backward recomputes it
            node = Node(
                name,
                parents,
                spec.fn,
                tuple(_slot(x) for x in inputs),
                SELF if spec.out else None,
                params,
                shapes,
                dtypes,
                fwd,
            )
        else:
            slots = tuple(_slot(x) if i in spec.inputs else None for i, x in enumerate(inputs))
            node = Node(
                name, parents, spec.fn, slots, out if spec.out else None, params, shapes, dtypes
            )
        return ADPrim(out, node)

    # ------------------------------------------------------------------ data
    def from_data(self, data):
        return ADPrim(self.inner.from_data(data))

    def to_data(self, x):
        return self.inner.to_data(x.inner)

    async def to_data_async(self, x):
        return await self.inner.to_data_async(x.inner)

    def shape(self, x):
        return self.inner.shape(x.inner)

    def dtype(self, x):
        return self.inner.dtype(x.inner)

    def cast(self, x, dtype):
        if not (dtype.is_float and self.inner.dtype(x.inner).is_float):
            return ADPrim(self.inner.cast(x.inner, dtype))  # to int/bool: the gradient stops
        return self._apply("cast", (x,), (dtype,))

    # ------------------------------------------------------------------ ops with a shape of their own
    def cat(self, xs, dim):
        inner = self.inner
        return self._apply("cat", tuple(xs), (dim,), lambda *v: inner.cat(list(v), dim))

    def float_sort(self, x, dim, descending):
        values, indices = self.inner.float_sort(x.inner, dim, descending)
        idx = ADPrim(indices)
        return self._record("float_sort", (x, idx), (dim,), values, None), idx


def _differentiable(op: registry.Op):
    """Run ``op`` on the inner backend and record its gradient rule."""
    name, positions = op.name, op.tensor_positions
    if op.args == op.tensors:  # tensors only (elementwise, matmul, where): the hot path

        def method(self, *xs):
            return self._apply(name, xs)

    elif positions == (0,):  # one tensor, then parameters (reductions, layout, activations)

        def method(self, x, *params, **kwargs):
            if kwargs or len(params) < len(op.args) - 1:
                params = op.bind((x, *params), kwargs)[1:]
            return self._apply(name, (x,), params)

    else:  # tensors among parameters, some optional (gather, conv, norms)

        def method(self, *args, **kwargs):
            args = op.bind(args, kwargs)
            slots = [i for i in positions if args[i] is not None]
            params = tuple(a for i, a in enumerate(args) if i not in positions)
            fn = getattr(self.inner, name)

            def fwd(*prims):
                call = list(args)
                for i, p in zip(slots, prims):
                    call[i] = p
                return fn(*call)

            return self._apply(name, tuple(args[i] for i in slots), params, fwd)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _forwarded(op: registry.Op):
    """A non-differentiable op: run it on the inner backend, result untracked."""
    name = op.name

    def method(self, *args, **kwargs):
        out = getattr(self.inner, name)(*_unwrap(args), **kwargs)
        if isinstance(out, tuple):
            return tuple(ADPrim(o) for o in out)
        return ADPrim(out)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _install() -> None:
    """One method per op, read from the registry: recorded, forwarded, or (composites
    without a rule) the default body, differentiable through its parts."""
    own = set(vars(Autodiff))
    for op in registry.ops():
        if op.name in own:
            continue
        if not op.differentiable:
            setattr(Autodiff, op.name, _forwarded(op))
        elif op.grad is not None:
            setattr(Autodiff, op.name, _differentiable(op))
        elif op.required:
            raise TypeError(f"Autodiff: required op {op.name} has no gradient rule")


_install()
