"""Kernel launchers: build the WGSL for one op family, its ``meta`` words and its dispatch.

Each launcher takes primitives (strided views) and returns fresh contiguous primitives; the
caller (the backend) maps contract methods onto them.
"""

from __future__ import annotations

from ... import dtype as dt
from ...shape import numel
from .allocator import Allocator
from .engine import Engine
from .kernels import KernelLibrary, render
from .primitive import (
    COMPUTE,
    LOADER,
    PACK,
    STORE,
    STORER,
    WIDE,
    Storage,
    WgpuTensor,
    collapse,
    contiguous_strides,
    nbytes,
)

WG = 256
_IDENT = {
    ("sum", "f32"): "0.0", ("sum", "i32"): "0",
    ("prod", "f32"): "1.0", ("prod", "i32"): "1",
    ("max", "f32"): "-inf_f()", ("max", "i32"): "bitcast<i32>(0x80000000u)",
    ("min", "f32"): "inf_f()", ("min", "i32"): "2147483647",
}


def _tile(info) -> dict[str, int]:
    """Matmul tiles from the device limits: 64×64 (16×16 lanes, 4×4 each) where 256 lanes and
    8 KiB of workgroup memory are available (every WebGPU device), else 32×32 on 8×8 lanes."""
    if info.max_invocations >= 256 and info.workgroup_storage >= 2 * 64 * 16 * 4 + 1024:
        return {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}
    return {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}


def _large_tile(info) -> dict[str, int] | None:
    """128×128 tiles (8×8 per lane) where the device has the workgroup memory (≈ 17 KiB, more
    than a browser's default 16 KiB): on an H200 they reach 1.3× the 64×64 kernel's rate."""
    if info.max_invocations >= 256 and info.workgroup_storage >= 16 * (132 + 128) * 4:
        return {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8}
    return None


