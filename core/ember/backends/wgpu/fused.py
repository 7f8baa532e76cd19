"""The wgpu backend's fused programs (:mod:`ember.fusion.program`): one generated kernel per
fused graph.

Each node becomes one ``let tN = <expr>;`` built from the eager backend's own WGSL
expressions (:data:`.ops.EXPRESSIONS`, the casts of :mod:`.launch`), so a fused kernel
computes what the eager kernels compute. Leaves are strided storage bindings (broadcasts are
zero strides), scalar constants travel in the meta words, and every output of the program
(its result and the intermediate values kept for later) gets a binding. The kernel's frame is
``shaders/fused.wgsl``. The pipeline cache key is the program's signature (ops, dtypes,
wiring, outputs): new constant values or leaf layouts reuse the compiled kernel.
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
        meta += _words(program.consts)
        pipe = rt.lib.pipeline(("fused", program.signature), lambda: _kernel(rt, program))
        rt.engine.dispatch(pipe, meta, [x.block for x in leaves] + [o.block for o in outs],
                           rt.groups(-(-n // 4)))
        return outs


def _kernel(rt, program) -> tuple[str, tuple[str, ...]]:
    """The WGSL of a program and its bindings' access modes."""
    lib, nin = rt.lib, len(program.leaves)
    bindings, loaders = [], []
    for k, d in enumerate(program.leaf_dtypes):
        bindings.append(f"@group(0) @binding({k + 1}) var<storage, read> in{k}: "
                        f"array<{STORE[d]}>;")
        loaders.append(lib.snippet("lib_dtypes", LOADER[d], NAME=f"in{k}"))
    fields, stores = [], []
    for j, m in enumerate(program.outputs):
        d = program.nodes[m][3]
        bindings.append(f"@group(0) @binding({nin + j + 1}) var<storage, read_write> out{j}: "
                        f"array<{STORE[d]}>;")
        fields.append(f"    v{j}: {COMPUTE[d]},")
        stores.append(lib.snippet("fused", _STORES[d], M=j).rstrip("\n"))
    loads = "\n".join(f"    let x{k} = load_in{k}(in_offset(i, {k}u));" for k in range(nin))
    libs = rt.libs(lib.snippet("lib_index", "strided_inputs"), *loaders)
    code = render(lib.source("fused"), BINDINGS="\n".join(bindings), WG=WG, NIN=nin,
                  LIBS=libs, FIELDS="\n".join(fields), LOADS=loads,
                  LETS=_statements(program), STORES="\n".join(stores))
    return code, ("read",) * (nin + 1) + ("read_write",) * len(program.outputs)


def _statements(program) -> str:
    """The body of ``compute``: constants, one ``let`` per node, the outputs."""
    names = {}
    lines = []
    for j, (_, d) in enumerate(program.consts):
        names["c", j] = f"c{j}"
        lines.append(f"    let c{j} = {_CONST[COMPUTE[d]].format(j=j)};")
    for k in range(len(program.leaves)):
        names["l", k] = f"x{k}"
    for m, (op, args, params, dtype) in enumerate(program.nodes):
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
        names["t", m] = f"t{m}"
        lines.append(f"    let t{m} = {expr};")
    lines.append(f"    return Values({', '.join(f't{m}' for m in program.outputs)});")
    return "\n".join(lines)


def _dtype_of(program, ref):
    kind, k = ref
    if kind == "l":
        return program.leaf_dtypes[k]
    if kind == "c":
        return program.consts[k][1]
    return program.nodes[k][3]


def _words(consts) -> list[int]:
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
