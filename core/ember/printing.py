"""``repr`` of tensors: numpy-like layout, summarised when large."""

from __future__ import annotations

import math

from . import dtype as dt

_EDGE = 3  # items shown at each end of a summarised dim
_SUMMARY_AT = 1000  # summarise tensors with more elements than this


def _fmt_float(v: float, precision: int = 4) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e16:
        return f"{int(v)}."
    if v != 0 and (abs(v) >= 1e8 or abs(v) < 1e-4):
        return f"{v:.{precision}e}"
    return f"{v:.{precision}f}".rstrip("0")


def _fmt_scalar(v, dtype: dt.DType) -> str:
    if dtype.is_bool:
        return "True" if v else "False"
    if dtype.is_float:
        return _fmt_float(v)
    return str(v)


def _aligner(strings: list[str]):
    """A function padding each formatted number to one width, decimal points aligned (as
    numpy: ``[0.0625, 2.    ]``); right-aligned where one of them is in scientific notation."""
    scientific = any("e" in s for s in strings if s not in ("nan", "inf", "-inf"))
    fixed = [] if scientific else [s.split(".") for s in strings if "." in s]
    left = max((len(a) for a, _ in fixed), default=0)
    right = max((len(b) for _, b in fixed), default=0)
    width = max([len(s) for s in strings] + [left + 1 + right if fixed else 1])

    def pad(s: str) -> str:
        if fixed and "." in s:
            a, b = s.split(".")
            s = a.rjust(left) + "." + b.ljust(right)
        return s.rjust(width)

    return pad


def _layout(nested, dtype: dt.DType, depth: int, summarise: bool, pad) -> str:
    if not isinstance(nested, list):
        return pad(_fmt_scalar(nested, dtype))
    items = nested
    skip = summarise and len(items) > 2 * _EDGE
    if skip:
        items = items[:_EDGE] + [...] + items[-_EDGE:]
    parts = ["..." if it is ... else _layout(it, dtype, depth + 1, summarise, pad) for it in items]
    if nested and isinstance(nested[0], list):
        sep = "," + "\n" * max(1, 1) + " " * (depth + 1 + len("tensor("))
        return "[" + sep.join(parts) + "]"
    return "[" + ", ".join(parts) + "]"


def _flat(nested) -> list:
    if isinstance(nested, list):
        return [v for item in nested for v in _flat(item)]
    return [nested]


def format_tensor(t) -> str:
    values = t.tolist()
    summarise = t.numel() > _SUMMARY_AT
    pad = _aligner([_fmt_scalar(v, t.dtype) for v in _flat(values)[:2000]])
    body = _layout(values, t.dtype, 0, summarise, pad)
    extras = []
    if not (t.dtype is dt.default_float or t.dtype is dt.default_int or t.dtype.is_bool):
        extras.append(f"dtype={t.dtype.name}")
    if t.numel() == 0:
        extras.append(f"size={t.shape}")
    from .backends import default_backend

    if t.backend is not default_backend():
        extras.append(f"backend={t.backend.name}")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
