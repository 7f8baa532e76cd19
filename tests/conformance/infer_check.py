"""``InferChecked(inner)``: a backend that runs every op on ``inner`` and checks the result's
shape and dtype against the op's declared rule (``op.infer``) — so the whole conformance
catalogue, run with ``--backend=checked-numpy``, tests every shape/dtype rule the graph
compiler and Fusion will plan with, on real results.

It is generic over the registry, like Autodiff: one wrapper per op, no per-op table.
"""

from __future__ import annotations

import dataclasses

from ember.contract import Backend, Kind, Spec, registry


class InferError(AssertionError):
    """An op's result disagrees with its declared shape/dtype rule."""


class InferChecked(Backend):
    def __init__(self, inner: Backend):
        self.inner = inner
        self.name = f"checked-{inner.name}"
        self.caps = dataclasses.replace(inner.caps)
        self.device = inner.device


def _spec(b: Backend, value):
    """The Spec of a primitive (of each, for a list); None stays None (an absent bias)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [_spec(b, v) for v in value]
    return Spec(tuple(b.shape(value)), b.dtype(value))


def _checked(op: registry.Op):
    name = op.name

    def method(self, *args, **kwargs):
        inner = self.inner
        out = getattr(inner, name)(*args, **kwargs)
        bound = op.bind(args, kwargs)
        want = op.infer(*(_spec(inner, a) if i in op.tensor_positions else a
                          for i, a in enumerate(bound)))
        got = tuple(_spec(inner, o) for o in out) if op.outputs > 1 else _spec(inner, out)
        if op.outputs == 1:
            want, got = (want,), (got,)
        for w, g in zip(want, got):
            if tuple(w.shape) != tuple(g.shape) or w.dtype != g.dtype:
                raise InferError(
                    f"{name}: declared result {tuple(w.shape)} {w.dtype}, the backend gave "
                    f"{tuple(g.shape)} {g.dtype} (arguments {bound!r:.300})"
                )
        return out

    method.__name__ = name
    return method


for _op in registry.ops():
    if _op.kind is Kind.DATA or _op.name == "from_data":
        setattr(InferChecked, _op.name, lambda self, *a, _n=_op.name, **k: getattr(
            self.inner, _n)(*a, **k))
    else:
        setattr(InferChecked, _op.name, _checked(_op))
