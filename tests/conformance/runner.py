"""Run one conformance case on one backend and compare with its expected outputs.

Standard library + ember only, so the same code replays JSON cases inside Pyodide.
``run_case`` raises ``AssertionError`` with a readable diff on a mismatch.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import ember

from .spec import Case, Expected, T


def _setitem(t, key, value):
    t = t.clone()  # cases must not mutate shared inputs (the op under test is __setitem__)
    t[key] = value
    return t


SPECIAL = {"setitem": _setitem}


def resolve(op: str):
    """The callable an op path names; ``Tensor.X`` returns None (method of the first arg)."""
    if op in SPECIAL:
        return SPECIAL[op]
    head, _, rest = op.partition(".")
    if head == "Tensor":
        return None
    if head == "operator":
        return getattr(operator, rest)
    if head == "builtins":
        import builtins

        return getattr(builtins, rest)
    root = {"ember": ember, "F": None}[head]
    if head == "F":
        import ember.nn.functional as root
    obj = root
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


def make_tensor(spec: T, backend):
    return apply_transform(ember.tensor(spec.data, backend=backend), spec.transform)


def apply_transform(t, transform: tuple):
    """The logical (non-contiguous) tensor of a spec from its stored data ``t``."""
    if transform:
        kind = transform[0]
        if kind == "transpose":
            t = t.transpose(-1, -2)
        elif kind == "slice":
            t = t[..., ::2]
        elif kind == "expand":
            t = t.expand(*transform[1])
        else:
            raise ValueError(f"unknown input transform {kind!r}")
    return t


def materialize(value: Any, backend) -> Any:
    if isinstance(value, T):
        return make_tensor(value, backend)
    if isinstance(value, tuple):
        return tuple(materialize(v, backend) for v in value)
    if isinstance(value, list):
        return [materialize(v, backend) for v in value]
    if isinstance(value, dict):
        return {k: materialize(v, backend) for k, v in value.items()}
    return value


def call(case: Case, backend):
    return invoke(
        case,
        materialize(tuple(case.args), backend),
        materialize(dict(case.kwargs), backend),
        backend,
    )


def invoke(case: Case, args: tuple, kwargs: dict, backend):
    """Call the case's op on already materialized arguments."""
    if case.pass_backend:
        kwargs["backend"] = backend
    fn = resolve(case.op)
    if fn is None:
        attr = getattr(args[0], case.op.split(".", 1)[1])
        return attr(*args[1:], **kwargs) if callable(attr) else attr
    return fn(*args, **kwargs)


_DTYPE_NAMES = {"bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                "float16", "float32", "float64"}


def case_dtypes(case: Case) -> set[str]:
    """Every dtype a case touches: its inputs, dtype arguments and expected outputs."""
    found: set[str] = {e.dtype for e in case.expected}

    def visit(v: Any) -> None:
        if isinstance(v, T):
            found.add(v.data.dtype.name)
        elif isinstance(v, (tuple, list)):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)
        elif isinstance(v, str) and v in _DTYPE_NAMES:
            found.add(v)

    visit(tuple(case.args))
    visit(dict(case.kwargs))
    return found


def missing_dtypes(case: Case, backend) -> list[str]:
    """Dtypes of the case the backend's caps lack (such cases are skipped, not failed)."""
    have = {d.name for d in backend.caps.dtypes}
    return sorted(case_dtypes(case) - have)


# ---------------------------------------------------------------------------- comparison
def _flat_expected(e: Expected) -> tuple[tuple[int, ...], list]:
    d = e.data
    if hasattr(d, "values") and hasattr(d, "buffer"):  # TensorData
        return tuple(d.shape), d.values()
    return tuple(d.shape), d.ravel().tolist()  # numpy


def _close(got: float, want: float, rtol: float, atol: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= atol + rtol * abs(want)


def compare(result, e: Expected, case: Case, label: str = "output") -> None:
    assert isinstance(result, ember.Tensor), (
        f"{case.id}: {label} is {type(result).__name__}, expected an ember.Tensor"
    )
    shape, want = _flat_expected(e)
    data = result.to_data()
    assert tuple(data.shape) == shape, f"{case.id}: {label} shape {tuple(data.shape)} != {shape}"
    assert data.dtype.name == e.dtype, f"{case.id}: {label} dtype {data.dtype.name} != {e.dtype}"
    if not e.check_values:
        return
    got = data.values()
    if e.dtype in ("float16", "float32", "float64"):
        bad = [
            i for i, (g, w) in enumerate(zip(got, want)) if not _close(g, w, case.rtol, case.atol)
        ]
    else:
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    if bad:
        show = ", ".join(f"[{i}] got {got[i]!r} want {want[i]!r}" for i in bad[:6])
        raise AssertionError(
            f"{case.id}: {label} {len(bad)}/{len(want)} values differ "
            f"(rtol={case.rtol}, atol={case.atol}): {show}"
        )


def run_case(case: Case, backend) -> None:
    result = call(case, backend)
    if not case.multi:
        compare(result, case.expected[0], case)
        return
    assert isinstance(result, (tuple, list)), (
        f"{case.id}: expected a sequence of {len(case.expected)} tensors, got {type(result).__name__}"
    )
    for name in case.fields:
        assert hasattr(result, name), f"{case.id}: result has no field {name!r}"
    assert len(result) == len(case.expected), (
        f"{case.id}: {len(result)} outputs, expected {len(case.expected)}"
    )
    for i, (r, e) in enumerate(zip(result, case.expected)):
        compare(r, e, case, f"output {case.fields[i] if case.fields else i}")
