"""Run one gradient check on an Autodiff backend and compare with its expected gradients.

Standard library + ember only (like :mod:`runner`), so a browser runner can replay the JSON
form of the checks that :mod:`grad_reference` computes on CPython.

The Ember side: each leaf tensor is created from its stored data and marked
``require_grad()``, the runner's transform (transpose/slice/expand) is applied, the op runs,
and ``loss = sum_k (out_k * cotangent_k).sum()`` is differentiated with ``loss.backward()``;
each leaf's gradient is read with ``grads.get(leaf)``.

>>> # check = decode_check(encode_check(grad_check(case)))   # what a browser runner receives
>>> # assert_grads(case, check, backward_grads(case, check, backend))
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import ember

from .runner import _close, apply_transform, invoke, materialize
from .spec import Case, T, _decode_array, _encode_array

# Gradient tolerances per dtype (rtol, atol); atol is relative to the gradient's scale
# (max(1, max |g|)) since backward sums many rounded terms. The float64 bound covers the
# finite-difference error; float32/float16 cover the backend's rounding in forward and backward.
GRAD_TOLERANCES = {
    "float64": (1e-6, 1e-7),
    "float32": (1e-4, 1e-4),
    "float16": (3e-2, 3e-2),
}


def grad_tolerance(dtype: str, factor: float = 1.0) -> tuple[float, float]:
    rtol, atol = GRAD_TOLERANCES[dtype]
    return rtol * factor, atol * factor


@dataclass
class GradCheck:
    """Expected gradients of one case for one fixed cotangent."""

    id: str
    leaves: tuple  # paths into case.args: (i,) or (i, j) for the j-th tensor of a list argument
    cotangents: tuple  # per output: an array of the output's dtype, or None (integer outputs)
    grads: tuple  # per leaf: float64 values shaped like the leaf's stored data
    undefined: tuple  # per leaf: a bool array of elements at a kink (not compared), or None
    dtype: str  # the dtype that set the tolerance
    rtol: float
    atol: float


# ---------------------------------------------------------------------------- ember side
def _leaf_path_prefixes(paths) -> set:
    return {p[:n] for p in paths for n in range(1, len(p) + 1)}


def backward_grads(case: Case, check: GradCheck, backend) -> list:
    """The gradient of every leaf of ``check`` (an inner-backend Tensor, or None)."""
    wanted = set(check.leaves)
    prefixes = _leaf_path_prefixes(check.leaves)
    leaves: dict = {}

    def build(v, path):
        if path in wanted and isinstance(v, T):
            leaf = ember.tensor(v.data, backend=backend).require_grad()
            leaves[path] = leaf
            return apply_transform(leaf, v.transform)
        if path in prefixes and isinstance(v, (list, tuple)):
            return type(v)(build(x, path + (j,)) for j, x in enumerate(v))
        return materialize(v, backend)

    args = tuple(build(a, (i,)) for i, a in enumerate(case.args))
    result = invoke(case, args, materialize(dict(case.kwargs), backend), backend)
    outs = list(result) if case.multi else [result]
    loss = None
    for out, cot in zip(outs, check.cotangents):
        if cot is None:
            continue
        term = (out * ember.tensor(cot, backend=backend)).sum()
        loss = term if loss is None else loss + term
    assert loss is not None, f"{case.id}: no float output to differentiate"
    grads = loss.backward()
    return [grads.get(leaves[p]) for p in check.leaves]


# ---------------------------------------------------------------------------- comparison
def _values(a) -> tuple[tuple[int, ...], list]:
    if hasattr(a, "values") and hasattr(a, "buffer"):  # TensorData
        return tuple(a.shape), a.values()
    return tuple(a.shape), a.ravel().tolist()  # numpy


def leaf_dtype(case: Case, path) -> str:
    v = case.args[path[0]]
    for j in path[1:]:
        v = v[j]
    return v.data.dtype.name


def compare_grad(
    case: Case, check: GradCheck, k: int, got, want, undefined=None, source: str = "finite diff."
) -> None:
    """Assert leaf ``k``'s gradient ``got`` (Tensor or None) matches ``want`` (array)."""
    label = f"{case.id}: d/d args{list(check.leaves[k])} vs {source}"
    shape, want_v = _values(want)
    skip = _values(undefined)[1] if undefined is not None else [False] * len(want_v)
    if got is None:
        nonzero = [i for i, (w, s) in enumerate(zip(want_v, skip)) if w != 0 and not s]
        assert not nonzero, f"{label}: no gradient reached the input; expected nonzero values"
        return
    assert isinstance(got, ember.Tensor), f"{label}: gradient is {type(got).__name__}"
    data = got.to_data()
    assert tuple(data.shape) == shape, f"{label}: gradient shape {tuple(data.shape)} != {shape}"
    want_dtype = leaf_dtype(case, check.leaves[k])
    assert data.dtype.name == want_dtype, (
        f"{label}: gradient dtype {data.dtype.name} != {want_dtype}"
    )
    got_v = data.values()
    bad = [
        i
        for i, (g, w, s) in enumerate(zip(got_v, want_v, skip))
        if not s and not _close(g, w, check.rtol, check.atol)
    ]
    if bad:
        show = ", ".join(f"[{i}] got {got_v[i]!r} want {want_v[i]!r}" for i in bad[:6])
        raise AssertionError(
            f"{label}: {len(bad)}/{len(want_v)} values differ (rtol={check.rtol:.3g}, "
            f"atol={check.atol:.3g}): {show}"
        )


def assert_grads(case: Case, check: GradCheck, got: list) -> int:
    """Compare every leaf with the finite-difference gradients; returns elements compared."""
    compared = 0
    for k, (g, want, und) in enumerate(zip(got, check.grads, check.undefined)):
        compare_grad(case, check, k, g, want, und)
        n = len(_values(want)[1])
        compared += n - (sum(_values(und)[1]) if und is not None else 0)
    return compared


# ---------------------------------------------------------------------------- JSON form
def _enc(a: Any) -> Any:
    return None if a is None else _encode_array(a)


def _dec(d: Any) -> Any:
    return None if d is None else _decode_array(d)


def encode_check(c: GradCheck) -> dict:
    return {
        "id": c.id,
        "leaves": [list(p) for p in c.leaves],
        "cotangents": [_enc(x) for x in c.cotangents],
        "grads": [_enc(x) for x in c.grads],
        "undefined": [_enc(x) for x in c.undefined],
        "dtype": c.dtype,
        "rtol": c.rtol,
        "atol": c.atol if math.isfinite(c.atol) else repr(c.atol),
    }


def decode_check(d: dict) -> GradCheck:
    return GradCheck(
        id=d["id"],
        leaves=tuple(tuple(p) for p in d["leaves"]),
        cotangents=tuple(_dec(x) for x in d["cotangents"]),
        grads=tuple(_dec(x) for x in d["grads"]),
        undefined=tuple(_dec(x) for x in d["undefined"]),
        dtype=d["dtype"],
        rtol=d["rtol"],
        atol=float(d["atol"]),
    )


def dumps_checks(checks: list[GradCheck]) -> str:
    return json.dumps({"version": 1, "gradients": [encode_check(c) for c in checks]})


def loads_checks(text: str) -> list[GradCheck]:
    return [decode_check(d) for d in json.loads(text)["gradients"]]
