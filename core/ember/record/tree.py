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

from ..data import TensorData
from ..errors import RecordError
from ..tensor import Tensor

_MARKERS = ("__tensor__", "__tuple__", "__dict__")


def flatten(
    state: Any, to_state: Callable[[Any], Any] | None = None
) -> tuple[Any, dict[str, TensorData]]:
    """``(json_tree, {key: TensorData})``; ``to_state`` turns a Module/Optimizer into its
    state dict (applied to any value that isn't a plain container or leaf)."""
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
    """The inverse of :func:`flatten`; ``tensors`` maps keys to loaded values."""
    if isinstance(tree, list):
        return [unflatten(v, tensors) for v in tree]
    if isinstance(tree, dict):
        if "__tensor__" in tree:
            key = tree["__tensor__"]
            if key not in tensors:
                raise RecordError(
                    f"record: the metadata names tensor {key!r} but the file "
                    "doesn't hold it (corrupt file)"
                )
            return tensors[key]
        if "__tuple__" in tree:
            return tuple(unflatten(v, tensors) for v in tree["__tuple__"])
        if "__dict__" in tree:
            return {
                (tuple(k) if isinstance(k, list) else k): unflatten(v, tensors)
                for k, v in tree["__dict__"]
            }
        return {k: unflatten(v, tensors) for k, v in tree.items()}
    return tree


def tensor_keys(tree: Any) -> list[str]:
    """Every tensor key the tree refers to."""
    out: list[str] = []
    if isinstance(tree, list):
        for v in tree:
            out += tensor_keys(v)
    elif isinstance(tree, dict):
        if "__tensor__" in tree:
            return [tree["__tensor__"]]
        for v in tree.get("__tuple__", []):
            out += tensor_keys(v)
        for _, v in tree.get("__dict__", []):
            out += tensor_keys(v)
        for k, v in tree.items():
            if k not in _MARKERS:
                out += tensor_keys(v)
    return out
