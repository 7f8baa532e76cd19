"""The wgpu backend's fused programs (:mod:`ember.fusion.program`): one generated kernel per
fused graph.

Each node becomes one ``let tN = <expr>;`` built from the eager backend's own WGSL
expressions (:data:`.ops.EXPRESSIONS`, the casts of :mod:`.launch`), so a fused kernel
computes what the eager kernels compute. Leaves are strided storage bindings (broadcasts are
zero strides), scalar constants travel in the meta words, and every output of the program
(its result and the intermediate values kept for later) gets a binding. The kernel's frame is
``shaders/fused.wgsl``. The pipeline cache key is the program's signature (ops, dtypes,
wiring, outputs): new constant values or leaf layouts reuse the compiled kernel.

Programs that end in a reduction run in :mod:`.fused_reduce`, programs around a matmul in
:mod:`.fused_matmul`; all three build their code with :mod:`.fused_code`.
"""

from __future__ import annotations

import struct

from ... import dtype as dt
from ...shape import numel
from . import int_range
from .fused_code import WORDS, bits, const_words, leaf_bindings, statements
from .fused_matmul import fits, run_contraction
from .fused_reduce import REDUCE_OPS, run_reduction
from .kernels import render
from .launch import WG
from .ops import EXPRESSIONS
from .primitive import COMPUTE, STORE, collapse, contiguous_strides

# WebGPU's default storage buffers per shader stage; the meta words take one of them
_STORAGE_BINDINGS = 8
# how an output of each dtype is written: 4 elements per lane (fused.wgsl's sections)
_STORES = {dt.float32: "store_32", dt.int32: "store_32", dt.int64: "store_32",
           dt.float16: "store_f16", dt.int8: "store_8", dt.uint8: "store_8",
           dt.bool_: "store_bool"}
_F32_MAX = 3.4028234663852886e38


class WgpuFusion:
    """The fusion compiler of the wgpu backend (see :mod:`ember.fusion.program`)."""

    min_elements = 0
    max_nodes = 256
    max_buffers = _STORAGE_BINDINGS - 1
    max_leaves = max_buffers - 1

    def __init__(self, backend):
        self.rt = backend.rt
        self.dtypes = backend.caps.dtypes

    def can_fuse(self, op: str, dtypes) -> bool:
        if int_range.unfusable(op, dtypes):  # runs eagerly, where its int64 range is checked
            return False
        if op in EXPRESSIONS or op == "where":
            return True
        return op == "cast" and dtypes[1] in self.dtypes

    def can_reduce(self, op: str, dtype) -> bool:
        """float32 sums, products, maxima and minima (mean is a sum and a division)."""
        return dtype is dt.float32 and op in REDUCE_OPS

    def reduce_keeps(self, dtype) -> bool:
        """Values a reduction can write as it goes: whole 32-bit words (each element is
        visited by one lane; a packed word would be shared by several)."""
        return dtype in WORDS

    def can_contract(self, op: str, dtypes) -> bool:
        """float32 matmuls, whose elementwise users fuse into the matmul's store."""
        return op == "float_matmul" and all(d is dt.float32 for d in dtypes)

    def can_epilogue(self, program) -> bool:
        """Whether ``run`` applies the program's elementwise nodes in its matmul's store."""
        return fits(self.rt, program)

    def holds(self, value, dtype) -> bool:
        """Constants the eager ``full`` would store the same: ints in range, floats in the
        dtype's range (larger ones round to inf there)."""
        if type(value) is float and dtype is dt.float32 and -_F32_MAX <= value <= _F32_MAX:
            return True  # the common case, without packing it twice
        if dtype not in self.dtypes:
            return False
        try:
            bits(value, dtype)
        except (OverflowError, struct.error, TypeError, ValueError):
            return False
        return True

    def run(self, program) -> list:
        if program.reduction is not None:
            return run_reduction(self.rt, program)
        if program.contraction is not None:
            return run_contraction(self.rt, program)
        rt, shape = self.rt, program.shape
        outs = [rt.empty(shape, program.nodes[m][3], "fused") for m in program.outputs]
        n = numel(shape)
        if n == 0:
            return outs
        # fewer index steps per load: dims contiguous in every leaf are merged
        leaves = program.leaves
        cshape, cstrides = collapse(shape, *(x.strides for x in leaves))
        dense = contiguous_strides(cshape)
        meta = [n, len(cshape), *cshape]
        for x, st in zip(leaves, cstrides):
            meta += [x.offset, int(st == dense), *st]
        meta += const_words(program.consts)
        pipe = rt.lib.pipeline(("fused", program.signature), lambda: _kernel(rt, program))
        rt.engine.dispatch(pipe, meta, [x.block for x in leaves] + [o.block for o in outs],
                           rt.groups(-(-n // 4)))
        return outs


def _kernel(rt, program) -> tuple[str, tuple[str, ...]]:
    """The WGSL of a program and its bindings' access modes."""
    lib, nin = rt.lib, len(program.leaves)
    bindings, loaders = leaf_bindings(rt, program.leaf_dtypes, 1)
    fields, stores = [], []
    for j, m in enumerate(program.outputs):
        d = program.nodes[m][3]
        bindings.append(f"@group(0) @binding({nin + j + 1}) var<storage, read_write> out{j}: "
                        f"array<{STORE[d]}>;")
        fields.append(f"    v{j}: {COMPUTE[d]},")
        stores.append(lib.snippet("fused", _STORES[d], M=j).rstrip("\n"))
    loads = "\n".join(f"    let x{k} = load_in{k}(in_offset(i, {k}u));" for k in range(nin))
    libs = rt.libs(lib.snippet("lib_index", "strided_inputs"), *loaders)
    lets = statements(program, {}, f"Values({', '.join(f't{m}' for m in program.outputs)})")
    code = render(lib.source("fused"), BINDINGS="\n".join(bindings), WG=WG, NIN=nin,
                  LIBS=libs, NARROW=lib.snippet("fused", "narrow"), FIELDS="\n".join(fields),
                  LOADS=loads, LETS=lets, STORES="\n".join(stores))
    return code, ("read",) * (nin + 1) + ("read_write",) * len(program.outputs)
