"""The autodiff graph: nodes, the reverse topological walk, and the Gradients container.

A tracked primitive points at a :class:`Node`. A node keeps what its backward rule needs:
``slots`` (one per input: the input's inner primitive, a producer Node to recompute it from
when checkpointing, or None when the rule doesn't need it) and ``out`` (its own output, the
``SELF`` marker when it is recomputed, or None). Node ids grow with creation, so every node's
id is larger than its parents' and sorting by id descending is a topological order.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections.abc import Callable, Iterator

from ..errors import EmberError, ShapeError

_ids = itertools.count(1)
_GRAD_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("ember_grad", default=True)

SELF = object()  # ``Node.out`` marker: recompute this node's own output (checkpointing)


def grad_enabled() -> bool:
    """Whether ops on an Autodiff backend record the graph (False inside ``no_grad()``).

    >>> import ember
    >>> with ember.no_grad():
    ...     print(grad_enabled())
    False
    >>> grad_enabled()
    True
    """
    return _GRAD_ENABLED.get()


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Within the block, Autodiff ops record nothing (results are untracked).

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], backend="autodiff-numpy").require_grad()
    >>> with ember.no_grad():
    ...     y = x * 2
    >>> y.is_require_grad()
    False
    """
    token = _GRAD_ENABLED.set(False)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    """Turn recording back on inside a ``no_grad()`` block.

    >>> import ember
    >>> x = ember.tensor([1.0], backend="autodiff-python").require_grad()
    >>> with ember.no_grad():
    ...     with enable_grad():
    ...         y = x * 2
    >>> y.is_require_grad()
    True
    """
    token = _GRAD_ENABLED.set(True)
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


class Node:
    """One recorded op (or a leaf when ``rule`` is None)."""

    __slots__ = (
        "__weakref__",
        "dtypes",
        "grad",
        "id",
        "name",
        "out",
        "params",
        "parents",
        "recompute",
        "released",
        "retain",
        "rule",
        "shapes",
        "slots",
    )

    def __init__(
        self,
        name: str,
        parents: tuple,
        rule: Callable | None = None,
        slots=(),
        out=None,
        params=(),
        shapes=(),
        dtypes=(),
        recompute=None,
    ):
        self.id = next(_ids)
        self.name = name
        self.parents = parents
        self.rule = rule
        self.slots = slots
        self.out = out
        self.params = params
        self.shapes = shapes
        self.dtypes = dtypes
        self.recompute = recompute
        self.retain = rule is None  # leaves keep their gradient; require_grad() sets it too
        self.released = False
        self.grad = None  # a retained node's gradient summed over backward calls (``t.grad``)

    @classmethod
    def leaf(cls) -> Node:
        return cls("leaf", ())

    @property
    def is_leaf(self) -> bool:
        return self.rule is None and not self.released

    def release(self) -> None:
        """Drop what backward needed (the saved primitives): the graph is consumed."""
        self.parents = ()
        self.slots = ()
        self.out = None
        self.recompute = None
        self.released = True

    def __repr__(self) -> str:
        return f"<Node {self.name} #{self.id}>"


def materialize(node: Node, cache: dict) -> object:
    """The output of a checkpointed node, recomputed (iteratively: chains can be long)."""
    if node.id in cache:
        return cache[node.id]
    todo, stack, seen = [], [node], set()
    while stack:
        n = stack.pop()
        if n.id in cache or n.id in seen:
            continue
        seen.add(n.id)
        todo.append(n)
        stack.extend(s for s in n.slots if isinstance(s, Node))
    for n in sorted(todo, key=lambda n: n.id):
        args = [cache[s.id] if isinstance(s, Node) else s for s in n.slots]
        cache[n.id] = n.recompute(*args)
    return cache[node.id]


