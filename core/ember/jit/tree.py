"""Arguments and results as flat lists of tensors plus a hashable structure.

>>> import ember
>>> tensors, key = flatten(((ember.ones(2), 3), {"k": "v"}))
>>> len(tensors), key == flatten(((ember.zeros(2), 3), {"k": "v"}))[1]   # same signature
(1, True)
>>> key == flatten(((ember.zeros(3), 3), {"k": "v"}))[1]                # another shape
False
"""

from __future__ import annotations

from ..tensor import Tensor
from .errors import JitError


class _Leaf:
    """A tensor's place in a structure: its shape, dtype, backend and first alias."""

    __slots__ = ("meta",)

    def __init__(self, meta: tuple):
        self.meta = meta

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Leaf) and other.meta == self.meta

    def __hash__(self) -> int:
        return hash(self.meta)

    def __repr__(self) -> str:
        return f"Tensor{self.meta[:2]}"


def flatten(obj, tensors: list | None = None, seen: dict | None = None):
    """``(tensors, structure)``: the tensors found inside tuples, lists and dicts, and a
    hashable description of everything else (non-tensor values compared by value)."""
    tensors = [] if tensors is None else tensors
    seen = {} if seen is None else seen
    if isinstance(obj, Tensor):
        first = seen.setdefault(id(obj._prim), len(tensors))
        tensors.append(obj)
        meta = (obj.shape, obj.dtype, obj.backend, first)
        return tensors, _Leaf(meta)
    if isinstance(obj, (tuple, list)):
        return tensors, (type(obj), tuple(flatten(o, tensors, seen)[1] for o in obj))
    if isinstance(obj, dict):
        items = tuple((k, flatten(v, tensors, seen)[1]) for k, v in obj.items())
        return tensors, (dict, items)
    try:
        hash(obj)
    except TypeError:
        raise JitError(
            f"jit: an argument of type {type(obj).__name__} is neither a tensor nor hashable; "
            "non-tensor arguments are part of the trace's key (pass tensors, numbers, strings "
            "or tuples of them)"
        ) from None
    return tensors, ("value", type(obj), obj)


def unflatten(structure, tensors: list):
    """Rebuild a structure of :func:`flatten`'s around ``tensors`` (in order)."""
    it = iter(tensors)

    def build(node):
        if isinstance(node, _Leaf):
            return next(it)
        kind = node[0]
        if kind == "value":
            return node[2]
        if kind is dict:
            return {k: build(v) for k, v in node[1]}
        return kind(build(v) for v in node[1])

    return build(structure)
