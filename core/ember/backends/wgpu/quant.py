"""The quantized ops on wgpu. Linear and 1×1 convolutions run the tuned float matmul
(shaders/matmul.wgsl) on int8 codes held in f32 — the int8 weight read byte by byte, the
float32 input quantized as its tiles load, the rescale and bias stored by its epilogue
(shaders/lib_quant.wgsl): one dispatch, the integer sum exact in the float accumulators
while K·127² < 2²⁴ (``_EXACT_K``); for longer K the kernel moves them into int32
accumulators every so many k steps (matmul.wgsl's FLUSH) and converts the total once. Depthwise convs run the tuned
depthwise kernel of shaders/depthwise.wgsl on codes the same way (the input quantized as it is
staged), and the other convolutions the implicit GEMM of shaders/conv_igemm.wgsl (the input
quantized as it loads, the sums rescaled as they are stored) while the sum over
C_in/groups·kh·kw is exact. Longer ones (shaders/quant.wgsl): im2col and quantization into
int8 code words in one pass, then an int8 GEMM with int32 sums — the built-in
``dot4I8Packed`` where the adapter has WGSL's ``packed_4x8_integer_dot_product``, else the
bytes unpacked in the kernel — rescaled with the bias as it is stored. (On the H200 the float
matmul on codes is 3.5× faster than that GEMM on EfficientNet's 1×1 convs:
benchmarks/RESULTS.md.) ``qlinear_u8`` / ``qconv_u8`` (unsigned input codes 0..255) take the
float paths with shorter exact sums (K·255·127 < 2²⁴; the matmul reads longer ones centred,
code − 128, adding 128 × the weight's sums back: float parts of up to K = 1032), else the
contract's default body.

Codes between layers (:mod:`.qcodes`): every path also reads int8/uint8 codes as its input
(packed four per u32 word, 4× fewer bytes than float32), and ``qlinear_q`` / ``qconv_q`` end
in codes: the matmul's epilogue, the implicit GEMM's store (positions a multiple of 4) and
the depthwise kernel (its store, or through workgroup memory: :mod:`.depthwise`) requantize
and write whole u32 words, one dispatch per layer. Their rows (a Linear's outputs, a conv's
planes) are padded to whole words (a 7×7 plane takes 52 bytes), so the codes are a strided
view the next layer reads as it is. The depthwise conv on planes whose words straddle its
tiles, the integer GEMM and the implicit GEMM at other sizes requantize their float result
in one more elementwise pass.
Inputs of other dtypes take the contract's default body.
Semantics: :mod:`ember.contract.quantized` (WGSL's division is not correctly rounded: an
input exactly between two codes may round either way).

>>> import ember
>>> from ember.quantize.functional import qlinear
>>> x = ember.tensor([[1.0, -2.0]], backend="wgpu")
>>> w = ember.tensor([[3, 4]], dtype=ember.int8, backend="wgpu")
>>> one = ember.tensor([1.0], backend="wgpu")
>>> qlinear(x, w, one, None, ember.tensor([0.5], backend="wgpu")).tolist()
[[-5.0]]
>>> y = qlinear(x, w, one, None, one, out_scale=ember.tensor([2.0], backend="wgpu"),
...             out_range=(-127, 127))
>>> y.dtype.name, y.tolist()  # -5 / 2 rounds away from zero
('int8', [[-3]])
>>> qlinear(y, w[:, :1], one, None, one).tolist()  # codes in: used as they are
[[-9.0]]
"""

from __future__ import annotations

import weakref

from ... import dtype as dt
from ...contract import registry
from ...contract.quantized import CODE_DTYPES, codes_dtype
from ...shape import conv_output_size, numel
from . import compute, conv, depthwise, qcodes, tuning
from .kernels import render
from .launch import Runtime, contiguous
from .primitive import WgpuTensor, collapse

