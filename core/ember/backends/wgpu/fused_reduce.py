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
from .fused_code import const_words, leaf_bindings, statements
from .kernels import render
from .primitive import COMPUTE, STORE, collapse

#: the reductions that fuse their input's graph, and reduce.wgsl's combining op for each
REDUCE_OPS = {"float_sum": "sum", "float_prod": "prod", "float_max": "max", "float_min": "min"}

def run_reduction(rt, program) -> list:
    """The intermediate values ``program.outputs`` keeps (whole, contiguous), then the
    reduction of its result over ``program.reduction = (op, dims)``."""
    op, dims = program.reduction
    shape, leaves = program.shape, program.leaves
    kept_values = [rt.empty(shape, program.nodes[o][3], "fused") for o in program.outputs[:-1]]
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    out = rt.empty(out_shape, program.dtype, op)
    m = numel(out_shape)
    if m == 0:
        return kept_values + [out]
    kept = [d for d in range(len(shape)) if d not in dims]
    # the kept values are views too (contiguous ones), addressed like the leaves
    views = [(x.offset, x.strides) for x in leaves] + [(0, x.strides) for x in kept_values]
    kshape, kstr = collapse(tuple(shape[d] for d in kept),
                            *(tuple(st[d] for d in kept) for _, st in views))
    rshape, rstr = collapse(tuple(shape[d] for d in dims),
                            *(tuple(st[d] for d in dims) for _, st in views))
    meta = [m, numel(rshape), len(kshape), len(rshape), *kshape, *rshape]
    for (offset, _), ks, rs in zip(views, kstr, rstr):
        meta += [offset, *ks, *rs]
    meta += const_words(program.consts)
    ct = COMPUTE[program.dtype]
    reduce_run(rt, ("fused", program.signature), lambda: _element(rt, program, ct),
               REDUCE_OPS[op], ct, m, numel(rshape), meta,
               [out.block] + [x.block for x in leaves + kept_values],
               ("read",) * len(leaves) + ("read_write",) * len(kept_values))
    return kept_values + [out]


def _element(rt, program, ct: str) -> str:
    lib, nin = rt.lib, len(program.leaves)
    bindings, loaders = leaf_bindings(rt, program.leaf_dtypes, 2)
    kept = program.outputs[:-1]
    for j, o in enumerate(kept):
        bindings.append(f"@group(0) @binding({2 + nin + j}) var<storage, read_write> out{j}: "
                        f"array<{STORE[program.nodes[o][3]]}>;")
    loads = "\n".join(f"    let x{k} = load_in{k}(leaf_offset(o, k, {k}u));" for k in range(nin))
    stores = "\n".join(f"    out{j}[leaf_offset(o, k, {nin + j}u)] = t{o};"
                        for j, o in enumerate(kept))
    return render(lib.source("fused_reduce"), BINDINGS="\n".join(bindings + loaders),
                  NVIEWS=nin + len(kept), NARROW=lib.snippet("fused", "narrow"), CT=ct,
                  LOADS=loads, LETS=statements(program, {}, f"t{program.outputs[-1]}", stores))
