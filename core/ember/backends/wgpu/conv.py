"""Convolution launchers of the wgpu backend: conv, conv_transpose (also a conv's input
gradient) and the weight gradient, summing in float32.

float16 (on adapters with ``shader-f16``), when every operand is float16: the implicit GEMM
and the depthwise kernels read them packed, two per u32 word, into f32 registers — no widened
copies. The implicit GEMM's forward and conv_transpose store float16 pairs where the output's
pixel count is even (two neighbouring columns share a word), the depthwise forward where a
lane's outputs pair up in a row (see :mod:`.depthwise`); else float32 and one narrowing pass.
Weight gradients store float32 (split-K's partial sums stay exact) and narrow once. The other
paths (direct kernels, the 1×1 matmul) and mixed dtypes keep the old rule: widen to float32
first, narrow the result.

Which kernel runs, by one rule for all three:

- a depthwise conv (``groups == C_in``, one input channel per group) that
  :mod:`.depthwise`'s ``supports*`` accept: its register-blocked kernels with the input tile
  staged in workgroup memory;
- few (at most ``_DIRECT_MAX_CHANNELS``) input channels per group and groups > 1 (depthwise,
  as in MobileNet/EfficientNet), or a conv_transpose with at most ``_DIRECT_MAX_ROWS`` output
  channels per group: the direct kernels of nn.wgsl, one lane per output element looping over
  the taps — a GEMM per group would have tiny dimensions;
- an ungrouped 1×1 conv (or conv_transpose) with stride 1 and no padding: one batched matmul
  on views, ``W @ x[n]``, with no gather at all;
- everything else: an implicit GEMM (shaders/conv_igemm.wgsl): matmul's tiles with the im2col
  column of each K-tile gathered from the input into workgroup memory, so no column matrix
  exists in memory. The weight gradient is the same kernel reducing over images × pixels,
  split over k (partial sums, then one reduction) when its output alone has too few tiles.
"""

from __future__ import annotations

from ... import dtype as dt
from ...shape import conv_output_size, conv_transpose_output_size, numel
from . import compute, depthwise
from .kernels import render
from .launch import WG, Runtime, cast, contiguous, map_op, narrow
from .primitive import WgpuTensor, collapse, contiguous_strides

# grouped convs with at most this many (input) channels per group use the direct kernels
_DIRECT_MAX_CHANNELS = 8
# conv_transposes with at most this many output channels per group too: they are the GEMM's
# rows, and the smallest tile has 16 (a 1-channel image's input gradient would waste 15/16)
_DIRECT_MAX_ROWS = 4


def nn_pipe(rt: Runtime, section: str, n_buffers: int, **keys):
    """The pipeline of one nn.wgsl section (bindings: meta, inputs, then the output)."""
    key = ("nn", section, tuple(sorted(keys.items())))
    access = ("read",) * (n_buffers + 1) + ("read_write",)
    return rt.lib.pipeline(key, lambda: (
        render(rt.lib.source("nn", section), WG=WG, LIBS=rt.libs(), **keys), access))


def f32(rt: Runtime, x: WgpuTensor) -> WgpuTensor:
    """x as float32: float16 widened, integers (int8/uint8 codes through a max pool) cast."""
    return x if x.dtype == dt.float32 else cast(rt, x, dt.float32)


def _direct(groups: int, per_group: int) -> bool:
    return groups > 1 and per_group <= _DIRECT_MAX_CHANNELS


def _pointwise(kernel, stride, pads, groups: int) -> bool:
    """A 1×1, stride-1, unpadded, ungrouped (de)convolution: a plain matmul per image."""
    return groups == 1 and all(k == 1 for k in kernel) and all(s == 1 for s in stride) and \
        not any(pads)


def _geometry(spatial, out, kernel, stride, dilation, pads, strides) -> list[int]:
    words: list[int] = []
    for d in range(len(kernel)):
        words += [spatial[d], out[d], kernel[d], stride[d], dilation[d], pads[d], strides[d]]
    return words


# convs with few output channels per group (the GEMM's rows) take a 16×64 tile of 64 lanes,
# with an 8-deep K-tile when k is shorter than 16 (a first layer's few channels × taps): on
# lavapipe 3× faster than matmul's 16×32 tile of 32 lanes for the MNIST CNN's first conv, and
# little padding where a 64-row tile would be half empty
_THIN_TILE = {"BM": 16, "BN": 64, "BK": 16, "TM": 4, "TN": 4}