_TILE = 32  # the gemm section's output tile (rows and columns)
# the longest sum of code products float32 holds exactly: K·127² < 2²⁴ (unsigned input codes:
# K·255·127 < 2²⁴); the matmul moves longer sums into int32 after at most this much of K
_EXACT_K = {False: 1040, True: 518}
_PROBE = """@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
@compute @workgroup_size(1) fn main() { out[0] = dot4I8Packed(prm[0], prm[1]); }
"""
_DOT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Runtime -> its dot


def dot_mode(rt: Runtime) -> str:
    """``"dot4I8Packed"`` when the adapter compiles WGSL's packed integer dot product (the
    ``packed_4x8_integer_dot_product`` language feature), else ``"dot4_unpacked"``."""
    if rt not in _DOT:
        try:
            rt.adapter.create_pipeline(_PROBE, ("read", "read_write"))
            _DOT[rt] = "dot4I8Packed"
        except Exception:  # the feature is missing: the shader does not compile
            _DOT[rt] = "dot4_unpacked"
    return _DOT[rt]


def _pipe(rt: Runtime, section: str, n_buffers: int, dot: str = "", read: str = ""):
    """``read``: pack_patches' input read (a lib_quant section: read_quantized, read_codes,
    read_codes_u8)."""
    access = ("read",) * n_buffers + ("read_write",)

    def build():
        code = rt.lib.source("quant", section) + rt.lib.snippet("lib_quant", "code")
        if read:
            code += rt.lib.snippet("lib_quant", read, NAME="x", CODE="code")
        return render(code, DOT=dot, X_T="f32" if read == "read_quantized" else "u32"), access

    return rt.lib.pipeline(("quant", section, dot, read), build)


def _dense(rt: Runtime, t: WgpuTensor | None) -> WgpuTensor | None:
    return t if t is None or t.is_contiguous() else contiguous(rt, t)


