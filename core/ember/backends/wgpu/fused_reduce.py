"""Fused reductions of the wgpu backend: a sum, prod, max or min whose input is a pending
elementwise graph (:attr:`Program.reduction <ember.fusion.program.Program>`) runs as one
kernel, reduce.wgsl's, with an ``element(o, k)`` that evaluates the graph at each element it
reduces (``shaders/fused_reduce.wgsl``). Its leaves are read through their own strides, so
``(x - x.max(dim, keepdim=True)).exp().sum(dim)`` reads ``x`` and the max and writes only the
sums. The elements are combined in the eager kernel's order, so results are the eager ones.
"""

from __future__ import annotations

from ...shape import numel
from .compute import reduce_run
from .fused import REDUCE_OPS, const_words, leaf_bindings, statements
from .kernels import render
from .primitive import COMPUTE, collapse

def run_reduction(rt, program) -> list:
    """The reduction of ``program``'s result over ``program.reduction = (op, dims)``."""
    op, dims = program.reduction
    shape, leaves = program.shape, program.leaves
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    out = rt.empty(out_shape, program.dtype, op)
    m = numel(out_shape)
    if m == 0:
        return [out]
    kept = [d for d in range(len(shape)) if d not in dims]
    kshape, kstr = collapse(tuple(shape[d] for d in kept),
                            *(tuple(x.strides[d] for d in kept) for x in leaves))
    rshape, rstr = collapse(tuple(shape[d] for d in dims),
                            *(tuple(x.strides[d] for d in dims) for x in leaves))
    meta = [m, numel(rshape), len(kshape), len(rshape), *kshape, *rshape]
    for x, ks, rs in zip(leaves, kstr, rstr):
        meta += [x.offset, *ks, *rs]
    meta += const_words(program.consts)
    ct = COMPUTE[program.dtype]
    reduce_run(rt, ("fused", program.signature), lambda: _element(rt, program, ct),
               REDUCE_OPS[op], ct, m, numel(rshape), meta,
               [out.block] + [x.block for x in leaves], ("read",) * len(leaves))
    return [out]


def _element(rt, program, ct: str) -> str:
    lib, nin = rt.lib, len(program.leaves)
    bindings, loaders = leaf_bindings(rt, program.leaf_dtypes, 2)
    loads = "\n".join(f"    let x{k} = load_in{k}(leaf_offset(o, k, {k}u));" for k in range(nin))
    return render(lib.source("fused_reduce"), BINDINGS="\n".join(bindings + loaders), NIN=nin,
                  NARROW=lib.snippet("fused", "narrow"), CT=ct, LOADS=loads,
                  LETS=statements(program, {}, f"t{len(program.nodes) - 1}"))