class Context:
    """What a backward rule sees: the inner backend, saved inputs/output, params, shapes."""

    __slots__ = ("b", "cache", "node")

    def __init__(self, b, node: Node, cache: dict):
        self.b, self.node, self.cache = b, node, cache

    def x(self, i: int):
        """The value of input ``i`` (stored, or recomputed under checkpointing)."""
        slot = self.node.slots[i]
        if isinstance(slot, Node):
            return materialize(slot, self.cache)
        if slot is None:
            raise EmberError(f"autodiff: rule {self.node.name} read input {i} it didn't save")
        return slot

    @property
    def out(self):
        out = self.node.out
        return materialize(self.node, self.cache) if out is SELF else out

    @property
    def params(self) -> tuple:
        return self.node.params

    def shape(self, i: int = 0) -> tuple[int, ...]:
        return self.node.shapes[i]

    def dtype(self, i: int = 0):
        return self.node.dtypes[i]

    def wants(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (skip the work when it doesn't)."""
        return self.node.parents[i] is not None


def run_backward(
    root: Node,
    seed,
    b,
    grads: Gradients,
    retain_graph: bool = False,
    before_grad: Callable[[Node], None] | None = None,
) -> Gradients:
    """Propagate ``seed`` (an inner primitive shaped like the root) back to the leaves: each
    retained node's gradient goes into ``grads`` and is added to its ``grad`` (PyTorch's
    accumulating ``.grad``), after ``before_grad(node)`` when given."""
    nodes: dict[int, Node] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        if n.id in nodes:
            continue
        if n.released:
            raise EmberError(
                f"backward: the graph through {n.name} was already used by a backward call and "
                "released; pass retain_graph=True to the first backward to run it twice"
            )
        nodes[n.id] = n
        stack.extend(p for p in n.parents if p is not None)
    pending = {root.id: seed}
    cache: dict = {}
    for n in sorted(nodes.values(), key=lambda n: -n.id):
        g = pending.pop(n.id, None)
        if g is not None and n.retain:
            grads._accumulate(n.id, g)
            if before_grad is not None:
                before_grad(n)
            n.grad = g if n.grad is None else b.float_add(n.grad, g)
        if n.rule is None:
            continue
        if g is not None:
            out = n.rule(Context(b, n, cache), g)
            for parent, pg in zip(n.parents, out):
                if parent is None or pg is None:
                    continue
                prev = pending.get(parent.id)
                pending[parent.id] = pg if prev is None else b.float_add(prev, pg)
        if not retain_graph:
            n.release()
    return grads


class Gradients:
    """Gradients of one (or several accumulated) backward calls, keyed by tracked tensor:
    Burn's explicit gradients, which ``loss.backward()`` returns.

    ``grads.get(x)`` reads one (a Tensor on the inner backend, or None); ``grads.remove(x)``
    takes it out; ``grads1 + grads2`` (or ``loss.backward(into=grads)``) accumulates. The same
    backward call also adds each gradient to ``x.grad`` (PyTorch's attribute).

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], backend="autodiff-numpy").require_grad()
    >>> grads = (x * x).sum().backward()
    >>> grads.get(x).tolist(), x in grads, len(grads)
    ([2.0, 4.0], True, 1)
    >>> grads.remove(x).tolist(), grads.get(x), x.grad.tolist()
    ([2.0, 4.0], None, [2.0, 4.0])
    """

    def __init__(self, inner, wrap: Callable):
        self.inner = inner  # the backend the gradient primitives live on
        self._wrap = wrap  # primitive, backend -> the user's tensor (ember.Tensor)
        self._grads: dict[int, object] = {}

    def _accumulate(self, key: int, g) -> None:
        prev = self._grads.get(key)
        self._grads[key] = g if prev is None else self.inner.float_add(prev, g)

    @staticmethod
    def _key(t) -> int | None:
        node = getattr(getattr(t, "_prim", None), "node", None)
        return None if node is None else node.id

    def get(self, t):
        """The gradient of tracked tensor ``t`` (a Tensor on the inner backend), or None."""
        g = self._grads.get(self._key(t))
        return None if g is None else self._wrap(g, self.inner)

    def remove(self, t):
        """Take ``t``'s gradient out (returned; None if it had none)."""
        g = self._grads.pop(self._key(t), None)
        return None if g is None else self._wrap(g, self.inner)

    def __contains__(self, t) -> bool:
        return self._key(t) in self._grads

    def __len__(self) -> int:
        return len(self._grads)

    def __add__(self, other: Gradients) -> Gradients:
        if not isinstance(other, Gradients):
            return NotImplemented
        out = Gradients(self.inner, self._wrap)
        out._grads = dict(self._grads)
        out += other
        return out

    def __iadd__(self, other: Gradients) -> Gradients:  # noqa: PYI034
        if not isinstance(other, Gradients):
            return NotImplemented
        if other.inner is not self.inner:
            raise EmberError(
                f"Gradients +: gradients live on different backends ({self.inner.name} and "
                f"{other.inner.name})"
            )
        for key, g in other._grads.items():
            prev = self._grads.get(key)
            if prev is not None and tuple(self.inner.shape(prev)) != tuple(self.inner.shape(g)):
                raise ShapeError("Gradients +: one tensor has gradients of different shapes")
            self._accumulate(key, g)
        return self

    def __repr__(self) -> str:
        return f"<Gradients of {len(self)} tensors on {self.inner.name}>"
