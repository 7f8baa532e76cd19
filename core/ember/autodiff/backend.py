"""``Autodiff(inner)``: a backend that records a graph over any backend's primitives.

Every primitive runs on the inner backend; when an input is tracked (and recording is on) the
result also gets a :class:`~ember.autodiff.graph.Node` whose backward rule lives in
:mod:`ember.autodiff.rules`. Non-differentiable ops (comparisons, arg-reductions, int and bool
ops, creation) just forward. Composites Autodiff doesn't override run their default bodies on
Autodiff primitives, so they are differentiable through their parts.
"""

from __future__ import annotations

import inspect

from ..backend import Backend
from ..errors import EmberError
from .checkpoint import STRATEGIES, current_strategy
from .graph import SELF, Node, grad_enabled
from .module_rules import ModuleMethods
from .rules import RULES


class ADPrim:
    """An Autodiff primitive: the inner backend's primitive and, when tracked, its node."""

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


class Autodiff(ModuleMethods, Backend):
    """Reverse-mode autodiff over any backend (Burn's ``Autodiff<B>``).

    ``checkpointing="balanced"`` recomputes cheap elementwise ops in backward instead of
    keeping their outputs alive (see :mod:`ember.autodiff.checkpoint`).

    >>> import ember
    >>> from ember import Autodiff, get_backend
    >>> b = Autodiff(get_backend("numpy"))
    >>> x = ember.tensor([3.0], backend=b).require_grad()
    >>> x.grad((x * x).sum().backward()).tolist()
    [6.0]
    """

    def __init__(self, inner: Backend | str, checkpointing: str | None = None):
        from ..backends import get_backend

        self.inner = get_backend(inner)
        self.name = f"autodiff-{self.inner.name}"
        self.caps = self.inner.caps
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
        spec = RULES[name]
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
        reader = getattr(self.inner, "to_data_async", None)
        return await reader(x.inner) if reader is not None else self.inner.to_data(x.inner)

    def shape(self, x):
        return self.inner.shape(x.inner)

    def dtype(self, x):
        return self.inner.dtype(x.inner)

    def cast(self, x, dtype):
        if not (dtype.is_float and self.inner.dtype(x.inner).is_float):
            return ADPrim(self.inner.cast(x.inner, dtype))  # to int/bool: the gradient stops
        return self._apply("cast", (x,), (dtype,))

    # ------------------------------------------------------------------ layout and indexing
    def slice_assign(self, x, ranges, value):
        inner = self.inner
        return self._apply(
            "slice_assign", (x, value), (ranges,), lambda a, v: inner.slice_assign(a, ranges, v)
        )

    def cat(self, xs, dim):
        inner = self.inner
        return self._apply("cat", tuple(xs), (dim,), lambda *v: inner.cat(list(v), dim))

    def gather(self, x, dim, index):
        inner = self.inner
        return self._apply("gather", (x, index), (dim,), lambda a, i: inner.gather(a, dim, i))

    def scatter(self, x, dim, index, src, reduce="none"):
        inner = self.inner
        return self._apply(
            "scatter",
            (x, index, src),
            (dim, reduce),
            lambda a, i, s: inner.scatter(a, dim, i, s, reduce),
        )

    def index_select(self, x, dim, index):
        inner = self.inner
        return self._apply(
            "index_select", (x, index), (dim,), lambda a, i: inner.index_select(a, dim, i)
        )

    def where(self, cond, a, b):
        return self._apply("where", (cond, a, b))

    def float_sort(self, x, dim, descending):
        values, indices = self.inner.float_sort(x.inner, dim, descending)
        idx = ADPrim(indices)
        return self._record("float_sort", (x, idx), (dim,), values, None), idx


def _unary(name: str):
    sig = inspect.signature(getattr(Backend, name))

    def op(self, x, *params, **kwargs):
        if kwargs:  # normalise keywords to positional params in the contract's order
            bound = sig.bind(self, x, *params, **kwargs)
            bound.apply_defaults()
            params = tuple(bound.arguments.values())[2:]
        return self._apply(name, (x,), params)

    op.__name__ = name
    return op


def _binary(name: str):
    def op(self, a, b):
        return self._apply(name, (a, b))

    op.__name__ = name
    return op


def _forward(name: str):
    """A non-differentiable op: run it on the inner backend, result untracked."""

    def op(self, *args, **kwargs):
        out = getattr(self.inner, name)(*_unwrap(args), **kwargs)
        if isinstance(out, tuple):
            return tuple(ADPrim(o) for o in out)
        return ADPrim(out)

    op.__name__ = name
    return op


_UNARY = (
    "float_neg",
    "float_abs",
    "float_exp",
    "float_log",
    "float_sqrt",
    "float_sin",
    "float_cos",
    "float_atan",
    "float_tanh",
    "float_erf",
    "float_floor",
    "float_ceil",
    "float_round",
    "float_sum",
    "float_prod",
    "float_max",
    "float_min",
    "float_cumsum",
    "float_cumprod",
    "reshape",
    "permute",
    "expand",
    "slice",
    # composites run on the inner backend (its fast version) with a dedicated rule
    "float_sigmoid",
    "float_mean",
    "float_var",
    "float_logsumexp",
    "relu",
    "softmax",
    "log_softmax",
)
_BINARY = (
    "float_add",
    "float_sub",
    "float_mul",
    "float_div",
    "float_pow",
    "float_maximum",
    "float_minimum",
    "float_matmul",
    "float_atan2",
)
_FORWARD = (
    "float_eq",
    "float_lt",
    "float_le",
    "float_ne",
    "float_gt",
    "float_ge",
    "float_isnan",
    "float_isinf",
    "float_argmax",
    "float_argmin",
    "full",
    "arange",
    "random_uniform",
)

for _name in _UNARY:
    setattr(Autodiff, _name, _unary(_name))
for _name in _BINARY:
    setattr(Autodiff, _name, _binary(_name))
for _name in _FORWARD + tuple(n for n in dir(Backend) if n.startswith(("int_", "bool_"))):
    setattr(Autodiff, _name, _forward(_name))
