"""What the fused kernels of the wgpu backend (:mod:`.fused`, :mod:`.fused_reduce`,
:mod:`.fused_matmul`) generate alike: a graph's nodes as WGSL ``let`` statements (the eager
backend's own expressions, so a fused kernel computes what the eager kernels compute), the
bindings and loaders of its leaves, and its constants as meta words.
"""

from __future__ import annotations

import re
import struct
from array import array

from ... import dtype as dt
from .launch import _CONVERT
from .ops import EXPRESSIONS
from .primitive import COMPUTE, LOADER, STORE

_ARG = re.compile(r"\bx(\d+)\b")
_WHERE = "select(x2, x1, x0)"
# a node's result as the eager kernels would store and reload it
_NARROW = {dt.float16: "round_f16", dt.int8: "wrap_i8", dt.uint8: "wrap_u8"}
_CONST = {"f32": "bitcast<f32>(param({j}u))", "i32": "bitcast<i32>(param({j}u))",
          "bool": "param({j}u) != 0u"}
_I32 = (-(1 << 31), (1 << 31) - 1)
#: outputs a lane stores whole, so lanes in any order may write neighbours
WORDS = (dt.float32, dt.int32)


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
    return [bits(v, d) for v, d in consts]


def bits(value, dtype) -> int:
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
