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

    # below ~128K elements recording and running a fused chain costs more than the
    # allocations and cache misses it saves (measured with benchmarks/bench_fusion.py)
    min_elements = 1 << 17
    max_nodes = 256
    max_leaves = 64
    max_buffers = 128
    #: elements per block: the whole chain runs on one block of rows while it is in cache
    block = 1 << 16

    def __init__(self, np_dtypes: dict):
        self.np_dtypes = np_dtypes  # the backend's DType → numpy dtype table

    def can_fuse(self, op: str, dtypes) -> bool:
        return op in _RUN

    def holds(self, value, dtype) -> bool:
        if dtype.is_float or dtype.is_bool:
            return True
        lo, hi = dtype.int_range
        return lo <= value <= hi

    def run(self, program):
        shape, npd = program.shape, self.np_dtypes
        steps, slot_dtypes = _plan(program.nodes, program.outputs, npd)
        consts = [np.array(v, dtype=npd[d]) for v, d in program.consts]
        outs = [np.empty(shape, npd[program.nodes[m][3]]) for m in program.outputs]
        rows = len(shape) and max(1, self.block // max(1, math.prod(shape[1:])))
        if not rows or rows >= shape[0]:  # one block: the whole tensor
            blocks, rows = [None], shape[0] if shape else None
        else:
            blocks = [slice(r, r + rows) for r in range(0, shape[0], rows)]
        full = [np.empty((rows, *shape[1:]) if rows else (), d) for d in slot_dtypes]
        with quiet():
            for block in blocks:
                if block is None:
                    arrays = (program.leaves, consts, full, outs)
                else:
                    n = len(range(*block.indices(shape[0])))
                    arrays = ([x[block] for x in program.leaves], consts,
                              full if n == rows else [t[:n] for t in full],
                              [o[block] for o in outs])
                for op, (kind, k), args in steps:
                    _RUN[op](arrays[kind][k], *[arrays[a][j] for a, j in args])
        return outs


# where a step's operands are: the arrays of one block, by kind
_LEAF, _CONST, _TEMP, _OUT = 0, 1, 2, 3
_KIND = {"l": _LEAF, "c": _CONST}


def _plan(nodes, outputs, npd: dict) -> tuple[list, list]:
    """Where each node writes: its output array, or a temporary reused once the value in it
    is dead. Returns the steps ``(op, (kind, index), args)`` with the operands as
    ``(kind, index)`` too, and the dtype of each temporary."""
    last = list(range(len(nodes)))
    for m, (_, args, _, _) in enumerate(nodes):
        for kind, k in args:
            if kind == "t":
                last[k] = m
    out_of = {m: j for j, m in enumerate(outputs)}
    where: list = []  # node → (kind, index)
    slot_dtypes: list = []
    free: dict = {}  # numpy dtype → dead temporaries
    steps = []
    for m, (op, args, _, dtype) in enumerate(nodes):
        refs = [where[k] if kind == "t" else (_KIND[kind], k) for kind, k in args]
        dead = dict.fromkeys(where[k][1] for kind, k in args
                             if kind == "t" and last[k] == m and where[k][0] == _TEMP)
        if op not in _NOT_IN_PLACE:
            _release(free, slot_dtypes, dead)
        if m in out_of:
            dest = (_OUT, out_of[m])
        else:
            pool = free.get(npd[dtype])
            if not pool:
                pool = [len(slot_dtypes)]
                slot_dtypes.append(npd[dtype])
            dest = (_TEMP, pool.pop())
        if op in _NOT_IN_PLACE:
            _release(free, slot_dtypes, dead)
        where.append(dest)
        steps.append((op, dest, refs))
    return steps, slot_dtypes


def _release(free: dict, slot_dtypes: list, slots) -> None:
    for slot in slots:
        free.setdefault(slot_dtypes[slot], []).append(slot)
