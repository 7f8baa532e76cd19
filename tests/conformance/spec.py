"""Conformance cases as data, and their JSON form.

A :class:`Case` names an op, its arguments (tensor inputs are :class:`T` specs, everything else
is a plain Python value: scalars, tuples, slices, strings, dtype names), keyword arguments and
the expected outputs (computed on CPython with a numpy float64 reference, never with Ember).

This module needs only the standard library (it runs in Pyodide, where there is no numpy):
arrays are numpy arrays when the catalog is built on CPython and :class:`ember.TensorData`
when a case is decoded from JSON; every consumer accepts both.

>>> # cases = loads(dumps(cases))  # what a browser runner receives
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from typing import Any

# Tolerances per output dtype (rtol, atol), multiplied by a case's ``tol`` factor.
TOLERANCES = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3),
}


@dataclass
class T:
    """A tensor argument: ``data`` goes to ``ember.tensor``; ``transform`` then makes it
    non-contiguous on the Ember side: ``("transpose",)`` swaps the last two dims,
    ``("slice",)`` takes every other element of the last dim, ``("expand", shape)`` expands."""

    data: Any  # numpy.ndarray (CPython) or ember.TensorData (decoded)
    transform: tuple = ()


@dataclass
class Expected:
    """One expected output: values (float outputs in float64) and the dtype Ember must give."""

    data: Any  # numpy.ndarray or ember.TensorData
    dtype: str
    check_values: bool = True  # False for ``empty``: only shape and dtype are defined


@dataclass
class Case:
    id: str
    op: str  # "ember.add", "Tensor.sum", "F.conv2d", "operator.add", "builtins.abs", "setitem"
    args: tuple
    kwargs: dict
    expected: tuple  # of Expected; one per output tensor
    multi: bool = False  # the op returns a sequence (tuple/list/namedtuple) of tensors
    fields: tuple = ()  # namedtuple field names that must exist, in order
    rtol: float = 0.0
    atol: float = 0.0
    pass_backend: bool = False  # call with ``backend=`` (creation ops)
    differentiable: bool = False  # checked by the gradient suite
    grad_inputs: tuple = ()  # indices into ``args`` of the inputs gradients are taken for
    tags: tuple = ()


def tolerance(dtype: str, scale: float = 1.0) -> tuple[float, float]:
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    return rtol * scale, atol * scale


# ---------------------------------------------------------------------------- JSON encoding
def _encode_array(a: Any) -> dict:
    if (
        hasattr(a, "buffer")
        and hasattr(a, "dtype")
        and hasattr(a, "shape")
        and not hasattr(a, "tobytes")
    ):  # TensorData
        raw, dtype, shape = a.buffer, a.dtype.name, a.shape
    else:  # numpy
        dtype = a.dtype.name
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        shape = a.shape
    return {"dtype": dtype, "shape": list(shape), "b64": base64.b64encode(raw).decode("ascii")}


def _decode_array(d: dict):
    from ember.tensordata import TensorData

    return TensorData(base64.b64decode(d["b64"]), tuple(d["shape"]), d["dtype"])


def encode_value(v: Any) -> Any:
    """A case argument → JSON-ready value (tagged dicts for what JSON lacks)."""
    if isinstance(v, T):
        return {"$tensor": _encode_array(v.data), "transform": encode_value(list(v.transform))}
    if isinstance(v, tuple):
        return {"$tuple": [encode_value(x) for x in v]}
    if isinstance(v, list):
        return [encode_value(x) for x in v]
    if isinstance(v, slice):
        return {"$slice": [encode_value(v.start), encode_value(v.stop), encode_value(v.step)]}
    if v is Ellipsis:
        return {"$ellipsis": True}
    if isinstance(v, dict):
        return {"$dict": {k: encode_value(x) for k, x in v.items()}}
    if isinstance(v, float) and not math.isfinite(v):
        return {"$float": repr(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "item") and getattr(v, "shape", None) == ():  # numpy scalar
        return encode_value(v.item())
    raise TypeError(f"encode_value: can't encode {type(v).__name__}")


def decode_value(v: Any) -> Any:
    if isinstance(v, list):
        return [decode_value(x) for x in v]
    if isinstance(v, dict):
        if "$tensor" in v:
            transform = decode_value(v["transform"])
            transform = tuple(tuple(x) if isinstance(x, list) else x for x in transform)
            return T(_decode_array(v["$tensor"]), transform)
        if "$tuple" in v:
            return tuple(decode_value(x) for x in v["$tuple"])
        if "$slice" in v:
            return slice(*(decode_value(x) for x in v["$slice"]))
        if "$ellipsis" in v:
            return Ellipsis
        if "$dict" in v:
            return {k: decode_value(x) for k, x in v["$dict"].items()}
        if "$float" in v:
            return float(v["$float"])
    return v


def encode_case(c: Case) -> dict:
    return {
        "id": c.id,
        "op": c.op,
        "args": encode_value(tuple(c.args)),
        "kwargs": encode_value(dict(c.kwargs)),
        "expected": [
            {"data": _encode_array(e.data), "dtype": e.dtype, "check_values": e.check_values}
            for e in c.expected
        ],
        "multi": c.multi,
        "fields": list(c.fields),
        "rtol": c.rtol,
        "atol": c.atol,
        "pass_backend": c.pass_backend,
        "differentiable": c.differentiable,
        "grad_inputs": list(c.grad_inputs),
        "tags": list(c.tags),
    }


def decode_case(d: dict) -> Case:
    return Case(
        id=d["id"],
        op=d["op"],
        args=decode_value(d["args"]),
        kwargs=decode_value(d["kwargs"]),
        expected=tuple(
            Expected(_decode_array(e["data"]), e["dtype"], e["check_values"]) for e in d["expected"]
        ),
        multi=d["multi"],
        fields=tuple(d["fields"]),
        rtol=d["rtol"],
        atol=d["atol"],
        pass_backend=d["pass_backend"],
        differentiable=d["differentiable"],
        grad_inputs=tuple(d["grad_inputs"]),
        tags=tuple(d["tags"]),
    )


def dumps(cases: list[Case]) -> str:
    """The catalog as one JSON document (what a browser runner replays)."""
    return json.dumps({"version": 1, "cases": [encode_case(c) for c in cases]})


def loads(text: str) -> list[Case]:
    return [decode_case(d) for d in json.loads(text)["cases"]]