def _weight_words(rt: Runtime, w: WgpuTensor, rows: int, k: int) -> tuple[WgpuTensor, int]:
    """The int8 weight as (rows, K4) code words (as stored when rows are word-aligned)."""
    w = _dense(rt, w)
    k4 = -(-k // 4)
    if k % 4 == 0 and w.offset == 0:  # rows start on words: the gemm reads them as they are
        return w, k4
    out = rt.empty((rows * k4,), dt.int32, "qweight")
    rt.engine.dispatch(_pipe(rt, "pack_weight", 2), [rows, k, k4, w.offset],
                       [w.block, out.block], rt.groups(rows * k4, 64))
    return out, k4


def _gemm(rt: Runtime, codes, m: int, k4: int, groups: int, words, nc: int, w_scale, bias,
          in_scale, out: WgpuTensor, positions: int, c_out: int) -> None:
    dot = dot_mode(rt)
    meta = [m, nc, k4, positions, c_out, int(bias is not None)]
    bufs = [codes.block, words.block, w_scale.block, (bias if bias is not None else w_scale).block,
            in_scale.block, out.block]
    rt.engine.dispatch(_pipe(rt, "gemm", 6, dot), meta, bufs,
                       (-(-nc // _TILE), -(-m // _TILE), groups))


# the longest exact float32 sum of products of codes within ±128 (int8 codes may hold -128;
# the matmul's long sums of unsigned codes read them less 128 and add 128 times the weight's
# sums back): K·128·127 < 2²⁴
_CENTRED_K = 1032


def _exact_k(x: WgpuTensor, unsigned: bool) -> int:
    """The longest exact float32 sum of code products for the input ``x`` (not centred)."""
    if qcodes.wide(x, unsigned):
        return _EXACT_K[True]
    return _CENTRED_K if x.dtype is dt.int8 else _EXACT_K[False]


def _float_gemm(rt: Runtime, a, b, sa: int, sb: int, shape: tuple, codes: str, per_row: bool,
                w_scale, bias, in_scale, src: WgpuTensor, unsigned: bool,
                out_codes: qcodes.Codes | None = None) -> WgpuTensor:
    """``a @ b`` per batch entry as a ``shape`` tensor, one operand the int8 weight codes
    (``codes``: ``"a"`` or ``"b"``), the other the input ``src`` (float32 quantized as it
    loads, ``unsigned``: to 0..255; or int8/uint8 codes read as they are), rescaled by the
    channel of each row (``per_row``) or column, plus its bias: the tuned float matmul, one
    dispatch, the sum exact; ``out_codes``: ending in codes (a word of four columns per
    store, the rows padded to whole words: :func:`.qcodes.padded`). Unsigned codes past
    ``_EXACT_K`` are read centred (``_CENTRED_K``). For k past the exact float32 sums, the
    kernel moves its float sums into int32 ones every ``limit`` of k (at most) and rescales
    their total converted once, as the contract's ``float(acc)``: still one dispatch."""
    n, k = a.shape[-2:]
    m = b.shape[-1]
    batch = a.shape[0]
    ch = "{r}" if per_row else "{col}"
    quantized = "b" if codes == "a" else "a"
    wide = qcodes.wide(src, unsigned)
    centred = wide and k > _EXACT_K[True]
    limit = _CENTRED_K if centred else _exact_k(src, unsigned)
    # past the limit: int32 totals (the centring's 128 × the weight sums added in int32 too)
    flush = (limit, 128 if centred else 0) if k > limit else ()
    acc = "({acc} + 128.0 * {ws})" if centred and not flush else "{acc}"

    def reads():
        return "\n".join([rt.lib.snippet("lib_quant", "code"),
                          rt.lib.snippet("lib_quant", "read_codes", NAME=codes),
                          qcodes.reader(rt, quantized, src, unsigned, centred)])

    def bindings():
        text = (rt.lib.snippet("lib_quant", "scales", W_AT=4, IN_AT=6)
                + rt.lib.snippet("lib_quant", "bias", AT=5))
        if out_codes is not None:
            text += (rt.lib.snippet("lib_quant", "requant", OUT_AT=7, LO_AT=18)
                     + rt.lib.snippet("lib_quant", "requant_matmul"))
        return text

    x_t = "f32" if src.dtype is dt.float32 else "u32"
    types = ("u32", x_t) if codes == "a" else (x_t, "u32")
    blocks = [w_scale.block, bias.block, in_scale.block]
    extra, meta = [], []
    if out_codes is None:
        value = f"{acc} * (q_in_scale[0] * q_w_scale[{ch}]) + q_bias[{ch}]"
    else:
        value = f"q_row({acc}, {{r}})" if per_row else f"q_cols({acc}, {{col}}, m - 1u)"
        extra, meta = [out_codes.scale.block], [out_codes.lo, out_codes.hi]
    key = ("int8", codes, per_row, qcodes.source_key(src, unsigned), centred,
           None if out_codes is None else out_codes.dtype.name)
    epilogue = (key, bindings, value, blocks + extra, ("read",) * (3 + len(extra)), meta)
    sums = codes if centred else ""

    def launch(tile):
        if out_codes is None:
            out = rt.empty(shape, dt.float32, "qmatmul")
            view = (0, n * m, m)
        else:
            lead = 2 if per_row else len(shape) - 1
            out, row = qcodes.padded(rt, shape, lead, out_codes.dtype)
            view = (0, n * row, row)
        compute.matmul_dispatch(rt, a, b, sa, sb, out, view, 1, k, 0, tile, epilogue,
                                (reads, *types), sums, flush)
        return out

    def options():  # the candidate tiles, without split-k (one dispatch, exact sums)
        return {name: t for name, (t, splits, _) in
                compute._options(rt, n, m, k, batch).items() if splits == 1}

    kind = "uint8" if wide else "int8"
    if src.dtype is not dt.float32 or out_codes is not None:  # their own timings
        out_name = out_codes.dtype.name if out_codes else "f32"
        kind += f">{qcodes.source_key(src, unsigned)}>{out_name}"
    chosen = tuning.TUNER.choose(rt, (n, m, k, batch), kind, options, launch)
    return launch(chosen or compute.choose_tile(rt, n, m, batch))


def _row_stride(rt: Runtime, x: WgpuTensor) -> tuple[WgpuTensor, int]:
    """``(x, stride between its rows)`` of an ``(..., K)`` input seen as (rows, K) — as it is
    where its rows are contiguous and evenly spaced (:func:`.qcodes.padded` codes are), else
    a contiguous copy."""
    k = x.shape[-1]
    _, (lead,) = collapse(x.shape[:-1], x.strides[:-1])
    if (x.strides[-1] != 1 and k > 1) or len(lead) > 1:
        x = contiguous(rt, x)
        return x, k
    return x, lead[0] if lead else k


def _plane_strides(rt: Runtime, x: WgpuTensor) -> tuple[WgpuTensor, int, int]:
    """``(x, image stride, channel stride)`` of an (N, C, H, W) input whose planes are each
    contiguous (:func:`.qcodes.padded` codes are), else of a contiguous copy."""
    if x.shape[2] * x.shape[3] > 1 and tuple(x.strides[2:]) != (x.shape[3], 1):
        x = contiguous(rt, x)
    return x, x.strides[0], x.strides[1]


_INPUTS = (dt.float32, *CODE_DTYPES)
# pack_patches' read of the input: a float32 quantized, or int8 / uint8 codes as they are
_X_READ = {dt.float32: "read_quantized", dt.int8: "read_codes", dt.uint8: "read_codes_u8"}


class WgpuQuant:
    """``qlinear``, ``qconv``, their unsigned-input ``_u8`` forms and the codes-out
    ``qlinear_q``/``qconv_q`` (a mixin of the wgpu backend); ``self.rt`` is the Runtime.
    Inputs are float32 or int8/uint8 codes; other dtypes, and the cases no kernel here
    takes, run the contract's default body."""

    def qlinear(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear("qlinear", (x, weight, w_scale, bias, in_scale), False)

    def qlinear_u8(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear("qlinear_u8", (x, weight, w_scale, bias, in_scale), True)

    def qlinear_q(self, x, weight, w_scale, bias, in_scale, out_scale, unsigned, out_lo, out_hi):
        return self._qlinear("qlinear_q", (x, weight, w_scale, bias, in_scale), bool(unsigned),
                             (out_scale, unsigned, out_lo, out_hi))

    def qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        return self._qconv("qconv", (x, weight, w_scale, bias, in_scale),
                           (stride, padding, dilation, groups), False)

    def qconv_u8(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        return self._qconv("qconv_u8", (x, weight, w_scale, bias, in_scale),
                           (stride, padding, dilation, groups), True)

    def qconv_q(self, x, weight, w_scale, bias, in_scale, out_scale, stride, padding, dilation,
                groups, unsigned, out_lo, out_hi):
        return self._qconv("qconv_q", (x, weight, w_scale, bias, in_scale),
                           (stride, padding, dilation, groups), bool(unsigned),
                           (out_scale, unsigned, out_lo, out_hi))

    def _codes(self, q_args: tuple) -> qcodes.Codes | None:
        """The :class:`.qcodes.Codes` of ``(out_scale, unsigned, out_lo, out_hi)``; None for
        no ``q_args`` (float results)."""
        if not q_args:
            return None
        scale, _, lo, hi = q_args
        return qcodes.Codes(_dense(self.rt, scale), lo, hi, codes_dtype(lo, hi))

    def _reader(self, x: WgpuTensor, unsigned: bool):
        """``read(name)``: the WGSL reading ``x``'s codes as ``read_<name>``
        (:func:`.qcodes.reader`)."""
        return lambda name: qcodes.reader(self.rt, name, x, unsigned)

    def _qlinear(self, op: str, args: tuple, unsigned: bool, q_args: tuple = ()):
        x, weight, w_scale, bias, in_scale = args
        if x.dtype not in _INPUTS or w_scale.dtype != dt.float32 or x.size == 0 or \
                x.shape[-1] == 0 or len(x.shape) < 2:
            return registry.REGISTRY[op].default(self, *args, *q_args)
        rt = self.rt
        k, n = x.shape[-1], weight.shape[0]
        m = x.size // k
        if bias is None:
            bias = self.full((n,), 0.0, dt.float32)
        weight, w_scale, bias, in_scale = (_dense(rt, t) for t in (weight, w_scale, bias,
                                                                    in_scale))
        x, sr = _row_stride(rt, x)
        return _float_gemm(rt, x.view((1, m, k), (0, sr, 1)), weight.view((1, k, n), (0, 1, k)),
                           0, 0, x.shape[:-1] + (n,), "b", False, w_scale, bias, in_scale, x,
                           unsigned, self._codes(q_args))

    def _qconv(self, op: str, args: tuple, geometry: tuple, unsigned: bool,
               q_args: tuple = ()):
        stride, padding, dilation, groups = geometry
        x, weight, w_scale, bias, in_scale = args

        def default():  # the op's arguments in the registry's order: out_scale before geometry
            return registry.REGISTRY[op].default(self, *args, *q_args[:1], *geometry,
                                                 *q_args[1:])

        if x.dtype not in _INPUTS or w_scale.dtype != dt.float32 or len(stride) != 2 or \
                any(lo < 0 for lo, _ in padding):
            return default()
        rt = self.rt
        out_codes = self._codes(q_args)
        n, c, h, w = x.shape
        c_out, cg, kh, kw = weight.shape
        out = tuple(conv_output_size(*a) for a in zip((h, w), (kh, kw), stride, padding,
                                                      dilation))
        shape = (n, c_out) + out
        if numel(shape) == 0:
            return rt.empty(shape, out_codes.dtype if out_codes else dt.float32, op)
        if bias is None:
            bias = self.full((c_out,), 0.0, dt.float32)
        w_scale, bias, in_scale = (_dense(rt, t) for t in (w_scale, bias, in_scale))
        pads = [p for pair in padding for p in pair]
        wide = qcodes.wide(x, unsigned)
        if conv._pointwise((kh, kw), stride, pads, groups):
            x, s_n, s_c = _plane_strides(rt, x)
            weight = _dense(rt, weight)
            return _float_gemm(rt, weight.view((n, c_out, c), (0, c, 1)),
                               x.view((n, c, h * w), (s_n, s_c, 1)), 0, s_n, shape, "a", True,
                               w_scale, bias, in_scale, x, unsigned, out_codes)
        if groups == c == c_out and depthwise.supports(rt, x.shape, weight.shape, groups,
                                                        stride, padding, dilation):
            return depthwise.depthwise_conv(
                rt, x, weight, bias, stride, padding, dilation,
                (w_scale, in_scale, self._reader(x, unsigned), qcodes.source_key(x, unsigned),
                 out_codes))
        if cg * kh * kw <= _exact_k(x, unsigned):
            # codes stored by the kernel where four positions always share a word
            direct = out_codes is not None and numel(out) % 4 == 0
            y = rt.empty(shape, out_codes.dtype if direct else dt.float32, "qconv")
            conv.igemm_forward(rt, x, _dense(rt, weight), bias, y, stride, pads[::2], dilation,
                               groups, (w_scale, in_scale, self._reader(x, unsigned),
                                        qcodes.source_key(x, unsigned), out_codes))
            if out_codes is None or direct:
                return y
            return qcodes.requant_map(rt, y, out_codes)
        if wide:
            return default()
        y = rt.empty(shape, dt.float32, "qconv")
        geo = [kh, kw, *stride, padding[0][0], padding[1][0], *dilation, *out]
        kg, positions = cg * kh * kw, out[0] * out[1]
        words, k4 = _weight_words(rt, weight, c_out, kg)
        np_ = n * positions
        codes = rt.empty((groups * np_ * k4,), dt.int32, "qpatches")
        meta = [groups, np_, k4, kg, c, h, w, cg, *geo, x.offset, *x.strides]
        read = _X_READ[x.dtype]
        rt.engine.dispatch(_pipe(rt, "pack_patches", 3, read=read), meta,
                           [x.block, in_scale.block, codes.block],
                           rt.groups(groups * np_ * k4, 64))
        _gemm(rt, codes, np_, k4, groups, words, c_out // groups, w_scale, bias, in_scale, y,
              positions, c_out)
        return y if out_codes is None else qcodes.requant_map(rt, y, out_codes)
