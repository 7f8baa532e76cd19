"""The register-blocked depthwise convolution (shaders/depthwise.wgsl): 1-d and 2-d convs with
``groups == C_in`` and ``C_out = C_in · multiplier`` (MobileNet / EfficientNet blocks).

Each workgroup stages the input tile of a few output planes (halo included) in workgroup
memory once, then each lane sums a small block of adjacent outputs with the kernel size,
stride and dilation compiled in. The rule for using it (:func:`supports`): a depthwise conv
(``groups == C_in == weight.shape[0] / multiplier``, ``weight.shape[1] == 1``) over 1 or 2
spatial dims whose staged tile fits the device's workgroup memory and whose staged window is
read at least once per value (not so for a plane of a few outputs under a large dilated
kernel); anything else (3-d, huge kernels or dilations, tiny planes) stays on the generic
path. A 1-d conv runs as a 2-d one of height 1.
The weight gradient (:func:`depthwise_weight_grad`, rule :func:`supports_weight_grad`) is a
split reduction over the positions; the input gradient, a transposed conv with one output
channel per group, is tiled like the forward (:func:`depthwise_conv_transpose`, rule
:func:`supports_transpose`); at stride 1 with one input per group it is the forward kernel
with the kernel turned 180°.
float16 inputs (all of them) are read packed, two per u32 word, into the f32 tile and
registers; the sums are f32. The forward (and that 180° input gradient) stores float16 pairs
when a lane's outputs come in pairs within a row (BX and the output width even), else float32
that is narrowed once, as the other kernels' outputs are.
The int8 forward (wgpu/quant.py's qconv) runs the same kernel, with the float kernel's
blocking, on codes — the input's int8 / uint8 codes (staged a u32 word of four per load where
rows have stride 1), or a float32 input quantized as it is staged — and, ending in codes
(qconv_q), requantizes them in the same dispatch: in its own store at stride 1 where rows are
whole words (four outputs of a row a lane), else through workgroup memory where rows are whole
words; other planes (a 7×7 or 14×14 plane in one tile among them) keep the float result for a
second, requantizing pass. ``EMBER_WGPU_Q8_DEPTHWISE`` picks the int8 kernel's variants, to
compare them on a device: a comma-separated list of ``words`` (the word staging), ``wide`` (the
stride-1 store of four outputs a lane), ``ctile`` (codes through workgroup memory, rows of whole
words), ``cplane`` (the same for a whole plane in one tile), or ``none``; unset: all but
``cplane`` (``wide`` alone is the kernel before the others). ``cplane`` is off by default: on
the H200 its 14×14 and 7×7 stride-1 layers took 0.58–0.64× of the float kernel's time against
0.68–0.76× for the float result plus a requantizing pass (benchmarks/RESULTS.md).

>>> import ember
>>> from ember.backends.wgpu import depthwise
>>> rt = ember.get_backend("wgpu").rt
>>> depthwise.supports(rt, (1, 8, 14, 14), (8, 1, 3, 3), 8, (1, 1), ((1, 1), (1, 1)), (1, 1))
True
"""

from __future__ import annotations

import os
import warnings

from ... import dtype as dt
from ...shape import conv_output_size, conv_transpose_output_size, numel
from . import qcodes
from .kernels import render
from .launch import Runtime, contiguous, narrow, widen
from .primitive import WgpuTensor

# lanes per workgroup: two warps / one wave64, enough to hide the staging without starving a
# small plane (7×7 at EfficientNet's last stage) of work
_LANES = 64
# output positions per workgroup in the weight gradient's first pass: 32 per lane
_CHUNK = 32 * _LANES


def _pow2_at_least(n: int, cap: int) -> int:
    p = 1
    while p < min(n, cap):
        p *= 2
    return p


def _tile_bytes(cfg: dict[str, int]) -> int:
    """The staged tile's bytes (the WGSL's TW, TH): the forward's input window, or for the
    transposed conv (``CIG`` in cfg) the input rows/columns an output tile reaches."""
    ow, oh = cfg["LX"] * cfg["BX"], cfg["LY"] * cfg["BY"]
    if "CIG" in cfg:
        tw = (ow - 1 + (cfg["KW"] - 1) * cfg["DW"]) // cfg["SW"] + 2
        th = (oh - 1 + (cfg["KH"] - 1) * cfg["DH"]) // cfg["SH"] + 2
        return 4 * cfg["PL"] * cfg["CIG"] * tw * th
    tw = (ow - 1) * cfg["SW"] + (cfg["KW"] - 1) * cfg["DW"] + 1
    th = (oh - 1) * cfg["SH"] + (cfg["KH"] - 1) * cfg["DH"] + 1
    return 4 * cfg["PL"] * tw * th


