"""The numpy backend's fused programs (:mod:`ember.fusion.program`): a chain of elementwise
ops evaluated with the eager backend's own ufuncs, each writing into a reused temporary
(``out=``), block of rows by block of rows: a chain of N ops allocates its result and a few
block-sized temporaries instead of N arrays, and each block stays in the CPU's cache for the
whole chain.

Results equal the eager numpy backend's bit for bit: the same ufunc runs on the same dtypes;
only where the result lands changes. ``where`` and ``cast`` use ``np.copyto`` (the same bits
as ``np.where`` / ``astype``).

>>> import ember
>>> x = ember.tensor([1.0, -2.0], backend="fusion-numpy")
>>> (x.abs() * 3 - 1).tolist()
[2.0, 5.0]
"""

from __future__ import annotations

import math

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
    #: elements per block: the whole chain runs on one block of rows while it is in cache
    block = 1 << 16

    def can_fuse(self, op: str, dtypes) -> bool:
        return op in _RUN

    def holds(self, value, dtype) -> bool:
        if dtype.is_float or dtype.is_bool:
            return True
        lo, hi = dtype.int_range
        return lo <= value <= hi

    def run(self, program):
        shape, nodes = program.shape, program.nodes
        steps, slot_dtypes = _plan(nodes)
        consts = [np.array(v, dtype=_NP[d]) for v, d in program.consts]
        out = np.empty(shape, _NP[program.dtype])
        rows = len(shape) and max(1, self.block // max(1, math.prod(shape[1:])))
        if not rows or rows >= shape[0]:  # one block: the whole tensor
            blocks, rows = [None], shape[0] if shape else None
        else:
            blocks = [slice(r, r + rows) for r in range(0, shape[0], rows)]
        full = [np.empty((rows, *shape[1:]) if rows else (), d) for d in slot_dtypes]
        with quiet():
            for block in blocks:
                if block is None:
                    leaves, temps, result = program.leaves, full, out
                else:
                    leaves = [x[block] for x in program.leaves]
                    n = len(range(*block.indices(shape[0])))
                    temps = full if n == rows else [t[:n] for t in full]
                    result = out[block]
                for op, slot, args in steps:
                    xs = [leaves[k] if kind == "l" else consts[k] if kind == "c" else temps[k]
                          for kind, k in args]
                    _RUN[op](result if slot is None else temps[slot], *xs)
        return out


def _plan(nodes) -> tuple[list, list]:
    """Which temporary each node writes (the last writes the result: slot None), reusing a
    temporary once the value in it is dead. Returns the steps ``(op, slot, args)`` with args
    naming slots (``"t"``), leaves and constants, and the dtype of each slot."""
    last = list(range(len(nodes)))
    for m, (_, args, _, _) in enumerate(nodes):
        for kind, k in args:
            if kind == "t":
                last[k] = m
    slot_of: list = []
    slot_dtypes: list = []
    free: dict = {}  # numpy dtype → dead slots
    steps = []
    for m, (op, args, _, dtype) in enumerate(nodes):
        refs = [(kind, slot_of[k]) if kind == "t" else (kind, k) for kind, k in args]
        dead = dict.fromkeys(slot_of[k] for kind, k in args if kind == "t" and last[k] == m)
        if op not in _NOT_IN_PLACE:
            _release(free, slot_dtypes, dead)
        if m == len(nodes) - 1:
            slot = None
        else:
            pool = free.get(_NP[dtype])
            if pool:
                slot = pool.pop()
            else:
                slot = len(slot_dtypes)
                slot_dtypes.append(_NP[dtype])
        if op in _NOT_IN_PLACE:
            _release(free, slot_dtypes, dead)
        slot_of.append(slot)
        steps.append((op, slot, refs))
    return steps, slot_dtypes


def _release(free: dict, slot_dtypes: list, slots) -> None:
    for slot in slots:
        free.setdefault(slot_dtypes[slot], []).append(slot)
