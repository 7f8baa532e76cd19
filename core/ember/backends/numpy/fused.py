"""The numpy backend's fused programs (:mod:`ember.fusion.program`): a chain of elementwise
ops evaluated with the eager backend's own ufuncs, each writing into a reused temporary
(``out=``), so a chain of N ops allocates one or two arrays instead of N.

Results equal the eager numpy backend's bit for bit: the same ufunc runs on the same dtypes;
only where the result lands changes. ``where`` and ``cast`` use ``np.copyto`` (the same bits
as ``np.where`` / ``astype``).

>>> import ember
>>> x = ember.tensor([1.0, -2.0], backend="fusion-numpy")
>>> (x.abs() * 3 - 1).tolist()
[2.0, 5.0]
"""

from __future__ import annotations

import numpy as np

from ...contract.registry import Kind
from .backend import _NP
from .ops import _ELEMENTWISE
from .quiet import quiet


def _cast(out, x):
    if out.dtype == np.bool_:
        np.not_equal(x, 0, out=out)  # the eager cast's ``x != 0``
    else:
        np.copyto(out, x, casting="unsafe")


def _where(out, cond, a, b):
    np.copyto(out, b)
    np.copyto(out, a, where=cond)


def _ufunc(fn):
    def run(out, *xs):
        fn(*xs, out=out)

    return run


_RUN = {op.name: _ufunc(fn) for op, fn in _ELEMENTWISE.items() if op.kind is Kind.ELEMENTWISE}
_RUN.update({
    "float_pow": _ufunc(np.power),
    "float_round": _ufunc(np.round),
    "float_isnan": _ufunc(np.isnan),
    "float_isinf": _ufunc(np.isinf),
    "cast": _cast,
    "where": _where,
})
# these write their inputs' values in two steps: their result must not share an input's memory
_NOT_IN_PLACE = frozenset({"where"})


class NumpyFusion:
    """The fusion compiler of the numpy backend (see :mod:`ember.fusion.program`)."""

    # below ~16K elements a ufunc call costs more than its allocation: eager is faster
    min_elements = 1 << 14
    max_nodes = 256
    max_leaves = 64

    def can_fuse(self, op: str, dtypes) -> bool:
        return op in _RUN

    def holds(self, value, dtype) -> bool:
        if dtype.is_float or dtype.is_bool:
            return True
        lo, hi = dtype.int_range
        return lo <= value <= hi

    def run(self, program):
        shape = program.shape
        consts = [np.array(v, dtype=_NP[d]) for v, d in program.consts]
        nodes = program.nodes
        last = _last_uses(nodes)
        free: dict[object, list] = {}  # dtype → temporaries whose values are dead
        temps: list = []
        with quiet():
            for m, (op, args, params, dtype) in enumerate(nodes):
                xs = [program.leaves[k] if kind == "l" else consts[k] if kind == "c"
                      else temps[k] for kind, k in args]
                dead = [k for kind, k in args if kind == "t" and last[k] == m]
                in_place = op not in _NOT_IN_PLACE
                if in_place:
                    _release(free, temps, dead)
                want = _NP[dtype]
                pool = free.get(want)
                out = pool.pop() if pool else np.empty(shape, want)
                _RUN[op](out, *xs)
                temps.append(out)
                if not in_place:
                    _release(free, temps, dead)
        return temps[-1]


def _last_uses(nodes) -> list[int]:
    """For each node, the index of the last node that reads it."""
    last = list(range(len(nodes)))
    for m, (_, args, _, _) in enumerate(nodes):
        for kind, k in args:
            if kind == "t":
                last[k] = m
    return last


def _release(free: dict, temps: list, dead: list[int]) -> None:
    for k in dict.fromkeys(dead):  # an input read twice is released once
        arr = temps[k]
        free.setdefault(arr.dtype, []).append(arr)

