"""Gradient checkpointing: recompute cheap ops in backward instead of keeping their outputs.

Strategies (Burn's names):

- ``None`` / ``"none"``: every value a backward rule needs stays alive until backward;
- ``"balanced"``: memory-bound ops (elementwise math, casts, reshapes: the rules marked
  ``cheap``) keep only their inputs, or the recipe to recompute them, and recompute their
  outputs during backward; compute-bound ops (matmul, reductions, sorts, indexing) store
  theirs. Gradients are identical, the graph holds fewer primitives between forward and
  backward.

Turn it on for a backend, ``Autodiff(inner, checkpointing="balanced")``, or for a region:

>>> import ember
>>> from ember.autodiff import checkpoint, graph_stats
>>> x = ember.tensor([0.5, 1.0], backend="autodiff-numpy").require_grad()
>>> with checkpoint():
...     y = x.exp().sin().tanh()
>>> graph_stats(y)["saved"]  # only x is kept; exp/sin/tanh are recomputed
1
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from ..errors import EmberError
from .graph import SELF, Node

STRATEGIES = (None, "none", "balanced")
_STRATEGY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ember_checkpoint", default=None
)


def current_strategy() -> str | None:
    """The checkpointing strategy of the enclosing ``checkpoint()`` region (None outside)."""
    return _STRATEGY.get()


@contextlib.contextmanager
def checkpoint(strategy: str | None = "balanced") -> Iterator[None]:
    """Within the block, Autodiff ops record with ``strategy`` (``"balanced"`` or ``None``).

    >>> import ember
    >>> x = ember.tensor([0.5, 1.0], backend="autodiff-python").require_grad()
    >>> with checkpoint("balanced"):
    ...     y = x.exp().sin().sum()
    >>> y.backward().get(x).tolist() == x.exp().sin().sum().backward().get(x).tolist()
    True
    """
    if strategy not in STRATEGIES:
        raise EmberError(
            f"checkpoint: unknown strategy {strategy!r}; valid: "
            + ", ".join(repr(s) for s in STRATEGIES)
        )
    token = _STRATEGY.set(None if strategy == "none" else strategy)
    try:
        yield
    finally:
        _STRATEGY.reset(token)


def graph_stats(t) -> dict:
    """What the graph behind tensor ``t`` holds: ``nodes`` (recorded ops), ``saved`` (distinct
    inner primitives kept alive for backward), ``saved_bytes`` and ``recomputed`` (nodes that
    checkpointing will recompute).

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], backend="autodiff-python").require_grad()
    >>> stats = graph_stats((x * 2).sum())
    >>> sorted(stats), stats["nodes"] >= 2
    (['nodes', 'recomputed', 'saved', 'saved_bytes'], True)
    """
    from ..shape import numel

    inner = t.backend.inner
    root = t._prim.node
    seen, stack, prims = set(), [root] if root is not None else [], {}
    recomputed = 0
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        recomputed += n.recompute is not None
        for v in (*n.slots, n.out):
            if v is not None and v is not SELF and not isinstance(v, Node):
                prims[id(v)] = v
        stack.extend(p for p in n.parents if p is not None)
    nbytes = sum(numel(tuple(inner.shape(p))) * inner.dtype(p).itemsize for p in prims.values())
    return {
        "nodes": len(seen),
        "saved": len(prims),
        "saved_bytes": nbytes,
        "recomputed": recomputed,
    }
