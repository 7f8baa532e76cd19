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
:mod:`.fused_matmul`; both build their code with :func:`statements` and :func:`leaf_bindings`.
"""

from __future__ import annotations

import re
import struct
from array import array

from ... import dtype as dt
from ...shape import numel
from .kernels import render
from .launch import _CONVERT, WG
from .ops import EXPRESSIONS
from .primitive import COMPUTE, LOADER, STORE, collapse, contiguous_strides

# WebGPU's default storage buffers per shader stage; the meta words take one of them
_STORAGE_BINDINGS = 8
_ARG = re.compile(r"\bx(\d+)\b")
_WHERE = "select(x2, x1, x0)"
# a node's result as the eager kernels would store and reload it
_NARROW = {dt.float16: "round_f16", dt.int8: "wrap_i8", dt.uint8: "wrap_u8"}
_CONST = {"f32": "bitcast<f32>(param({j}u))", "i32": "bitcast<i32>(param({j}u))",
          "bool": "param({j}u) != 0u"}
# how an output of each dtype is written: 4 elements per lane (fused.wgsl's sections)
_STORES = {dt.float32: "store_32", dt.int32: "store_32", dt.int64: "store_32",
           dt.float16: "store_f16", dt.int8: "store_8", dt.uint8: "store_8",
           dt.bool_: "store_bool"}
#: outputs a lane stores whole, so lanes in any order may write neighbours
WORDS = (dt.float32, dt.int32)
#: the reductions that fuse their input's graph, and reduce.wgsl's combining op for each
REDUCE_OPS = {"float_sum": "sum", "float_prod": "prod", "float_max": "max", "float_min": "min"}
_I32 = (-(1 << 31), (1 << 31) - 1)
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
        from .fused_matmul import fits

        return fits(self.rt, program)

    def holds(self, value, dtype) -> bool:
        """Constants the eager ``full`` would store the same: ints in range, floats in the
        dtype's range (larger ones round to inf there)."""
        if type(value) is float and dtype is dt.float32 and -_F32_MAX <= value <= _F32_MAX:
            return True  # the common case, without packing it twice
        if dtype not in self.dtypes:
            return False
        try:
            _bits(value, dtype)
        except (OverflowError, struct.error, TypeError, ValueError):
            return False
        return True

    def run(self, program) -> list:
        if program.reduction is not None:
            from .fused_reduce import run_reduction

            return run_reduction(self.rt, program)
        if program.contraction is not None:
            from .fused_matmul import run_contraction

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


def leaf_bindings(rt, dtypes, first: int, skip=()) -> tuple[list[str], list[str]]:
    """Read-only bindings ``in<k>`` from binding ``first`` on (leaves in ``skip`` get none)
    and their ``load_in<k>`` functions."""
    bindings, loaders = [], []
    for k, d in enumerate(dtypes):
        if k in skip:
            continue
        bindings.append(f"@group(0) @binding({first + len(bindings)}) var<storage, read> "
                        f"in{k}: array<{STORE[d]}>;")
        loaders.append(rt.lib.snippet("lib_dtypes", LOADER[d], NAME=f"in{k}"))
    return bindings, loaders


def statements(program, given: dict, result: str, before: str = "") -> str:
    """A function body: constants, one ``let`` per node, ``before`` (stores), then
    ``return <result>``. ``given`` names the WGSL values of nodes computed elsewhere (a
    matmul's accumulator)."""
    names = {}
    lines = []
    for j, (_, d) in enumerate(program.consts):
        names["c", j] = f"c{j}"
        lines.append(f"    let c{j} = {_CONST[COMPUTE[d]].format(j=j)};")
    for k in range(len(program.leaves)):
        names["l", k] = f"x{k}"
    for m, (op, args, params, dtype) in enumerate(program.nodes):
        names["t", m] = f"t{m}"
        if m in given:
            lines.append(f"    let t{m} = {given[m]};")
            continue
        if op == "cast":
            expr = _CONVERT[COMPUTE[_dtype_of(program, args[0])], COMPUTE[params[0]]]
        elif op == "where":
            expr = _WHERE
        else:
            expr = EXPRESSIONS[op][0]
        operands = [names[a] for a in args]
        expr = _ARG.sub(lambda g: operands[int(g.group(1))], expr)
        if dtype in _NARROW:
            expr = f"{_NARROW[dtype]}({expr})"
        lines.append(f"    let t{m} = {expr};")
    if before:
        lines.append(before)
    lines.append(f"    return {result};")
    return "\n".join(lines)


def _dtype_of(program, ref):
    kind, k = ref
    if kind == "l":
        return program.leaf_dtypes[k]
    if kind == "c":
        return program.consts[k][1]
    return program.nodes[k][3]


def const_words(consts) -> list[int]:
    """The meta words of the constants; float32 ones (the common case) converted at once."""
    if all(d is dt.float32 for _, d in consts):
        return list(array("i", array("f", [v for v, _ in consts]).tobytes()))
    return [_bits(v, d) for v, d in consts]


def _bits(value, dtype) -> int:
    """The meta word of a constant: its compute type's bit pattern (as a signed int32)."""
    if dtype.is_float:
        if dtype == dt.float16:
            value = struct.unpack("<e", struct.pack("<e", value))[0]
        return struct.unpack("<i", struct.pack("<f", value))[0]
    if dtype.is_bool:
        return int(bool(value))
    if not isinstance(value, int):
        raise TypeError(value)
    lo, hi = dtype.int_range
    if not (max(lo, _I32[0]) <= value <= min(hi, _I32[1])):
        raise OverflowError(value)
    return value
