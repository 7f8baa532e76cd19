"""Helpers for writing catalog cases on CPython (numpy float64 references).

A case is written as ``case(id, op, *args, ref=..., out=...)``: ``args`` hold :func:`t`
tensor specs and plain values; ``ref`` gets the same arguments with tensors replaced by their
logical numpy values (floats widened to float64, ints to int64) and returns the expected
output(s), which are then cast to ``out`` (so integer results wrap and float16 overflows to inf
as the real dtype would).
"""

from __future__ import annotations

import math

import numpy as np

from .spec import Case, Expected, T, tolerance

FLOATS = ("float32", "float16", "float64")
INTS = ("int32", "int64", "int8", "uint8")
NUMERIC = FLOATS + INTS

CASES: list[Case] = []  # filled by the catalog modules as they import
# Case id -> its numpy reference function (CPython only; the gradient suite differentiates it
# by finite differences). Kept out of Case so cases stay plain, serializable data.
REFS: dict = {}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64))


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def rand(g: np.random.Generator, shape, dtype: str = "float32", low=-3.0, high=3.0) -> np.ndarray:
    """Deterministic values of ``dtype`` in [low, high) (ints: [low, high] clipped to the dtype)."""
    shape = tuple(shape)
    if dtype == "bool":
        return g.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(int(low), info.min), min(int(high), info.max)
        return g.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return g.uniform(low, high, size=shape).astype(dtype)


def t(value, transform: str | None = None, expand: tuple | None = None) -> T:
    """A tensor spec whose *logical* value is ``value``.

    ``transform="transpose"`` / ``"slice"`` build the same logical value as a non-contiguous
    tensor on the Ember side; ``expand=shape`` expands ``value`` (with size-1 dims) to shape.
    """
    value = np.asarray(value)
    if expand is not None:
        return T(np.array(value, order="C"), ("expand", tuple(expand)))
    if transform is None:
        return T(np.array(value, order="C"))
    if transform == "transpose":
        return T(np.ascontiguousarray(np.swapaxes(value, -1, -2)), ("transpose",))
    if transform == "slice":
        shape = value.shape[:-1] + (value.shape[-1] * 2,)
        filler = np.full(shape, 77, dtype=value.dtype)  # odd positions must never show up
        filler[..., ::2] = value
        return T(filler, ("slice",))
    raise ValueError(f"unknown transform {transform!r}")


def logical(spec: T) -> np.ndarray:
    a = np.asarray(spec.data)
    if spec.transform:
        kind = spec.transform[0]
        if kind == "transpose":
            a = np.swapaxes(a, -1, -2)
        elif kind == "slice":
            a = a[..., ::2]
        elif kind == "expand":
            a = np.broadcast_to(a, spec.transform[1])
    return a


def _ref_value(v):
    if isinstance(v, T):
        a = logical(v)
        if a.dtype.kind == "f":
            return a.astype(np.float64)
        if a.dtype.kind in "iu":
            return a.astype(np.int64)
        return a.copy()
    if isinstance(v, tuple):
        return tuple(_ref_value(x) for x in v)
    if isinstance(v, list):
        return [_ref_value(x) for x in v]
    return v


def _first_dtype(args) -> str:
    for a in args:
        if isinstance(a, T):
            return np.asarray(a.data).dtype.name
        if isinstance(a, (list, tuple)):
            found = _first_dtype(a)
            if found:
                return found
    return ""


def _is_float_spec(a) -> bool:
    if isinstance(a, (list, tuple)):  # cat/stack take a sequence of tensors
        return any(_is_float_spec(x) for x in a)
    return isinstance(a, T) and np.asarray(a.data).dtype.kind == "f"


def _tensor_indices(args) -> tuple[int, ...]:
    return tuple(i for i, a in enumerate(args) if _is_float_spec(a))


def expected_array(value, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        a = np.asarray(value)
        if dtype in FLOATS:
            return np.array(a.astype(np.float64).astype(dtype), dtype=np.float64, order="C")
        if dtype == "bool":
            return np.array(a, dtype=bool, order="C")
        if a.dtype.kind == "f":
            a = np.trunc(a)
        return np.array(a.astype(np.int64).astype(dtype), order="C")


def case(
    id: str,
    op: str,
    *args,
    ref=None,
    out=None,
    kwargs: dict | None = None,
    tol: float = 1.0,
    diff: bool = False,
    grad: tuple | None = None,
    multi: bool = False,
    fields: tuple = (),
    pass_backend: bool = False,
    check_values: bool = True,
    tags: tuple = (),
) -> Case:
    """Build, register and return a case (see the module docstring)."""
    kwargs = dict(kwargs or {})
    with np.errstate(all="ignore"):
        result = ref(*(_ref_value(a) for a in args))
    outs = tuple(result) if multi else (result,)
    if out is None:
        out = _first_dtype(args) or "float32"
    dtypes = tuple(out) if isinstance(out, (tuple, list)) else (out,) * len(outs)
    expected = tuple(Expected(expected_array(o, d), d, check_values) for o, d in zip(outs, dtypes))
    rtol = atol = 0.0
    for d in dtypes:
        r, a = tolerance(d, tol)
        rtol, atol = max(rtol, r), max(atol, a)
    c = Case(
        id=id,
        op=op,
        args=tuple(args),
        kwargs=kwargs,
        expected=expected,
        multi=multi,
        fields=tuple(fields),
        rtol=rtol,
        atol=atol,
        pass_backend=pass_backend,
        differentiable=diff,
        grad_inputs=(grad if grad is not None else _tensor_indices(args)) if diff else (),
        tags=tuple(tags),
    )
    CASES.append(c)
    REFS[id] = ref
    return c


# Dtype short names used in ids.
SHORT = {
    "float32": "f32",
    "float16": "f16",
    "float64": "f64",
    "int32": "i32",
    "int64": "i64",
    "int8": "i8",
    "uint8": "u8",
    "int16": "i16",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "b",
}
