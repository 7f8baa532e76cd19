"""Nested state (dicts/lists of tensors and numbers) ⇄ flat tensors + a JSON tree.

An optimizer's ``state_dict()`` is ``{"state": {3: {"exp_avg": T, "step": 7}}, ...}``. The
tensors go to safetensors under dotted keys (``state.3.exp_avg``); everything else, with a
``{"__tensor__": key}`` placeholder where each tensor was, goes to the JSON tree. Dicts with
non-string keys and tuples are tagged so they come back as they went in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..tensordata import TensorData
from ..errors import RecordError
from ..tensor import Tensor

_MARKERS = ("__tensor__", "__tuple__", "__dict__")


def flatten(
    state: Any, to_state: Callable[[Any], Any] | None = None
) -> tuple[Any, dict[str, TensorData]]:
    """``(json_tree, {key: TensorData})``; ``to_state`` turns a Module/Optimizer into its
    state dict (applied to any value that isn't a plain container or leaf).

    >>> import ember
    >>> state = {"w": ember.tensor([1.0]), "epoch": 3, "xs": [1, ember.tensor([2])]}
    >>> tree, tensors = flatten(state)
    >>> tree
    {'w': {'__tensor__': 'w'}, 'epoch': 3, 'xs': [1, {'__tensor__': 'xs.1'}]}
    >>> {key: data.tolist() for key, data in tensors.items()}
    {'w': [1.0], 'xs.1': [2]}
    """
    tensors: dict[str, TensorData] = {}

    def walk(value: Any, path: list[str]) -> Any:
        key = ".".join(path)
        if isinstance(value, Tensor):
            if key in tensors:
                raise RecordError(f"record: two tensors would both be stored as {key!r}")
            tensors[key] = value.to_data()
            return {"__tensor__": key}
        if isinstance(value, TensorData):
            tensors[key] = value
            return {"__tensor__": key}
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value
        if isinstance(value, dict):
            items = [(k, walk(v, path + [str(k)])) for k, v in value.items()]
            if all(isinstance(k, str) and k not in _MARKERS for k, _ in items):
                return dict(items)
            for k, _ in items:
                if not isinstance(k, (str, int, float, bool)) and k is not None:
                    raise RecordError(
                        f"record: can't store a dict key of type {type(k).__name__} at {key!r}"
                    )
            return {"__dict__": [[k, v] for k, v in items]}
        if isinstance(value, tuple):
            return {"__tuple__": [walk(v, path + [str(i)]) for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [walk(v, path + [str(i)]) for i, v in enumerate(value)]
        if to_state is not None:
            converted = to_state(value)
            if converted is not value:
                return walk(converted, path)
        if hasattr(value, "__float__") and not hasattr(value, "__len__"):
            number = float(value)  # a numpy scalar
            if (
                hasattr(value, "is_integer")
                and not math.isnan(number)
                and number.is_integer()
                and "int" in type(value).__name__
            ):
                return int(value)
            return number
        raise RecordError(
            f"record: can't store a {type(value).__name__} at {key or '<root>'!r} (a record "
            "holds tensors, numbers, strings, None, and lists/tuples/dicts of them)"
        )

    return walk(state, []), tensors


def unflatten(tree: Any, tensors: dict[str, Any]) -> Any:
    """The inverse of :func:`flatten`; ``tensors`` maps keys to loaded values. A tree that
    flatten could not have written raises RecordError (it comes from a file).

    >>> from ember.tensordata import TensorData
    >>> tree = {"w": {"__tensor__": "w"}, "epoch": 3}
    >>> unflatten(tree, {"w": TensorData.from_list([1.0])})["w"].tolist()
    [1.0]
    """
    if isinstance(tree, list):
        return [unflatten(v, tensors) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if "__tensor__" in tree:
        key = tree["__tensor__"]
        if key not in tensors:
            raise RecordError(
                f"record: the metadata names tensor {key!r} but the file doesn't hold it "
                "(corrupt file)"
            )
        return tensors[key]
    if "__tuple__" in tree:
        return tuple(unflatten(v, tensors) for v in _marked(tree, "__tuple__"))
    if "__dict__" in tree:
        return {k: unflatten(v, tensors) for k, v in _pairs(tree)}
    return {k: unflatten(v, tensors) for k, v in tree.items()}


def tensor_keys(tree: Any) -> list[str]:
    """Every tensor key the tree refers to (RecordError for a key that isn't a string)."""
    out: list[str] = []
    pending = [tree]
    while pending:  # a stack, not recursion: the list grows once per tensor (linear time)
        node = pending.pop()
        if isinstance(node, list):
            pending += node
        elif isinstance(node, dict):
            if "__tensor__" in node:
                if not isinstance(node["__tensor__"], str):
                    raise RecordError(f"record: tensor key {node['__tensor__']!r} is not a string")
                out.append(node["__tensor__"])
            elif "__tuple__" in node:
                pending += _marked(node, "__tuple__")
            elif "__dict__" in node:
                pending += [v for _, v in _pairs(node)]
            else:
                pending += node.values()
    return out


def _marked(tree: dict, marker: str) -> list:
    value = tree[marker]
    if not isinstance(value, list):
        raise RecordError(f"record: {marker} holds a {type(value).__name__}, not a list "
                          "(corrupt file)")
    return value


def _pairs(tree: dict) -> list[tuple[Any, Any]]:
    """The ``[[key, value], ...]`` of a tagged dict, each key a scalar as flatten wrote it."""
    pairs = _marked(tree, "__dict__")
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2
                and (pair[0] is None or isinstance(pair[0], (str, int, float)))):
            raise RecordError(f"record: a __dict__ entry {str(pair)[:60]} is not a [scalar key, "
                              "value] pair (corrupt file)")
    return [tuple(pair) for pair in pairs]
