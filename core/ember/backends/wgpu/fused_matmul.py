"""Matmul epilogues of the wgpu backend: a program holding a matmul node
(:attr:`Program.contraction <ember.fusion.program.Program>`) runs as one matmul kernel whose
store applies the program's elementwise nodes to the product (``shaders/fused_matmul.wgsl``
appended to ``shaders/matmul.wgsl``): ``relu(x @ w + b)`` is one dispatch, and the raw
product is never stored. The tiles, their accumulation order and so the products are the
eager kernel's. Programs it can't cover (:func:`fits`: a split-k product, operands whose batch
dims don't collapse, too many buffers, packed outputs) are left to Fusion, which then runs the
matmul alone and the rest as an elementwise program.
"""

from __future__ import annotations

from ... import dtype as dt
from ...shape import numel
from .compute import batch_view, choose_tile, matmul_dispatch, split_k
from .fused_code import WORDS, const_words, leaf_bindings, statements
from .kernels import render
from .primitive import STORE

_BINDINGS = 8  # WebGPU's default storage buffers per shader stage


def _parts(program):
    """(a, b, the leaves the elementwise nodes read)."""
    ci = program.contraction
    (_, ka), (_, kb) = program.nodes[ci][1]
    used = sorted({k for m, (_, args, _, _) in enumerate(program.nodes) if m != ci
                   for kind, k in args if kind == "l"})
    return program.leaves[ka], program.leaves[kb], used


def fits(rt, program) -> bool:
    """Whether :func:`run_contraction` covers ``program`` (see the module)."""
    a, b, used = _parts(program)
    n, k = a.shape[-2:]
    m = b.shape[-1]
    batch = numel(a.shape[:-2])
    tile = choose_tile(rt, n, m, batch)
    splits, _ = split_k(-(-m // tile["BN"]) * -(-n // tile["BM"]) * batch, k, tile["BK"])
    outputs = [program.nodes[o][3] for o in program.outputs]
    # the meta words, a, b, the product's output, the leaves, the other outputs
    buffers = 4 + len(used) + len(outputs) - 1
    return (splits == 1 and buffers <= _BINDINGS and program.dtype is dt.float32
            and all(d in WORDS for d in outputs)
            and all(batch_view(x) is not None
                    for x in (a, b, *(program.leaves[j] for j in used))))


def run_contraction(rt, program) -> list:
    """The program's outputs, the last (its result) stored by the matmul kernel."""
    a, b, used = _parts(program)
    shape = program.shape
    outs = [rt.empty(shape, program.nodes[o][3], "fused") for o in program.outputs]
    n, m = shape[-2:]
    if numel(shape) == 0:
        return outs
    k = a.shape[-1]  # 0: the accumulators stay zero, and the epilogue still runs
    leaves = program.leaves
    extra = []
    for j in used:
        x = leaves[j]
        extra += [x.offset, batch_view(x), x.strides[-2], x.strides[-1]]
    extra += const_words(program.consts)
    root = program.outputs[-1]
    side = program.outputs[:-1]

    def code():
        bindings, loaders = leaf_bindings(rt, program.leaf_dtypes, 4,
                                          skip=set(range(len(leaves))) - set(used))
        for j, o in enumerate(side):
            bindings.append(f"@group(0) @binding({4 + len(used) + j}) var<storage, read_write> "
                            f"out{j}: array<{STORE[program.nodes[o][3]]}>;")
        loads = "\n".join(f"    let x{k} = load_in{k}(leaf_offset({j}u, batch, r, c));"
                          for j, k in enumerate(used))
        stores = "\n".join(f"    out{j}[e] = t{o};" for j, o in enumerate(side))
        lets = statements(program, {program.contraction: "acc"}, f"t{root}", stores)
        return render(rt.lib.source("fused_matmul"), BINDINGS="\n".join(bindings), NIN=len(used),
                      NARROW=rt.lib.snippet("fused", "narrow"), LOADS=loads, LETS=lets) \
            + rt.libs(*loaders)

    tile = choose_tile(rt, n, m, numel(shape[:-2]))
    epilogue = (("fused", program.signature), code, "epilogue({acc}, batch, {r}, {col})",
                [leaves[j].block for j in used] + [o.block for o in outs[:-1]],
                ("read",) * len(used) + ("read_write",) * len(side), extra)
    matmul_dispatch(rt, a, b, batch_view(a), batch_view(b), outs[-1], (0, n * m, m), 1, k, 0,
                     tile, epilogue)
    return outs