def _tile(rt: Runtime, rows: int, cols: int, k: int, groups: int) -> dict[str, int]:
    """The forward kernels' tile: the large one only when its rows are filled (matmul's
    choose_tile would take it for 64 rows too, half of them padding), the device's default
    from 48 rows, else the thin one."""
    large = rt.large_tile
    if large and rows >= large["BM"] and \
            -(-rows // large["BM"]) * -(-cols // large["BN"]) * groups >= compute._TARGET_GROUPS:
        return large
    if rows >= 48:
        return rt.tile
    return dict(_THIN_TILE, BK=8) if k < 16 else _THIN_TILE


def _bias(rt: Runtime, bias):
    return contiguous(rt, f32(rt, bias)) if bias is not None else None


# -------------------------------------------------------------------- implicit GEMM
def _stores(tile: dict[str, int], pairs: bool = False, quads: bool = False) -> str:
    """The register tile's stores through the section's ``store(row, col, value)``, or with
    ``pairs`` (a float16 output) ``store2(row, col, value, next value)`` per even column, or
    with ``quads`` (int8 codes) ``store4(row, col, four values)`` per fourth column."""
    lines = []
    for g in range(tile["TM"] // 4):
        for q in range(4):
            for j in range(tile["TN"] // 4):
                at = f"row0 + (lid.y + LY * {g}u) * 4u + {q}u, col0 + (lid.x + LX * {j}u) * 4u"
                acc = f"acc{g}_{q}_{j}"
                if quads:
                    lines.append(f"    store4({at}, {acc});")
                    continue
                lines += [f"    store2({at} + {c}u, {acc}[{c}], {acc}[{c + 1}]);" if pairs
                          else f"    store({at} + {c}u, {acc}[{c}]);"
                          for c in range(0, 4, 2 if pairs else 1)]
    return "\n".join(lines)


def _igemm(rt: Runtime, section: str, x, w, bias, out, *, rows: int, cols: int, k: int,
           groups: int, cin_g: int, taps: int, positions: int, c_out: int, w_strides, geometry,
           tile: dict[str, int], transposed: bool = False, splits: int = 1, kc: int = 0,
           o_ss: int = 0, scales=None) -> None:
    """One conv_igemm.wgsl dispatch per ``max_groups_per_dim`` column tiles (meta: see there).
    float16 ``x``/``w``/``bias`` (all of them) are read packed; a float16 ``out`` (fwd, with
    an even pixel count) gets pairs of columns per word; ``scales``: see
    :func:`igemm_forward`."""
    half = x.dtype is dt.float16
    q8 = None if scales is None else scales[3]
    codes_in = x.dtype in (dt.int8, dt.uint8)
    pairs = out.dtype is dt.float16
    quads = out.dtype in (dt.int8, dt.uint8)  # codes out: scales[4] holds their Codes
    lo_at = 18 + len(geometry)  # the codes' clamp range: meta words after the geometry
    nd = len(geometry) // 7
    unit = all(geometry[7 * d + 3] == 1 for d in range(nd))
    tap_major = section == "fwd" and cin_g > 0 and cin_g % tile["BK"] == 0
    kernel = tuple(geometry[7 * d + 2] for d in range(nd))
    grid = tuple(geometry[7 * d + 1] for d in range(nd))
    ksize, osize = (", ".join(f"{v}u" for v in t + (1,) * (3 - nd)) for t in (kernel, grid))
    lanes = (tile["BM"] // tile["TM"]) * (tile["BN"] // tile["TN"])
    assert lanes % tile["BN"] == 0, f"conv_igemm needs lanes ({lanes}) a multiple of BN: {tile}"

    def build():
        keys = compute._unrolled("f32", tile)
        keys["STORE"] = _stores(tile, pairs, quads)
        if q8:  # int8 codes as f32: x's codes (quantized as it loads), the weight's bytes
            helpers = [rt.lib.snippet("lib_quant", "code"), scales[2]("x"),
                       rt.lib.snippet("lib_quant", "read_codes", NAME="w"),
                       rt.lib.snippet("depthwise", "read", NAME="bias"),
                       rt.lib.snippet("lib_quant", "scales", W_AT=5, IN_AT=6)]
        else:
            helpers = [rt.lib.snippet("conv_igemm", "read_f16" if half else "read")]
        if half or pairs:
            helpers.append(rt.lib.snippet("lib_dtypes", "f16"))
        if pairs:
            helpers.append(rt.lib.snippet("matmul", "pack_f16"))
        if quads:
            helpers += [rt.lib.snippet("lib_quant", "requant", OUT_AT=7, LO_AT=lo_at),
                        rt.lib.snippet("conv_igemm", "fwd_store_codes")]
        elif section == "fwd":
            helpers.append(rt.lib.snippet("conv_igemm", "fwd_store_pairs" if pairs else
                                          "fwd_store",
                                          SCALE=" * (q_in_scale[0] * q_w_scale[co])" if q8
                                          else ""))
        code = render(rt.lib.source("conv_igemm", section), ND=nd,
                      TRANSPOSED=str(transposed).lower(), UNIT_STRIDE=str(unit).lower(),
                      TAP_MAJOR=str(tap_major).lower(), TAPS=taps, KSIZE=ksize,
                      OSIZE=osize, PP=positions, IN_T="u32" if half else "f32",
                      X_T="u32" if half or codes_in else "f32",
                      W_T="u32" if half or q8 else "f32",
                      OUT_T="u32" if pairs or quads else "f32",
                      HELPERS="\n".join(helpers), **keys, **tile)
        return code, ("read",) * 4 + ("read_write",) + ("read",) * (2 * bool(q8) + quads)

    pipe = rt.lib.pipeline(("conv_igemm", section, transposed, unit, tap_major, kernel, grid,
                            half, pairs, quads, tuple(tile.items()), q8), build)
    extra = [scales[0], scales[1]] if q8 else []
    codes = [] if not quads else [scales[4].lo, scales[4].hi]
    if quads:
        extra.append(scales[4].scale)
    gx, gy = -(-cols // tile["BN"]), -(-rows // tile["BM"])
    top = rt.info.max_groups_per_dim
    b = bias if bias is not None else w
    for x0 in range(0, gx, top):
        meta = [rows, cols, k, splits, kc or k, x.offset, x.strides[0], x.strides[1],
                int(bias is not None), c_out, cin_g, taps, positions, o_ss, *w_strides,
                x0 * tile["BN"], *geometry, *codes]
        rt.engine.dispatch(pipe, meta, [x.block, w.block, b.block, out.block,
                                        *(t.block for t in extra)],
                           (min(top, gx - x0), gy, groups * splits))


def _pointwise_matmul(rt: Runtime, x, wmat, bias):
    """``y[n] = wmat @ x[n]`` (+ bias) for every image: x (N, C, *spatial), wmat (C_out, C)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    sshape, (sstr,) = collapse(spatial, x.strides[2:])
    if len(sshape) > 1:
        x = contiguous(rt, x)
        sstr = (1,)
    p = numel(spatial)
    xv = x.view((n, c, p), (x.strides[0], x.strides[1], sstr[0] if sstr else 1))
    wv = wmat.view((n,) + wmat.shape, (0,) + wmat.strides)
    y = compute.matmul(rt, wv, xv)
    shape = (n, wmat.shape[0]) + spatial
    y = y.view(shape, contiguous_strides(shape))
    if bias is None:
        return y
    bv = bias.view(shape, (0, bias.strides[0]) + (0,) * len(spatial))
    return map_op(rt, [y, bv], dt.float32, "x0 + x1")


# -------------------------------------------------------------------- the three ops
def _half(*tensors) -> bool:
    """The implicit GEMM reads these (None: absent) packed when all are float16."""
    return all(t is None or t.dtype is dt.float16 for t in tensors)


def _operands(rt: Runtime, x, weight, bias, half: bool):
    """x, the contiguous weight and bias: as they are for the f16-reading kernel, else float32."""
    if half:
        return x, contiguous(rt, weight), None if bias is None else contiguous(rt, bias)
    return f32(rt, x), contiguous(rt, f32(rt, weight)), _bias(rt, bias)


def _igemm_out(rt: Runtime, shape, half: bool, positions: int, op: str) -> WgpuTensor:
    """The fwd output: float16 stored in pairs where the pixel count is even, else float32."""
    return rt.empty(shape, dt.float16 if half and positions % 2 == 0 else dt.float32, op)


def conv(rt: Runtime, x, weight, bias, stride, padding, dilation, groups):
    if depthwise.supports(rt, x.shape, weight.shape, groups, stride, padding, dilation):
        return depthwise.depthwise_conv(rt, x, weight, bias, stride, padding, dilation)
    dtype = x.dtype
    n, c = x.shape[:2]
    spatial, kernel = x.shape[2:], weight.shape[2:]
    c_out = weight.shape[0]
    out = tuple(conv_output_size(*a) for a in zip(spatial, kernel, stride, padding, dilation))
    cg = c // groups
    pads = [lo for lo, _ in padding]
    direct = _direct(groups, cg)
    pointwise = not direct and c and \
        _pointwise(kernel, stride, pads + [hi for _, hi in padding], groups)
    half = not direct and not pointwise and _half(x, weight, bias)
    x, weight, b = _operands(rt, x, weight, bias, half)
    if direct:
        y = _conv_direct(rt, x, weight, b, stride, pads, dilation, groups, out)
    elif pointwise:
        y = _pointwise_matmul(rt, x, weight.view((c_out, c), (c, 1)), b)
    else:
        y = _igemm_out(rt, (n, c_out) + out, half, numel(out), "conv")
        if numel(y.shape):
            igemm_forward(rt, x, weight, b, y, stride, pads, dilation, groups)
    return narrow(rt, y, dtype)


def igemm_forward(rt: Runtime, x, weight, b, y, stride, pads, dilation, groups: int,
                  scales=None) -> None:
    """The implicit-GEMM forward conv into ``y`` (N, C_out, *out); ``pads``: the low pad per
    dim. ``scales = (w_scale, in_scale, read, key)``: int8 ``weight`` codes and ``x``'s codes
    (qconv / qconv_u8; the caller keeps the sum within float32's exact integers), the sums
    rescaled as they are stored; ``read(name)`` is the WGSL ``read_<name>`` giving them (a
    float32 ``x`` quantized as it loads, or int8/uint8 codes as they are), ``key`` names it
    in the pipeline's key; an int8/uint8 ``y`` (qconv_q, its positions a multiple of 4) gets
    the codes of ``scales[4]`` (wgpu/qcodes.py's Codes), four positions a word."""
    n, c = x.shape[:2]
    spatial, kernel, out = x.shape[2:], weight.shape[2:], y.shape[2:]
    c_out = weight.shape[0]
    cg, cog = c // groups, c_out // groups
    taps, positions = numel(kernel), numel(out)
    _igemm(rt, "fwd", x, weight, b, y, rows=cog, cols=n * positions, k=cg * taps,
           groups=groups, cin_g=cg, taps=taps, positions=positions, c_out=c_out,
           w_strides=(cog * cg * taps, cg * taps, taps),
           geometry=_geometry(spatial, out, kernel, stride, dilation, pads, x.strides[2:]),
           tile=_tile(rt, cog, n * positions, cg * taps, groups), scales=scales)


def _conv_direct(rt: Runtime, x, weight, b, stride, pads, dilation, groups, out):
    n, c_out = x.shape[0], weight.shape[0]
    kernel = weight.shape[2:]
    y = rt.empty((n, c_out) + out, dt.float32, "conv")
    total = numel(y.shape)
    if total:
        meta = [total, c_out, numel(out), numel(kernel), c_out // groups, weight.shape[1],
                len(kernel), x.offset, x.strides[0], x.strides[1], int(b is not None),
                *_geometry(x.shape[2:], out, kernel, stride, dilation, pads, x.strides[2:])]
        rt.engine.dispatch(nn_pipe(rt, "conv_direct", 3), meta,
                           [x.block, weight.block, (b if b is not None else weight).block,
                            y.block], rt.groups(total))
    return y


def conv_transpose(rt: Runtime, x, weight, bias, stride, padding, output_padding, dilation,
                   groups):
    if depthwise.supports_transpose(rt, x.shape, weight.shape, groups, stride, padding,
                                    output_padding, dilation):
        return depthwise.depthwise_conv_transpose(rt, x, weight, bias, stride, padding,
                                                  output_padding, dilation, groups)
    dtype = x.dtype
    n, c_in = x.shape[:2]
    spatial, kernel = x.shape[2:], weight.shape[2:]
    cog = weight.shape[1]
    c_out = cog * groups
    out = tuple(conv_transpose_output_size(*a)
                for a in zip(spatial, kernel, stride, padding, output_padding, dilation))
    taps, positions = numel(kernel), numel(out)
    cig = c_in // groups
    pointwise = c_in and _pointwise(kernel, stride, tuple(padding) + tuple(output_padding),
                                    groups)
    direct = not pointwise and (_direct(groups, cig) or cog <= _DIRECT_MAX_ROWS)
    half = not pointwise and not direct and _half(x, weight, bias)
    x, weight, b = _operands(rt, x, weight, bias, half)
    geometry = _geometry(spatial, out, kernel, stride, dilation, padding, x.strides[2:])
    if pointwise:
        return narrow(rt, _pointwise_matmul(rt, x, weight.view((cog, c_in), (1, cog)), b), dtype)
    y = _igemm_out(rt, (n, c_out) + out, half, positions, "conv_transpose")
    if not numel(y.shape):
        return narrow(rt, y, dtype)
    if direct:
        meta = [numel(y.shape), c_out, positions, taps, cog, cig, len(kernel), x.offset,
                x.strides[0], x.strides[1], int(b is not None), *geometry]
        rt.engine.dispatch(nn_pipe(rt, "conv_transpose_direct", 3), meta,
                           [x.block, weight.block, (b if b is not None else weight).block,
                            y.block], rt.groups(numel(y.shape)))
    else:
        # y[n, g·cog + r, pos] = Σ_(ci, tap) w[g·cig + ci, r, tap] · x[n, g·cig + ci, q(pos, tap)]
        _igemm(rt, "fwd", x, weight, b, y, rows=cog, cols=n * positions, k=cig * taps,
               groups=groups, cin_g=cig, taps=taps, positions=positions, c_out=c_out,
               w_strides=(cig * cog * taps, taps, cog * taps), geometry=geometry,
               tile=_tile(rt, cog, n * positions, cig * taps, groups), transposed=True)
    return narrow(rt, y, dtype)


def conv_weight_grad(rt: Runtime, x, grad, weight_shape, stride, padding, dilation, groups):
    if depthwise.supports_weight_grad(rt, x.shape, weight_shape, groups, stride, padding,
                                      dilation):
        return depthwise.depthwise_weight_grad(rt, x, grad, weight_shape, stride, padding,
                                               dilation)
    dtype = x.dtype
    cg = weight_shape[1]
    half = not _direct(groups, cg) and _half(x, grad)
    x, grad = (x, contiguous(rt, grad)) if half else (f32(rt, x), contiguous(rt, f32(rt, grad)))
    n, c_out = grad.shape[:2]
    out, kernel = grad.shape[2:], tuple(weight_shape[2:])
    cog = c_out // groups
    taps, positions = numel(kernel), numel(out)
    pads = [lo for lo, _ in padding]
    geometry = _geometry(x.shape[2:], out, kernel, stride, dilation, pads, x.strides[2:])
    y = rt.empty(tuple(weight_shape), dt.float32, "conv_weight_grad")
    total = numel(y.shape)
    if not total:
        return narrow(rt, y, dtype)
    if _direct(groups, cg):
        meta = [total, n, c_out, positions, taps, cog, cg, len(kernel), x.offset, x.strides[0],
                x.strides[1], *geometry]
        rt.engine.dispatch(nn_pipe(rt, "conv_weight_grad_direct", 2), meta,
                           [x.block, grad.block, y.block], rt.groups(total))
        return narrow(rt, y, dtype)
    cols, k = cg * taps, n * positions
    tile = compute.choose_tile(rt, cog, cols, groups)
    tiles = -(-cols // tile["BN"]) * -(-cog // tile["BM"]) * groups
    splits, kc = compute.split_k(tiles, k, tile["BK"])
    dest = y if splits == 1 else rt.empty((splits,) + tuple(weight_shape), dt.float32,
                                          "conv_weight_grad")
    _igemm(rt, "wgrad", x, grad, None, dest, rows=cog, cols=cols, k=k, groups=groups, cin_g=cg,
           taps=taps, positions=positions, c_out=c_out, w_strides=(0, 0, 0), geometry=geometry,
           tile=tile, splits=splits, kc=kc, o_ss=total)
    if splits > 1:
        y = compute.reduce(rt, dest, (0,), "sum")
        y = y.view(tuple(weight_shape), contiguous_strides(tuple(weight_shape)))
    return narrow(rt, y, dtype)