class Runtime:
    """Adapter + allocator + engine + kernel library: what every launcher needs."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.info = adapter.info
        self.allocator = Allocator(adapter)
        self.engine = Engine(adapter, self.allocator)
        self.lib = KernelLibrary(adapter)
        self.tile = _tile(self.info)
        self.large_tile = _large_tile(self.info)

    # ---------------------------------------------------------------- helpers
    def empty(self, shape, dtype: dt.DType, op: str = "alloc", upload: bool = False):
        """A fresh contiguous primitive (uninitialised)."""
        shape = tuple(shape)
        block = self.allocator.alloc(nbytes(numel(shape), dtype), op, upload)
        return WgpuTensor(Storage(block, self.allocator), shape, contiguous_strides(shape), 0,
                          dtype)

    def groups(self, threads: int, wg: int = WG) -> tuple[int, int, int]:
        g = max(1, -(-threads // wg))
        top = self.info.max_groups_per_dim
        return (g, 1, 1) if g <= top else (top, -(-g // top), 1)

    def libs(self, *extra: str) -> str:
        parts = [self.lib.source("lib_index"), self.lib.source("lib_math"),
                 self.lib.snippet("lib_dtypes", "f16")]
        return "\n".join(parts + list(extra))

    def nan_lib(self, ct: str) -> str:
        return self.lib.snippet("lib_dtypes", f"nan_{ct}")


# -------------------------------------------------------------------- map kernels
def map_op(rt: Runtime, inputs: list[WgpuTensor], out_dtype: dt.DType, expr: str = "",
           body: str = "elementwise", shape=None, params: list[int] = (),
           accumulate: str = "", libs: str = "") -> WgpuTensor:
    """One output element per lane: ``expr`` over ``x0, x1, ...`` (elementwise), or another
    body (gather, scatter); ``libs``: WGSL functions ``expr`` calls. Inputs have the output's
    shape unless the body says otherwise."""
    shape = tuple(inputs[0].shape if shape is None else shape)
    out = rt.empty(shape, out_dtype, body)
    n = numel(shape)
    if n == 0:
        return out
    if body == "elementwise":
        dense = out.strides
        if all(x.strides == dense for x in inputs):  # the common case: skip collapsing
            cshape, cstrides = (n,), [(1,)] * len(inputs)
        else:
            cshape, cstrides = collapse(shape, *(x.strides for x in inputs))
        if len(cshape) <= 1 and _map_flat(rt, inputs, cstrides, out, n, expr, libs):
            return out
    else:
        cshape, cstrides = shape, [x.strides for x in inputs]
    contig = contiguous_strides(cshape)
    meta = [n, len(cshape), *cshape]
    for x, st in zip(inputs, cstrides):
        flag = 1 if body == "elementwise" and tuple(st) == contig else 0
        meta += [x.offset, flag, *st]
    meta += list(params)
    dtypes = tuple(x.dtype for x in inputs)
    key = ("map", body, expr, accumulate, dtypes, out_dtype, libs)

    def build():
        lines, loaders = [], []
        for k, d in enumerate(dtypes):
            lines.append(f"@group(0) @binding({k + 1}) var<storage, read> in{k}: "
                         f"array<{STORE[d]}>;")
            loaders.append(rt.lib.snippet("lib_dtypes", LOADER[d], NAME=f"in{k}"))
        lines.append(f"@group(0) @binding({len(dtypes) + 1}) var<storage, read_write> out: "
                     f"array<{STORE[out_dtype]}>;")
        loaders.append(rt.lib.snippet("lib_dtypes", STORER[out_dtype]))
        loads = "\n".join(f"    let x{k} = load_in{k}(in_offset(i, {k}u));"
                          for k in range(len(dtypes)))
        text = rt.lib.source(body)
        keys = {"OUT_CT": COMPUTE[out_dtype], "LOADS": loads, "EXPR": expr,
                "ACCUMULATE": accumulate}
        code = render(text, **keys)
        full = render(rt.lib.source("map"), BINDINGS="\n".join(lines), WG=WG,
                      PACK=PACK[out_dtype], NIN=len(dtypes),
                      LIBS=rt.libs(rt.lib.snippet("lib_index", "strided_inputs"), *loaders,
                                   libs),
                      BODY=code, OUT_CT=COMPUTE[out_dtype])
        return full, ("read",) * (len(dtypes) + 1) + ("read_write",)

    pipe = rt.lib.pipeline(key, build)
    words = -(-n // PACK[out_dtype])
    rt.engine.dispatch(pipe, meta, [x.block for x in inputs] + [out.block], rt.groups(words))
    return out


_VEC = {"f32", "i32"}
_VEC_NAMES = {d.name for d, store in STORE.items() if store in _VEC}


def _map_flat(rt: Runtime, inputs: list[WgpuTensor], cstrides, out: WgpuTensor, n: int,
              expr: str, libs: str = "") -> bool:
    """The dense fast path (``map_flat.wgsl``) when every input is dense or one broadcast
    value; False (nothing dispatched) when some input needs the strided kernel."""
    padded = -(-n // 4) * 4
    if nbytes(padded, out.dtype) > out.block.size:  # a block capped at the binding limit
        return False
    modes, meta = [], [n]
    for x, st in zip(inputs, cstrides):
        if not st or st[0] == 0:  # one element, or one value broadcast everywhere
            modes.append("s")
            meta.append(x.offset)
        elif st[0] != 1:
            return False
        elif (x.dtype.name in _VEC_NAMES and x.offset % 4 == 0
              and (x.offset + padded) * 4 <= x.block.size):
            modes.append("v")
            meta.append(x.offset >> 2)
        else:
            modes.append("e")
            meta.append(x.offset)
    dtypes, out_dtype = tuple(x.dtype for x in inputs), out.dtype
    # dtype names, not DTypes, in the key: a frozen dataclass hashes in Python (per dispatch)
    key = ("map_flat", expr, libs, *[d.name for d in dtypes], *modes, out_dtype.name)

    def build():
        lines, loaders, args, loads = [], [], [], []
        lanes = [[] for _ in range(4)]
        for k, (d, mode) in enumerate(zip(dtypes, modes)):
            st = STORE[d]
            elem = f"vec4<{st}>" if mode == "v" else st
            lines.append(f"@group(0) @binding({k + 1}) var<storage, read> in{k}: "
                         f"array<{elem}>;")
            args.append(f"x{k}: {COMPUTE[d]}")
            if mode != "v":
                loaders.append(rt.lib.snippet("lib_dtypes", LOADER[d], NAME=f"in{k}"))
            if mode == "v":
                loads.append(f"    let a{k} = in{k}[prm[{k + 1}u] + w];")
            elif mode == "s":
                loads.append(f"    let a{k} = load_in{k}(prm[{k + 1}u]);")
            else:
                loads.append(f"    let o{k} = prm[{k + 1}u] + i;")
            for j in range(4):
                lanes[j].append(f"a{k}[{j}]" if mode == "v" else f"a{k}" if mode == "s"
                                else f"load_in{k}(o{k} + {j}u)")
        ct, pack = COMPUTE[out_dtype], PACK[out_dtype]
        res = [f"compute({', '.join(lane)})" for lane in lanes]
        out_elem = f"vec4<{ct}>" if pack == 1 else "u32"
        lines.append(f"@group(0) @binding({len(dtypes) + 1}) var<storage, read_write> out: "
                     f"array<{out_elem}>;")
        if pack == 1:
            store = f"    out[w] = vec4<{ct}>({', '.join(res)});"
        else:
            loaders.append(rt.lib.snippet("lib_dtypes", STORER[out_dtype]))
            words = [f"store_out(array<{ct}, {pack}>({', '.join(res[j:j + pack])}))"
                     for j in range(0, 4, pack)]
            store = "\n".join(f"    out[w * {len(words)}u + {j}u] = {word};"
                              for j, word in enumerate(words))
        code = render(rt.lib.source("map_flat"), BINDINGS="\n".join(lines), WG=WG,
                      LIBS=rt.libs(*loaders, libs), ARGS=", ".join(args), OUT_CT=ct, EXPR=expr,
                      LOADS="\n".join(loads), STORE=store)
        return code, ("read",) * (len(dtypes) + 1) + ("read_write",)

    pipe = rt.lib.pipeline(key, build)
    rt.engine.dispatch(pipe, meta, [x.block for x in inputs] + [out.block],
                       rt.groups(padded >> 2))
    return True


_CONVERT = {
    ("f32", "f32"): "x0", ("i32", "i32"): "x0", ("bool", "bool"): "x0",
    ("f32", "i32"): "i32(x0)", ("i32", "f32"): "f32(x0)",
    ("f32", "bool"): "f_to_bool(x0)", ("i32", "bool"): "x0 != 0",
    ("bool", "f32"): "select(0.0, 1.0, x0)", ("bool", "i32"): "select(0, 1, x0)",
}


def cast(rt: Runtime, x: WgpuTensor, dtype: dt.DType) -> WgpuTensor:
    """Convert (float→int truncates toward zero, int→int wraps, →bool is ``!= 0``)."""
    return map_op(rt, [x], dtype, _CONVERT[COMPUTE[x.dtype], COMPUTE[dtype]])


def contiguous(rt: Runtime, x: WgpuTensor) -> WgpuTensor:
    if x.is_contiguous() and x.offset == 0:
        return x
    return map_op(rt, [x], x.dtype, "x0")


def widen(rt: Runtime, x: WgpuTensor) -> WgpuTensor:
    return x if WIDE[x.dtype] == x.dtype else cast(rt, x, WIDE[x.dtype])


def narrow(rt: Runtime, x: WgpuTensor, dtype: dt.DType) -> WgpuTensor:
    return x if x.dtype == dtype else cast(rt, x, dtype)


# -------------------------------------------------------------------- region copy
def copy_region(rt: Runtime, src: WgpuTensor, dst: WgpuTensor, offset: int, strides) -> None:
    """Write ``src`` (32-bit dtype) into ``dst``'s buffer at ``offset`` with ``strides``."""
    n = src.size
    if n == 0:
        return
    shape, (s_st, d_st) = collapse(src.shape, src.strides, tuple(strides))
    meta = [n, len(shape), *shape, src.offset, *s_st, offset, *d_st]
    st = STORE[src.dtype]
    pipe = rt.lib.pipeline(("copy_region", st), lambda: (
        render(rt.lib.source("copy_region"), ST=st, WG=WG, LIBS=rt.libs()),
        ("read", "read", "read_write")))
    rt.engine.dispatch(pipe, meta, [src.block, dst.block], rt.groups(n))
