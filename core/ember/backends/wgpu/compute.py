"""Launchers for the non-elementwise kernels: reductions, scans, matmul, sort, Philox.

They work on 32-bit dtypes (float32, int32, int64-as-int32); the backend widens packed
dtypes before calling them and narrows the results.

Where the device has the "subgroup" feature, reductions of 64 elements or more per output
(sum, prod, max, min, argmax, argmin, fused reductions too) combine lanes with subgroup
operations and one barrier instead of a workgroup-memory tree, and softmax rows of 64 or
more go to one subgroup each on real GPUs (:func:`subgroups`). ``EMBER_WGPU_SUBGROUPS=0``
keeps the plain kernels everywhere; ``=1`` uses the subgroup ones on CPU emulation too. Sums and products then add
in another (fixed) order: equal to the plain kernels within float32 reassociation.
"""

from __future__ import annotations

import os

from ... import dtype as dt
from ...shape import numel
from .kernels import render
from . import tuning
from .launch import _IDENT, WG, Runtime, contiguous, copy_region, map_op
from .primitive import COMPUTE, STORE, WgpuTensor, collapse, contiguous_strides


def _ct(x: WgpuTensor) -> str:
    ct = COMPUTE[x.dtype]
    if ct not in ("f32", "i32") or STORE[x.dtype] != ct:
        raise AssertionError(f"wgpu kernel needs a 32-bit dtype, got {x.dtype}")
    return ct


# -------------------------------------------------------------------- reductions
def subgroups(rt: Runtime, emulated_too: bool = True) -> bool:
    """Whether kernels may use subgroup operations: the device has the "subgroup" feature and
    ``EMBER_WGPU_SUBGROUPS`` is not ``0``. ``emulated_too=False`` (softmax) also leaves them
    off on CPU emulation (lavapipe: its subgroups are the SIMD lanes one thread already fills
    with one row per lane) unless ``EMBER_WGPU_SUBGROUPS=1``."""
    flag = os.environ.get("EMBER_WGPU_SUBGROUPS")
    if "subgroup" not in rt.info.features or flag == "0":
        return False
    return emulated_too or flag == "1" or \
        not any(word in rt.info.name.lower() for word in tuning._EMULATED)


def reduce(rt: Runtime, x: WgpuTensor, dims: tuple[int, ...], op: str, arg: bool = False):
    """Reduce ``dims`` (kept as size 1) with op in sum/prod/max/min; ``arg`` gives the int64
    index of the winner (first on ties, NaN wins for max and min)."""
    ct = _ct(x)
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape))
    out = rt.empty(out_shape, dt.int64 if arg else x.dtype, op)
    m = numel(out_shape)
    if m == 0:
        return out
    kept = [d for d in range(len(x.shape)) if d not in dims]
    kshape, (kstr,) = collapse(tuple(x.shape[d] for d in kept), tuple(x.strides[d] for d in kept))
    rshape, (rstr,) = collapse(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims))
    k = numel(rshape)
    meta = [m, k, len(kshape), len(rshape), x.offset, *kshape, *kstr, *rshape, *rstr]
    reduce_run(rt, ("strided",), lambda: rt.lib.snippet("reduce", "strided", CT=ct), op, ct, m, k,
               meta, [out.block, x.block], ("read",), arg)
    return out