def _wg_bytes(rt: Runtime) -> int:
    return min(rt.info.workgroup_storage, 16384)


def _geometry(x_shape, weight_shape, groups, stride, padding, dilation):
    """The conv as a 2-d one (1-d gets a unit height): (output size, (lo, hi) pads, template
    constants of the kernel shape), or None when it is not depthwise over 1 or 2 dims."""
    nd = len(x_shape) - 2
    c = x_shape[1] if len(x_shape) > 1 else 0
    if nd not in (1, 2) or groups != c or weight_shape[1] != 1 or weight_shape[0] % c:
        return None
    pad = [tuple(p) if isinstance(p, (tuple, list)) else (p, p) for p in padding]
    out = tuple(conv_output_size(*a) for a in zip(x_shape[2:], weight_shape[2:], stride, pad,
                                                  dilation))
    kernel = tuple(weight_shape[2:])
    if nd == 1:
        stride, dilation, pad, out, kernel = ((1, *stride), (1, *dilation), [(0, 0), *pad],
                                              (1, *out), (1, *kernel))
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    return out, pad, {"KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh, "DW": dw}


def _conv_config(rt: Runtime, out, shape: dict[str, int]) -> dict[str, int] | None:
    """The tiled template constants (``shape`` holds the kernel's, and ``CIG`` for the
    transposed conv): lanes LY × LX per plane, PL planes, a BY × BX block per
    lane, shrunk (planes first, then the blocks) until the staged tile fits workgroup memory;
    None where even one output per lane does not fit."""
    oh, ow = out
    lx = _pow2_at_least(ow, 8)
    ly = _pow2_at_least(oh, 4)
    cfg = {**shape, "LX": lx, "LY": ly, "BX": 2 if ow > 8 else 1,
           "BY": 4 if oh > 8 else (2 if oh > 4 else 1), "PL": max(1, _LANES // (lx * ly))}
    limit = _wg_bytes(rt)
    for key in ("PL", "BY", "BX"):
        while _tile_bytes(cfg) > limit and cfg[key] > 1:
            cfg[key] //= 2
    fits = _tile_bytes(cfg) <= limit and lx * ly * cfg["PL"] <= rt.info.max_invocations
    return cfg if fits else None


def _reuses(out, shape: dict[str, int]) -> bool:
    """Whether a plane's staged window is read at least once per value on average: not so
    for planes of a few outputs under a large, dilated kernel (a 2×1 output of a 7×7 at
    dilation 2 stages 195 values for 98 taps), where one lane per output is as fast."""
    used = [min(o, 16) for o in out]  # the outputs of one tile, at most 16 a side
    window = [(u - 1) * shape[s] + (shape[k] - 1) * shape[d] + 1
              for u, s, k, d in zip(used, ("SH", "SW"), ("KH", "KW"), ("DH", "DW"))]
    return used[0] * used[1] * shape["KH"] * shape["KW"] >= window[0] * window[1]


def _plan(rt: Runtime, x_shape, weight_shape, stride, padding, dilation):
    """(output size, pads, forward config) or None when the forward kernel doesn't apply."""
    geo = _geometry(x_shape, weight_shape, x_shape[1] if len(x_shape) > 1 else 0, stride,
                    padding, dilation)
    if geo is None or not _reuses(geo[0], geo[2]):
        return None
    cfg = _conv_config(rt, geo[0], geo[2])
    return None if cfg is None else (geo[0], geo[1], cfg)


def supports(rt: Runtime, x_shape, weight_shape, groups: int, stride, padding,
             dilation) -> bool:
    """Whether :func:`depthwise_conv` handles this conv (the rule in the module docstring);
    the arguments as ``conv``'s, ``padding`` as ``((lo, hi), ...)`` pairs."""
    x_shape = tuple(x_shape)
    return groups == (x_shape[1] if len(x_shape) > 1 else 0) and _plan(
        rt, x_shape, tuple(weight_shape), tuple(stride), tuple(padding)[:len(x_shape) - 2],
        tuple(dilation)) is not None


def supports_weight_grad(rt: Runtime, x_shape, weight_shape, groups: int, stride, padding,
                         dilation) -> bool:
    """Whether :func:`depthwise_weight_grad` handles this conv: depthwise over 1 or 2 dims with
    the per-lane sums of all taps in workgroup memory (KH·KW ≤ 64 on a 16 KiB device)."""
    x_shape = tuple(x_shape)
    geo = _geometry(x_shape, tuple(weight_shape), groups, tuple(stride),
                    tuple(padding)[:len(x_shape) - 2], tuple(dilation))
    return geo is not None and 4 * _LANES * geo[2]["KH"] * geo[2]["KW"] <= _wg_bytes(rt)


def _f32(rt: Runtime, x: WgpuTensor) -> WgpuTensor:
    return widen(rt, x) if x.dtype != dt.float32 else x


# the forward's lanes past the last plane stop after staging (not with CTILE: the barrier
# before its packing is the whole workgroup's)
_EXIT = "    if (plane >= planes) { return; }"


def _conv_unrolled(c: dict[str, int]) -> dict[str, str]:
    """The forward's register block as named statements (see shaders/depthwise.wgsl): each
    staged input of a kernel row is read once into a register and used by every output and
    tap that needs it."""
    bys, bxs, kys, kxs = range(c["BY"]), range(c["BX"]), range(c["KH"]), range(c["KW"])
    span = (c["BX"] - 1) * c["SW"] + (c["KW"] - 1) * c["DW"] + 1
    decl = [f"    var a{by}_{bx} = 0.0;" for by in bys for bx in bxs]
    flip = c.get("FLIP", 0)  # the kernel turned 180°: a stride-1 transposed conv
    at = {(ky, kx): (c["KH"] - 1 - ky if flip else ky) * c["KW"] + (c["KW"] - 1 - kx if flip else kx)
          for ky in kys for kx in kxs}
    # int8 weights: unpacked once per workgroup into wtile (one byte per lane, not every
    # lane all of its plane's bytes)
    read = "wtile[p * KH * KW + {}u]" if c.get("Q8") else "read_weight(wb + {}u)"
    decl += [f"    let w{ky}_{kx} = {read.format(at[ky, kx])};" for ky in kys for kx in kxs]
    body = []
    for by in bys:
        for ky in kys:
            body.append(f"    {{ let r = base + {by * c['SH'] + ky * c['DH']}u * TW;")
            body += [f"      let v{i} = tile[r + {i}u];" for i in range(span)]
            body += [f"      a{by}_{bx} = a{by}_{bx} + v{bx * c['SW'] + kx * c['DW']} * w{ky}_{kx};"
                     for kx in kxs for bx in bxs]
            body.append("    }")
    if c.get("CODES"):  # codes out: a lane's BX = 4 outputs of a row are one word
        stores = ["    let m = requant_m(co);", "    let c = requant_c(b);"]
        for by in bys:
            codes = ", ".join(f"requant_at(a{by}_{bx}, m, c)" for bx in bxs)
            stores.append(f"    {{ let oy = oy0 + ly * BY + {by}u; let ox = ox0 + lx * BX;"
                          f" if (oy < oh && ox < ow) {{ out[((plane * oh + oy) * ow + ox) >> 2u]"
                          f" = pack_codes({codes}); }} }}")
        return {"ACC_DECL": "\n".join(decl), "BODY": "\n".join(body), "EXIT": _EXIT,
                "STORES": "\n".join(stores), **_staged_weights(c)}
    if c.get("CTILE"):  # codes out through workgroup memory, packed by pack_tile
        stores = ["    let m = requant_m(co);", "    let c = requant_c(b);"]
        for by in bys:  # at the code's place in the plane (WHOLE) or in the tile
            for bx in bxs:
                oy, ox = f"ly * BY + {by}u", f"lx * BX + {bx}u"
                code = f"requant_at(a{by}_{bx}, m, c)"
                if c["CTILE"] == 2:
                    stores.append(f"    if ({oy} < oh && {ox} < ow) {{ ctile[p * CR * CW + "
                                  f"({oy}) * ow + {ox}] = {code}; }}")
                else:
                    stores.append(f"    ctile[p * CR * CW + ({oy}) * CW + {ox}] = {code};")
        stores += ["    workgroupBarrier();", "    pack_tile(first, planes, oh, ow, oy0, ox0, li);"]
        return {"ACC_DECL": "\n".join(decl), "BODY": "\n".join(body), "EXIT": "",
                "STORES": "\n".join(stores), **_staged_weights(c)}
    # int8 codes (Q8): the exact integer sums rescaled by the input and channel scales
    stores = ["    let qs = q_in_scale[0] * q_w_scale[co];"] if c.get("Q8") else []
    scaled = " * qs" if c.get("Q8") else ""
    pairs = c.get("PAIRS", 0)  # float16 out, BX and OW even: outputs bx, bx + 1 share a word
    for by in bys:
        stores.append(f"    {{ let oy = oy0 + ly * BY + {by}u;")
        if pairs:
            stores += [f"      if (oy < oh && ox0 + lx * BX + {bx}u < ow) {{ out[((plane * oh + oy)"
                       f" * ow + ox0 + lx * BX + {bx}u) >> 1u] = pack_f16(a{by}_{bx} + b, "
                       f"a{by}_{bx + 1} + b); }}" for bx in bxs[::2]]
        else:
            stores += [f"      if (oy < oh && ox0 + lx * BX + {bx}u < ow) {{ out[(plane * oh + oy)"
                       f" * ow + ox0 + lx * BX + {bx}u] = a{by}_{bx}{scaled} + b; }}"
                       for bx in bxs]
        stores.append("    }")
    return {"ACC_DECL": "\n".join(decl), "BODY": "\n".join(body), "STORES": "\n".join(stores),
            "EXIT": _EXIT, **_staged_weights(c)}


def _staged_weights(c: dict[str, int]) -> dict[str, str]:
    """The int8 forward's weights unpacked once per workgroup into wtile (W_TILE, W_STAGE;
    empty for the float kernels)."""
    if not c.get("Q8"):
        return {"W_TILE": "", "W_STAGE": ""}
    return {"W_TILE": "var<workgroup> wtile: array<f32, PL * KH * KW>;",
            "W_STAGE": "\n".join([
                "    for (var e = li; e < PL * KH * KW; e = e + LANES) {",
                "        let wp = first + e / (KH * KW);",
                "        if (wp < planes) { wtile[e] = read_weight((wp % cout) * KH * KW"
                " + e % (KH * KW)); }",
                "    }"])}


def _wgrad_unrolled(c: dict[str, int]) -> dict[str, str]:
    """The weight gradient's per-position taps as named statements (see the shader)."""
    taps = [(ky, kx) for ky in range(c["KH"]) for kx in range(c["KW"])]
    body = []
    for ky in range(c["KH"]):
        body += [f"            {{ let yy = iy0 + {ky * c['DH']};",
                 "              let in_y = yy >= 0 && yy < si(5);",
                 "              let row = base + clamp(yy, 0, si(5) - 1) * si(14);"]
        for kx in range(c["KW"]):
            body += [f"              {{ let xx = ix0 + {kx * c['DW']};",
                     "                let v = read_src(u32(row + clamp(xx, 0, si(6) - 1) * si(15)));",
                     f"                t{ky}_{kx} = t{ky}_{kx} + select(0.0, gv * v, in_y && xx >= 0"
                     " && xx < si(6)); }"]
        body.append("            }")
    return {"ACC_DECL": "\n".join(f"    var t{ky}_{kx} = 0.0;" for ky, kx in taps),
            "BODY": "\n".join(body),
            "STORES": "\n".join(f"    sums[li * TAPS + {i}u] = t{ky}_{kx};"
                                for i, (ky, kx) in enumerate(taps))}


_UNROLLED = {"conv": _conv_unrolled, "weight_grad_partial": _wgrad_unrolled}


# the input buffers each section reads through read_<name> (shaders/depthwise.wgsl)
_READS = {"conv": ("src", "weight", "bias"),
          "conv_transpose": ("src", "weight", "bias"),
          "weight_grad_partial": ("src", "grad"), "weight_grad_sum": ()}
# the sections that stage input planes into their tile with stage_plane
_STAGED = ("conv", "conv_transpose")


def _pipe(rt: Runtime, section: str, n_buffers: int, cfg: dict, half: bool = False,
          read=None):
    """The section's pipeline; ``half``: its inputs are float16, read packed; ``cfg["Q8"]``:
    the forward on int8 codes (``read("src")`` the WGSL reading the input's codes — a float32
    quantized as it is staged, or int8/uint8 codes —, ``cfg["Q8"]`` naming it in the key;
    int8 weights; two more bindings: the weight scales and the input scale)."""
    key = ("depthwise", section, half, tuple(sorted(cfg.items())))
    q8 = bool(cfg.get("Q8"))
    codes = bool(cfg.get("CODES") or cfg.get("CTILE"))
    access = ("read",) * (n_buffers + 1) + ("read_write",) + ("read",) * (2 * q8 + codes)
    code = _UNROLLED.get(section, lambda c: {})

    def build():
        helpers = [rt.lib.snippet("depthwise", "read_f16" if half else "read", NAME=name)
                   for name in _READS[section] if not (q8 and name in ("src", "weight"))]
        quant = ""
        if q8:
            helpers += [rt.lib.snippet("lib_quant", "code"), read("src"),
                        rt.lib.snippet("lib_quant", "read_codes", NAME="weight")]
            quant = rt.lib.snippet("lib_quant", "scales", W_AT=n_buffers + 2,
                                   IN_AT=n_buffers + 3)
        if codes:  # the output scale's binding, the range in meta words 17, 18
            quant += rt.lib.snippet("lib_quant", "requant", OUT_AT=n_buffers + 4, LO_AT=17)
        if cfg.get("CTILE"):
            quant += rt.lib.snippet("depthwise", "pack_codes_tile", WHOLE=cfg["CTILE"] - 1)
        if cfg.get("WORDS"):  # int8 / uint8 codes in rows of stride 1: a word per load
            word = "bitcast<i32>(word)" if cfg["Q8"] == "int8" else "word"
            helpers.append(rt.lib.snippet("depthwise", "stage_plane_words", WORD=word))
        elif section in _STAGED:
            helpers.append(rt.lib.snippet("depthwise", "stage_plane"))
        if half or cfg.get("PAIRS"):
            helpers.append(rt.lib.snippet("lib_dtypes", "f16"))
        if cfg.get("PAIRS"):
            helpers.append(rt.lib.snippet("matmul", "pack_f16"))
        in_t = "u32" if half else "f32"
        src_t = "u32" if half or cfg.get("Q8") in ("int8", "uint8") else "f32"
        return (render(rt.lib.source("depthwise", section), IN_T=in_t, SRC_T=src_t,
                       WEIGHT_T="u32" if q8 else in_t, QUANT=quant,
                       OUT_T="u32" if cfg.get("PAIRS") or codes else "f32",
                       HELPERS="\n".join(helpers),
                       **cfg, **code(cfg)), access)

    return rt.lib.pipeline(key, build)


_VARIANTS = ("words", "wide", "ctile", "cplane")
_DEFAULT_VARIANTS = ("words", "wide", "ctile")


def _variants() -> tuple[str, ...]:
    """The int8 kernel's variants ``EMBER_WGPU_Q8_DEPTHWISE`` leaves on (the module doc)."""
    flag = os.environ.get("EMBER_WGPU_Q8_DEPTHWISE", "").strip()
    if not flag:
        return _DEFAULT_VARIANTS
    names = tuple(v.strip() for v in flag.split(",") if v.strip() not in ("", "none"))
    if not set(names) <= set(_VARIANTS):
        warnings.warn(f"EMBER_WGPU_Q8_DEPTHWISE={flag!r}: not a list of {', '.join(_VARIANTS)} "
                      "or none; using the default", stacklevel=4)
        return _DEFAULT_VARIANTS
    return names


def _q8_config(rt: Runtime, cfg: dict, out, nd: int, codes, words: bool) -> tuple[dict, list]:
    """The int8 forward's config and its extra bindings past the scales: room for the
    unpacked weights (wtile); ``words``: the input's codes staged a word per load (WORDS).
    Codes out, one dispatch: at stride 1 where 2-d rows are a whole number of words, in the
    store (CODES: four outputs of a row a lane, BX = 4, while the tile fits; measured faster
    on the H200 than the float-out kernel plus a requantizing pass); elsewhere with the float
    kernel's blocking through workgroup memory (CTILE, 1 where its rows are whole words; 2
    where the tile is the whole plane, variant ``cplane``) — a stride-2 BX = 4 tile stages twice the columns (the
    96x113x113 layer took 1.7x the float kernel plus a requantizing pass on the H200);
    planes whose words straddle tiles keep the float result for a requantizing pass."""
    def fit(c):
        def size():
            codes_tile = c["LY"] * c["BY"] * c["LX"] * c["BX"] if c.get("CTILE") else 0
            return _tile_bytes(c) + 4 * c["PL"] * (c["KH"] * c["KW"] + codes_tile)

        while size() > _wg_bytes(rt) and c["PL"] > 1:
            c["PL"] //= 2
        return size() <= _wg_bytes(rt)

    variants = _variants()
    cfg = {**cfg, "WORDS": 1} if words and "words" in variants else dict(cfg)
    if codes is not None and nd == 2 and out[1] % 4 == 0 and cfg["SW"] == 1 and \
            "wide" in variants:
        wide = {**cfg, "BX": 4, "CODES": 1}
        if fit(wide):
            return wide, [codes.scale.block]
    if codes is not None:
        whole = cfg["LX"] * cfg["BX"] >= out[1] and cfg["LY"] * cfg["BY"] >= out[0]
        if (whole and "cplane" in variants) or (
                not whole and out[1] % 4 == 0 and "ctile" in variants):
            tiled = {**cfg, "CTILE": 2 if whole else 1}
            if fit(tiled):
                return tiled, [codes.scale.block]
    fit(cfg)
    return cfg, []


def _inputs(rt: Runtime, x: WgpuTensor, other: WgpuTensor, bias=None):
    """``(half, x, contiguous other, contiguous bias)``: as they are when all (bias: if any)
    are float16 — the kernels read them packed — else widened to float32."""
    half = all(t is None or t.dtype is dt.float16 for t in (x, other, bias))
    if not half:
        x, other, bias = (None if t is None else _f32(rt, t) for t in (x, other, bias))
    return half, x, contiguous(rt, other), None if bias is None else contiguous(rt, bias)


def _paired(cfg: dict[str, int], out, half: bool) -> dict[str, int]:
    """The forward's config storing float16 pairs (PAIRS) where the inputs are float16 and a
    lane's outputs come in pairs within the row (BX and OW even); else float32 and a narrow."""
    return {**cfg, "PAIRS": 1} if half and cfg["BX"] % 2 == 0 and out[1] % 2 == 0 else cfg


def _out_dtype(cfg: dict[str, int]) -> dt.DType:
    return dt.float16 if cfg.get("PAIRS") else dt.float32


def _x_words(x: WgpuTensor) -> list[int]:
    """x's offset and (N, C, H, W) strides, a 1-d input with a zero height stride."""
    spatial = (0, *x.strides[2:]) if len(x.shape) == 3 else x.strides[2:]
    return [x.offset, x.strides[0], x.strides[1], *spatial]


def _hw(x: WgpuTensor) -> tuple[int, int]:
    return (1, *x.shape[2:]) if len(x.shape) == 3 else x.shape[2:]


def depthwise_conv(rt: Runtime, x: WgpuTensor, weight: WgpuTensor, bias, stride, padding,
                   dilation, scales=None) -> WgpuTensor:
    """``conv(x, weight, bias, stride, padding, dilation, groups=C_in)`` for a depthwise conv
    that :func:`supports` accepts (``padding`` as ``((lo, hi), ...)`` pairs); float32 sums,
    float16 inputs read packed, the result narrowed. Returns a contiguous ``(N, C_out, *out)``
    (codes: its planes padded to whole words). ``scales = (w_scale, in_scale, read, key, codes)``: int8 ``weight`` codes and ``x`` as
    codes (``ember.contract.quantized``'s qconv: int8 / uint8 codes, or a float32 quantized at
    ``in_scale``; ``read(name)`` the WGSL reading them, ``key`` naming it; contiguous scales,
    a bias), ending in ``codes`` (:class:`.qcodes.Codes`) or, for None, in float32."""
    dtype = x.dtype if scales is None else dt.float32  # int8 ops: float results
    nd = len(x.shape) - 2
    plan = _plan(rt, x.shape, weight.shape, tuple(stride), tuple(padding), tuple(dilation))
    if plan is None:
        raise ValueError(f"depthwise_conv: not a depthwise 1-d/2-d conv it can run: x "
                         f"{x.shape}, weight {weight.shape}, stride {stride}, dilation "
                         f"{dilation}; check depthwise.supports() first")
    out, pad, cfg = plan
    read = None
    if scales is None:
        half, x, weight, b = _inputs(rt, x, weight, bias)
        cfg, extra = _paired(cfg, out, half), []
    else:
        half, weight, b = False, contiguous(rt, weight), bias
        w_scale, in_scale, read, key, codes = scales
        words = x.dtype in (dt.int8, dt.uint8) and x.strides[-1] == 1
        cfg, extra = _q8_config(rt, {**cfg, "Q8": key}, out, nd, codes, words)
        extra = [w_scale.block, in_scale.block] + extra
    n, c_out = x.shape[0], weight.shape[0]
    if cfg.get("CODES") or cfg.get("CTILE"):  # planes padded to whole words
        y, _ = qcodes.padded(rt, (n, c_out) + out[2 - nd:], 2, codes.dtype)
    else:
        y = rt.empty((n, c_out) + out[2 - nd:], _out_dtype(cfg), "depthwise_conv")
    planes = n * c_out
    if planes and numel(out):
        tiles_x = -(-out[1] // (cfg["LX"] * cfg["BX"]))
        tiles = tiles_x * -(-out[0] // (cfg["LY"] * cfg["BY"]))
        meta = [planes, c_out, c_out // x.shape[1], *out, *_hw(x), pad[0][0], pad[1][0],
                tiles_x, tiles, *_x_words(x), int(b is not None)]
        if cfg.get("CODES") or cfg.get("CTILE"):
            meta += [codes.lo & 0xFFFFFFFF, codes.hi]
        rt.engine.dispatch(_pipe(rt, "conv", 3, cfg, half, read), meta,
                           [x.block, weight.block, (b if b is not None else weight).block,
                            y.block, *extra], rt.groups(-(-planes // cfg["PL"]) * tiles, 1))
    if cfg.get("CODES") or cfg.get("CTILE"):
        return y
    if scales is not None and scales[4] is not None:
        # codes out, rows not a whole number of words: the float sums requantized in a
        # second pass. A kernel writing the codes
        # itself (whole rows per workgroup, words packed in workgroup memory) measured
        # 1.5-1.6x this pair's GPU time on the H200 (benchmarks/RESULTS.md, 2026-12-02):
        # the kernel is not bound by bytes, and the float kernel's register blocking wins
        return qcodes.requant_map(rt, y, scales[4])
    return narrow(rt, y, dtype)


def depthwise_weight_grad(rt: Runtime, x: WgpuTensor, grad: WgpuTensor, weight_shape, stride,
                          padding, dilation) -> WgpuTensor:
    """``conv_weight_grad(x, grad, weight_shape, stride, padding, dilation, groups=C_in)`` for
    a depthwise conv that :func:`supports_weight_grad` accepts: a split reduction (each
    workgroup sums one chunk of the N·OH·OW positions for one channel, then one lane per weight
    element adds the chunks), so the work spreads over the device however few channels there
    are. Returns a contiguous ``weight_shape`` tensor in x's dtype."""
    dtype = x.dtype
    weight_shape = tuple(weight_shape)
    geo = _geometry(x.shape, weight_shape, x.shape[1], tuple(stride), tuple(padding),
                    tuple(dilation))
    if geo is None or not supports_weight_grad(rt, x.shape, weight_shape, x.shape[1], stride,
                                               padding, dilation):
        raise ValueError(f"depthwise_weight_grad: not a depthwise 1-d/2-d conv it can run: x "
                         f"{x.shape}, weight {weight_shape}; check supports_weight_grad() first")
    out, pad, shape = geo
    half, x, grad, _ = _inputs(rt, x, grad)
    n, c_out = grad.shape[:2]
    taps = shape["KH"] * shape["KW"]
    y = rt.empty(weight_shape, dt.float32, "depthwise_weight_grad")
    if numel(weight_shape):
        cfg = {**shape, "LANES": _LANES}
        positions = n * numel(out)
        chunks = max(1, -(-positions // _CHUNK))
        partial = rt.empty((c_out, chunks, taps), dt.float32, "depthwise_weight_grad")
        meta = [c_out, c_out // x.shape[1], n, *out, *_hw(x), pad[0][0], pad[1][0], chunks,
                _CHUNK, *_x_words(x)]
        rt.engine.dispatch(_pipe(rt, "weight_grad_partial", 2, cfg, half), meta,
                           [x.block, grad.block, partial.block],
                           rt.groups(c_out * chunks, 1))
        rt.engine.dispatch(_pipe(rt, "weight_grad_sum", 1, cfg), [numel(weight_shape), chunks],
                           [partial.block, y.block], rt.groups(numel(weight_shape), _LANES))
    return narrow(rt, y, dtype)


def _transpose_plan(rt: Runtime, x_shape, weight_shape, groups, stride, padding,
                    output_padding, dilation):
    """(output size, pads, config) of a transposed conv as 2-d, or None where it is not the
    adjoint of a depthwise conv over 1 or 2 dims (see :func:`supports_transpose`)."""
    nd = len(x_shape) - 2
    c_in = x_shape[1] if len(x_shape) > 1 else 0
    if nd not in (1, 2) or not groups or weight_shape[1] != 1 or c_in % groups or \
            weight_shape[0] != c_in:
        return None
    out = tuple(conv_transpose_output_size(*a) for a in zip(
        x_shape[2:], weight_shape[2:], stride, padding, output_padding, dilation))
    kernel, padding = tuple(weight_shape[2:]), tuple(padding)
    if nd == 1:
        stride, dilation, padding, out, kernel = ((1, *stride), (1, *dilation), (0, *padding),
                                                  (1, *out), (1, *kernel))
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    cfg = _conv_config(rt, out, {"KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh, "DW": dw,
                                 "CIG": c_in // groups})
    return None if cfg is None else (out, padding, cfg)


def supports_transpose(rt: Runtime, x_shape, weight_shape, groups: int, stride, padding,
                       output_padding, dilation) -> bool:
    """Whether :func:`depthwise_conv_transpose` handles this transposed conv: one output
    channel per group (weight ``(C_in, 1, *kernel)``, ``C_in = groups · CIG``) — the input
    gradient of a depthwise conv with multiplier CIG — over 1 or 2 dims, its tile fitting
    workgroup memory."""
    return _transpose_plan(rt, tuple(x_shape), tuple(weight_shape), groups, tuple(stride),
                           tuple(padding), tuple(output_padding), tuple(dilation)) is not None


def depthwise_conv_transpose(rt: Runtime, x: WgpuTensor, weight: WgpuTensor, bias, stride,
                             padding, output_padding, dilation, groups: int) -> WgpuTensor:
    """``conv_transpose(x, weight, bias, stride, padding, output_padding, dilation, groups)``
    (``padding`` an int per dim) for the case :func:`supports_transpose` accepts — the input
    gradient of a depthwise conv. Returns a contiguous ``(N, groups, *out)``."""
    dtype = x.dtype
    nd = len(x.shape) - 2
    plan = _transpose_plan(rt, x.shape, weight.shape, groups, tuple(stride), tuple(padding),
                           tuple(output_padding), tuple(dilation))
    if plan is None:
        raise ValueError(f"depthwise_conv_transpose: not a depthwise adjoint it can run: x "
                         f"{x.shape}, weight {weight.shape}, groups {groups}; check "
                         f"depthwise.supports_transpose() first")
    out, pads, cfg = plan
    section = "conv_transpose"
    if cfg["SH"] == cfg["SW"] == 1 and cfg["CIG"] == 1:
        # stride 1, one input per group: the forward conv with the kernel turned 180° and
        # padding (K - 1)·dilation - pad (the faster kernel: its loads are shared by taps)
        shape = {k: cfg[k] for k in ("KH", "KW", "SH", "SW", "DH", "DW")}
        fwd = _conv_config(rt, out, shape)
        if fwd is not None:
            section, cfg = "conv", {**fwd, "FLIP": 1}
            pads = [(cfg["KH"] - 1) * cfg["DH"] - pads[0], (cfg["KW"] - 1) * cfg["DW"] - pads[1]]
    half, x, weight, b = _inputs(rt, x, weight, bias)
    if section == "conv":
        cfg = _paired(cfg, out, half)
    n = x.shape[0]
    y = rt.empty((n, groups) + out[2 - nd:], _out_dtype(cfg), "depthwise_conv_transpose")
    planes = n * groups
    if planes and numel(out):
        tiles_x = -(-out[1] // (cfg["LX"] * cfg["BX"]))
        tiles = tiles_x * -(-out[0] // (cfg["LY"] * cfg["BY"]))
        # word 2 is the forward's multiplier (input plane = output plane), unused otherwise
        meta = [planes, groups, 1, *out, *_hw(x), pads[0], pads[1], tiles_x, tiles,
                *_x_words(x), int(b is not None)]
        rt.engine.dispatch(_pipe(rt, section, 3, cfg, half), meta,
                           [x.block, weight.block, (b if b is not None else weight).block,
                            y.block], rt.groups(-(-planes // cfg["PL"]) * tiles, 1))
    return narrow(rt, y, dtype)