def reduce_run(rt: Runtime, key: tuple, element, op: str, ct: str, m: int, k: int, meta: list,
               blocks: list, access: tuple, arg: bool = False, libs: tuple = ()) -> None:
    """Dispatch reduce.wgsl's kernels (shared with fused reductions): ``element()`` returns the
    WGSL defining ``element(o, k)`` and its bindings from 2 on (``access`` gives their modes;
    ``blocks`` are the output then those bindings' buffers); ``key`` names that WGSL for the
    pipeline cache; ``libs`` are extra WGSL libraries it needs."""
    entry = "reduce_lane" if k < 64 else "reduce_sg" if subgroups(rt) else "reduce_wg"
    wg = 64 if entry == "reduce_lane" else (256 if k >= 256 else 64)
    out_t = "i32" if arg else ct

    keys = dict(CT=ct, OUT_T=out_t, WG=wg, OP=op, IDENT=_IDENT[op, ct],
                RESULT="r.i" if arg else "r.v")

    def build():
        sg = rt.lib.snippet("reduce", "subgroup", **keys) if entry == "reduce_sg" else ""
        code = render(rt.lib.source("reduce") + element() + sg,
                      LIBS=rt.libs(rt.nan_lib(ct), *libs), **keys)
        return code.replace(f"fn {entry}(", "fn main("), ("read", "read_write") + access

    pipe = rt.lib.pipeline(("reduce", entry, wg, op, ct, arg) + key, build)
    if entry != "reduce_lane":
        top = rt.info.max_groups_per_dim
        groups = (min(m, top), -(-m // top), 1)
    else:
        groups = rt.groups(m, wg)
    rt.engine.dispatch(pipe, meta, blocks, groups)


# -------------------------------------------------------------------- scans
def _dim_last(x: WgpuTensor, dim: int):
    nd = len(x.shape)
    perm = [d for d in range(nd) if d != dim] + [dim]
    inverse = [perm.index(d) for d in range(nd)]
    return perm, inverse


def scan(rt: Runtime, x: WgpuTensor, dim: int, op: str) -> WgpuTensor:
    """Cumulative sum (``op="sum"``) or product along ``dim``."""
    ct = _ct(x)
    perm, inverse = _dim_last(x, dim)
    outer = tuple(x.shape[d] for d in perm[:-1])
    length = x.shape[dim]
    out = rt.empty(outer + (length,), x.dtype, "cum" + op)
    lines = numel(outer)
    if lines and length:
        oshape, (ostr,) = collapse(outer, tuple(x.strides[d] for d in perm[:-1]))
        meta = [lines, length, len(oshape), x.offset, x.strides[dim], *oshape, *ostr]
        pipe = rt.lib.pipeline(("scan", op, ct), lambda: (
            render(rt.lib.source("scan"), CT=ct, WG=64, IDENT=_IDENT[op, ct],
                   OPERATOR="+" if op == "sum" else "*", LIBS=rt.libs()),
            ("read", "read", "read_write")))
        rt.engine.dispatch(pipe, meta, [x.block, out.block], rt.groups(lines, 64))
    return out.view(tuple(out.shape[i] for i in inverse),
                    tuple(out.strides[i] for i in inverse))


# -------------------------------------------------------------------- matmul
def batch_view(x: WgpuTensor):
    """(offset, batch stride) when the batch dims collapse to one, else None."""
    bshape, (bstr,) = collapse(x.shape[:-2], x.strides[:-2])
    if len(bshape) == 0:
        return 0
    if len(bshape) == 1:
        return bstr[0]
    return None


def matmul(rt: Runtime, a: WgpuTensor, b: WgpuTensor, out: WgpuTensor | None = None,
           out_view: tuple[int, int, int] | None = None) -> WgpuTensor:
    """Batched ``(..., n, k) @ (..., k, m)`` with identical batch dims. ``out`` with
    ``out_view = (offset, batch stride, row stride)`` writes into part of an existing buffer
    (columns contiguous; 32-bit dtypes only); the result is then ``out`` itself. float16 operands
    are read packed, accumulated in f32 and stored as float16 (see :func:`matmul_dispatch`)."""
    n, k = a.shape[-2:]
    m = b.shape[-1]
    batch_shape = a.shape[:-2]
    batch = numel(batch_shape)
    if batch == 0 or n == 0 or m == 0:
        return out if out is not None else rt.empty(batch_shape + (n, m), a.dtype, "matmul")
    sa, sb = batch_view(a), batch_view(b)
    if sa is None:
        a = contiguous(rt, a)
        sa = n * k
    if sb is None:
        b = contiguous(rt, b)
        sb = k * m

    def run(tile, splits, kc):
        return _run(rt, a, b, sa, sb, out, out_view, tile, splits, kc)

    return run(*plan(rt, n, m, k, batch, a.dtype, run))


def _run(rt, a, b, sa, sb, out, out_view, tile, splits, kc):
    n, k = a.shape[-2:]
    m = b.shape[-1]
    batch_shape = a.shape[:-2]
    fresh = out is None
    if fresh:
        out_view = (0, n * m, m)
    half = a.dtype is dt.float16
    # a float16 result is stored as pairs of columns, one u32 word each: every pair must be
    # a word of this output alone (even offset, strides and width)
    if splits == 1 and not (half and any(v % 2 for v in (*out_view, m))):
        if fresh:
            out = rt.empty(batch_shape + (n, m), a.dtype, "matmul")
        matmul_dispatch(rt, a, b, sa, sb, out, out_view, 1, k, 0, tile)
        return out
    # split-k parts (or an odd float16 result) in f32, summed, then narrowed or copied
    batch = numel(batch_shape)
    part = rt.empty((splits, batch, n, m), dt.float32 if half else a.dtype, "matmul")
    matmul_dispatch(rt, a, b, sa, sb, part, (0, n * m, m), splits, kc, batch * n * m, tile)
    summed = reduce(rt, part, (0,), "sum") if splits > 1 else part
    # reduce's output is a fresh contiguous (1, batch, n, m) buffer: drop the split dim
    summed = summed.view(batch_shape + (n, m), contiguous_strides(batch_shape + (n, m)))
    if half:
        return map_op(rt, [summed], dt.float16, "x0")
    return summed if fresh else _copy_into(rt, summed, out, out_view, batch_shape)


# the autotuner's candidate tiles (kept where the device's limits allow them), each also with
# split-k at the default rule's target and at four times it where k is long enough
_CANDIDATES = (
    {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4},
    {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
    {"BM": 64, "BN": 128, "BK": 16, "TM": 4, "TN": 8},
    {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4},
    {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8},
    {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},
    {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8},
    {"BM": 128, "BN": 256, "BK": 16, "TM": 8, "TN": 16},
    {"BM": 256, "BN": 128, "BK": 16, "TM": 16, "TN": 8},
)


def _fits(info, tile: dict[str, int]) -> bool:
    lanes = (tile["BM"] // tile["TM"]) * (tile["BN"] // tile["TN"])
    shared = ((tile["BM"] + 4) * tile["BK"] + tile["BK"] * tile["BN"]) * 4
    return lanes <= info.max_invocations and shared <= info.workgroup_storage


def _options(rt, n: int, m: int, k: int, batch: int) -> dict[str, tuple]:
    """The candidates' ``(tile, splits, kc)`` by name (``"128x128/8x8k16+split4"``)."""
    options = {}
    for t in (choose_tile(rt, n, m, batch),) + _CANDIDATES:
        if not _fits(rt.info, t):
            continue
        name = "{BM}x{BN}/{TM}x{TN}k{BK}".format(**t)
        options[name] = (t, 1, k)
        groups = -(-m // t["BN"]) * -(-n // t["BM"]) * batch
        for factor in (1, 4):
            splits, kc = split_k(groups, k, t["BK"], factor * _TARGET_GROUPS)
            if splits > 1:
                options[f"{name}+split{splits}"] = (t, splits, kc)
    return options


def plan(rt, n: int, m: int, k: int, batch: int, dtype=dt.float32, run=None):
    """``(tile, splits, kc)`` of a product: the autotuner's choice for its shape class where
    :mod:`.tuning` has or makes one (``run(tile, splits, kc)`` launches a candidate for it to
    time), else the default rule (:func:`choose_tile`, :func:`split_k`)."""
    if run is not None:
        chosen = tuning.TUNER.choose(rt, (n, m, k, batch), dtype.name,
                                     lambda: _options(rt, n, m, k, batch), lambda o: run(*o))
        if chosen is not None:
            return chosen
    tile = choose_tile(rt, n, m, batch)
    groups = -(-m // tile["BN"]) * -(-n // tile["BM"])
    return (tile, *split_k(groups * batch, k, tile["BK"]))


def _unrolled(ct: str, tile: dict[str, int], value: str = "{acc}",
              pairs: bool = False, quads: bool = False, sums: str = "",
              flush: tuple[int, int] = ()) -> dict[str, str]:
    """The register tile's statements, unrolled (TM and TN multiples of 4): accumulator
    declarations, the BK steps of products, and the guarded stores of ``value`` (a format
    of the accumulated ``acc`` at row ``r`` and column ``col``: a fused epilogue), or with
    ``pairs`` the accumulators packed two float16 per u32 word, or with ``quads`` one u32
    word per four columns: ``value`` formats the vec4 ``acc`` and its first ``col`` (int8
    codes: the launcher makes each such word one of this output alone). ``sums`` (``"a"``:
    per row, ``"b"``: per column) also sums that operand over k, ``{ws}`` in ``value``
    (the int8 matmul's weight sums, wgpu/quant.py). ``flush = (kc, centre)``: integer
    sums of any length (f32 products of integers, exact in f32 for at most ``kc`` of k):
    the accumulators (and sums) move into i32 ones every ``kc // BK`` steps, and ``acc``
    is their total plus ``centre`` × the sums, converted to f32 once."""
    tm4, tn4 = tile["TM"] // 4, tile["TN"] // 4
    rows = [(g, q) for g in range(tm4) for q in range(4)]
    accs = [f"acc{g}_{q}_{j}" for g, q in rows for j in range(tn4)]
    wss = [f"ws{i}" for i in range(tm4 if sums == "a" else tn4) if sums]
    decl = [f"    var {a}: vec4<{ct}>;" for a in accs + wss]
    inner = []
    for c in range(tile["BK"]):
        inner += [f"        let b{c}_{j} = Bs[{c}u * (BN / 4u) + lid.x + LX * {j}u];"
                  for j in range(tn4)]
        inner += [f"        let a{c}_{g} = As[{c}u * (AP / 4u) + lid.y + LY * {g}u];"
                  for g in range(tm4)]
        inner += [f"        acc{g}_{q}_{j} = acc{g}_{q}_{j} + a{c}_{g}[{q}] * b{c}_{j};"
                  for g, q in rows for j in range(tn4)]
        inner += [f"        ws{i} = ws{i} + {sums}{c}_{i};"
                  for i in range(tm4 if sums == "a" else tn4) if sums]
    store = []
    for g, q in rows:
        r = f"r{g}_{q}"
        store.append(f"    let {r} = row0 + (lid.y + LY * {g}u) * 4u + {q}u;")
        for j in range(tn4):
            if quads:
                col = f"col0 + (lid.x + LX * {j}u) * 4u"
                at = f"(o_base + i32({r}) * s(14) + i32({col})) >> 2"
                v = value.format(acc=f"acc{g}_{q}_{j}", r=r, col=col,
                                 ws=f"ws{g}[{q}]" if sums == "a" else f"ws{j}")
                store.append(f"    if ({r} < n && {col} < m) {{ out[u32({at})] = {v}; }}")
                continue
            for w in range(0, 4, 2 if pairs else 1):
                col = f"col0 + (lid.x + LX * {j}u) * 4u + {w}u"
                at = f"o_base + i32({r}) * s(14) + i32({col})"
                if pairs:  # float16: columns w, w + 1 in one word (see shaders/matmul.wgsl)
                    acc = f"acc{g}_{q}_{j}"
                    v = f"pack_f16({acc}[{w}], {acc}[{w + 1}])"
                    at = f"({at}) >> 1"
                else:
                    v = value.format(acc=f"acc{g}_{q}_{j}[{w}]", r=r, col=col,
                                     ws=f"ws{g}[{q}]" if sums == "a" else f"ws{j}[{w}]")
                store.append(f"    if ({r} < n && {col} < m) {{ out[u32({at})] = {v}; }}")
    keys = {"FLUSH": "", "TOTAL": ""}
    if flush:
        kc, centre = flush
        decl += [f"    var i{a}: vec4<i32>;" for a in accs + wss] + ["    var steps = 0u;"]
        moves = [f"i{a} = i{a} + vec4<i32>({a}); {a} = vec4<f32>();" for a in accs + wss]
        keys["FLUSH"] = "\n".join([
            "        steps = steps + 1u;",
            f"        if (steps == {kc // tile['BK']}u) {{", "            steps = 0u;",
            *(f"            {line}" for line in moves), "        }"])
        total = [f"    {line}" for line in moves]
        for g, q in rows:
            for j in range(tn4):
                ws = f"vec4<i32>(iws{g}[{q}])" if sums == "a" else f"iws{j}"
                extra = f" + {centre} * {ws}" if sums else ""
                total.append(f"    acc{g}_{q}_{j} = vec4<f32>(iacc{g}_{q}_{j}{extra});")
        keys["TOTAL"] = "\n".join(total)
    lanes = (tile["BM"] // tile["TM"]) * (tile["BN"] // tile["TN"])
    loads = []
    for t in range(-(-tile["BM"] * tile["BK"] // lanes)):
        e = f"(li + {t * lanes}u)"
        loads.append(f"        if ({e} < BM * BK) {{ As[({e} % BK) * (AP / 4u) + {e} / BK / 4u]"
                     f"[({e} / BK) % 4u] = load_a(full, {e} / BK, {e} % BK, row0, k0, n, kk); }}")
    for t in range(-(-tile["BK"] * tile["BN"] // lanes)):
        e = f"(li + {t * lanes}u)"
        loads.append(f"        if ({e} < BK * BN) {{ Bs[({e} / BN) * (BN / 4u) + ({e} % BN) / 4u]"
                     f"[{e} % 4u] = load_b(full, {e} / BN, {e} % BN, col0, k0, m, kk); }}")
    return {"ACC_DECL": "\n".join(decl), "INNER": "\n".join(inner), "STORE": "\n".join(store),
            "LOADS": "\n".join(loads), **keys}


_SMALL_TILE = {"BM": 16, "BN": 32, "BK": 16, "TM": 4, "TN": 4}


def choose_tile(rt, n: int, m: int, batch: int = 1) -> dict[str, int]:
    """The large tile when it still gives enough workgroups to fill a big GPU, else the
    device's default tile unless that would pad the output to twice its size or more."""
    large = getattr(rt, "large_tile", None)
    if large and -(-n // large["BM"]) * -(-m // large["BN"]) * batch >= _TARGET_GROUPS:
        return large
    big = rt.tile
    padded = -(-n // big["BM"]) * big["BM"] * -(-m // big["BN"]) * big["BN"]
    return _SMALL_TILE if padded >= 2 * n * m else big


# at most this many k-parts, each at least _MIN_KC long, to reach _TARGET_GROUPS workgroups
_TARGET_GROUPS = 256
_MIN_KC = 256


def split_k(groups: int, k: int, bk: int, target: int = _TARGET_GROUPS) -> tuple[int, int]:
    """``(splits, kc)``: k in parts of ``kc`` (a multiple of ``bk``) so that ``groups``
    output tiles become about ``target`` workgroups."""
    if groups >= target or k < 2 * _MIN_KC:
        return 1, k
    splits = min(-(-target // groups), k // _MIN_KC)
    kc = -(-k // splits)
    kc = -(-kc // bk) * bk
    return -(-k // kc), kc


def _copy_into(rt, src, out, out_view, batch_shape):
    off, sb, sr = out_view
    src3 = src.view((numel(batch_shape),) + src.shape[-2:],
                    (src.shape[-1] * src.shape[-2],) + src.strides[-2:])
    copy_region(rt, src3, out, off, (sb, sr, 1))
    return out


def matmul_dispatch(rt, a, b, sa, sb, out, out_view, splits, kc, o_ss, tile, epilogue=None,
                    reads=None, sums: str = "", flush: tuple[int, int] = ()):
    """One matmul dispatch per 65535 batch entries. float16 operands are read from their
    packed words into f32 (f32 accumulators); a float16 ``out`` gets them packed in pairs of
    columns (its offset, strides and width even). ``epilogue``: ``(key, code(), value,
    blocks, access, meta)`` of a fused epilogue: WGSL appended to the kernel (bindings from
    4 on), the stored ``value`` (see :func:`_unrolled`), its buffers, their access modes and
    the meta words after the matmul's. ``reads``: ``(code(), IN_A, IN_B)``, the operands' own
    element types and ``read_a``/``read_b`` functions returning f32 (in the pipeline's key
    through the epilogue's). An int8/uint8 ``out`` (the epilogue's codes) is stored a word
    per four columns (offset, strides multiples of 4). ``sums``, ``flush``: see
    :func:`_unrolled`."""
    half = a.dtype is dt.float16
    ct = "f32" if half or reads else _ct(a)
    pairs = out.dtype is dt.float16
    quads = out.dtype in (dt.int8, dt.uint8)
    n, k = a.shape[-2:]
    m = b.shape[-1]
    zero = "0.0" if ct == "f32" else "0"
    key, code, value, blocks, access, extra = epilogue or ((), str, "{acc}", [], (), [])
    in_t = "u32" if half else ct
    read_code, in_a, in_b = reads or (None, in_t, in_t)

    def build():
        helpers = [read_code() if read_code else
                   rt.lib.snippet("matmul", "read_f16" if half else "read", CT=ct)]
        if half or pairs:
            helpers.append(rt.lib.snippet("lib_dtypes", "f16"))
        if pairs:
            helpers.append(rt.lib.snippet("matmul", "pack_f16"))
        return (render(rt.lib.source("matmul"), CT=ct, ZERO=zero, IN_A=in_a, IN_B=in_b,
                       OUT_T="u32" if pairs or quads else ct, HELPERS="\n".join(helpers),
                       **_unrolled(ct, tile, value, pairs, quads, sums, flush), **tile) + code(),
                ("read", "read", "read", "read_write") + access)

    pipe = rt.lib.pipeline(("matmul", ct, half, pairs, quads, sums, flush,
                            tuple(tile.items())) + key, build)
    gx, gy = -(-m // tile["BN"]), -(-n // tile["BM"])
    top = rt.info.max_groups_per_dim
    total = numel(a.shape[:-2]) * splits
    for z0 in range(0, total, top):
        meta = [z0, n, m, k, a.offset, sa, a.strides[-2], a.strides[-1],
                b.offset, sb, b.strides[-2], b.strides[-1], *out_view, splits, kc, o_ss, *extra]
        rt.engine.dispatch(pipe, meta, [a.block, b.block, out.block, *blocks],
                           (gx, gy, min(top, total - z0)))


# -------------------------------------------------------------------- sort
def sort(rt: Runtime, x: WgpuTensor, dim: int, descending: bool):
    """Stable sort along ``dim``: ``(values, int64 indices)``."""
    ct = _ct(x)
    perm, inverse = _dim_last(x, dim)
    outer = tuple(x.shape[d] for d in perm[:-1])
    length = x.shape[dim]
    values = rt.empty(outer + (length,), x.dtype, "sort")
    indices = rt.empty(outer + (length,), dt.int64, "sort")
    lines = numel(outer)
    if lines and length:
        p2 = 1 << max(0, (length - 1).bit_length())
        keys = rt.empty((lines * p2,), x.dtype, "sort")
        idx = rt.empty((lines * p2,), dt.int64, "sort")
        desc = int(bool(descending))
        zero = "0.0" if ct == "f32" else "0"
        st = STORE[x.dtype]

        def pipe(section, bindings):
            lines_ = [f"@group(0) @binding({i + 1}) var<storage, {acc}> {name}: array<{t}>;"
                      for i, (name, acc, t) in enumerate(bindings)]
            return rt.lib.pipeline(("sort", section, ct), lambda: (
                render(rt.lib.source("sort", section), BINDINGS="\n".join(lines_), WG=WG,
                       CT=ct, ZERO=zero, LIBS=rt.libs(rt.nan_lib(ct))),
                ("read",) + tuple(acc for _, acc, _ in bindings)))

        oshape, (ostr,) = collapse(outer, tuple(x.strides[d] for d in perm[:-1]))
        init = pipe("init", [("src", "read", st), ("keys", "read_write", st),
                             ("idx", "read_write", "i32")])
        rt.engine.dispatch(init, [lines, length, p2, desc, len(oshape), x.offset,
                                  x.strides[dim], *oshape, *ostr],
                           [x.block, keys.block, idx.block], rt.groups(lines * p2))
        step = pipe("step", [("keys", "read_write", st), ("idx", "read_write", "i32")])
        kk = 2
        while kk <= p2:
            j = kk // 2
            while j >= 1:
                rt.engine.dispatch(step, [lines, length, p2, desc, kk, j],
                                   [keys.block, idx.block], rt.groups(lines * p2))
                j //= 2
            kk *= 2
        final = pipe("final", [("keys", "read", st), ("idx", "read", "i32"),
                               ("out_v", "read_write", st), ("out_i", "read_write", "i32")])
        rt.engine.dispatch(final, [lines, length, p2, desc],
                           [keys.block, idx.block, values.block, indices.block],
                           rt.groups(lines * length))
    shape = tuple(values.shape[i] for i in inverse)
    strides = tuple(values.strides[i] for i in inverse)
    return values.view(shape, strides), indices.view(shape, strides)


# -------------------------------------------------------------------- random
def philox_uniform(rt: Runtime, shape, seed: int, offset: int) -> WgpuTensor:
    """float32 uniforms in [0, 1), bit-identical to ``ember.random.philox_uniform``."""
    out = rt.empty(shape, dt.float32, "random_uniform")
    n = numel(shape)
    if n:
        blocks = (n + 3) // 4
        pipe = rt.lib.pipeline(("philox",), lambda: (
            render(rt.lib.source("philox"), WG=WG, LIBS=rt.libs()), ("read", "read_write")))
        mask = 0xFFFFFFFF
        meta = [n, blocks, offset & mask, (offset >> 32) & mask, seed & mask, (seed >> 32) & mask]
        rt.engine.dispatch(pipe, meta, [out.block], rt.groups(blocks))
    return out
