"""The quantized ops on wgpu (shaders/quant.wgsl): the float input quantized into int8 code
words (im2col in the same pass for a conv), an int8 GEMM with int32 sums — the built-in
``dot4I8Packed`` where the adapter has WGSL's ``packed_4x8_integer_dot_product``, else the
bytes unpacked in the kernel — rescaled with the bias as it is stored; depthwise convs run
one lane per output. float32 inputs (others take the contract's default body). Semantics:
:mod:`ember.contract.quantized` (WGSL's division is not correctly rounded: an input exactly
between two codes may round either way).

>>> import ember
>>> from ember.quantize.functional import qlinear
>>> x = ember.tensor([[1.0, -2.0]], backend="wgpu")
>>> w = ember.tensor([[3, 4]], dtype=ember.int8, backend="wgpu")
>>> one = ember.tensor([1.0], backend="wgpu")
>>> qlinear(x, w, one, None, ember.tensor([0.5], backend="wgpu")).tolist()
[[-5.0]]
"""

from __future__ import annotations

import weakref

from ... import dtype as dt
from ...contract import registry
from ...shape import conv_output_size
from .kernels import render
from .launch import Runtime, contiguous
from .primitive import WgpuTensor

_TILE = 32  # the gemm section's output tile (rows and columns)
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


def _pipe(rt: Runtime, section: str, n_buffers: int, dot: str = ""):
    access = ("read",) * n_buffers + ("read_write",)

    def build():
        return render(rt.lib.source("quant", section), DOT=dot), access

    return rt.lib.pipeline(("quant", section, dot), build)


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


class WgpuQuant:
    """``qlinear`` and ``qconv`` (a mixin of the wgpu backend); ``self.rt`` is the Runtime."""

    def qlinear(self, x, weight, w_scale, bias, in_scale):
        if x.dtype != dt.float32 or x.size == 0 or x.shape[-1] == 0:
            return registry.REGISTRY["qlinear"].default(self, x, weight, w_scale, bias, in_scale)
        rt = self.rt
        k, n = x.shape[-1], weight.shape[0]
        m = x.size // k
        x, w_scale, bias, in_scale = (_dense(rt, t) for t in (x, w_scale, bias, in_scale))
        words, k4 = _weight_words(rt, weight, n, k)
        codes = rt.empty((m * k4,), dt.int32, "qcodes")
        rt.engine.dispatch(_pipe(rt, "pack_rows", 3), [m, k, k4, x.offset],
                           [x.block, in_scale.block, codes.block], rt.groups(m * k4, 64))
        y = rt.empty(x.shape[:-1] + (n,), dt.float32, "qlinear")
        _gemm(rt, codes, m, k4, 1, words, n, w_scale, bias, in_scale, y, 1, n)
        return y

    def qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        args = (x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups)
        if x.dtype != dt.float32 or len(stride) != 2 or any(lo < 0 for lo, _ in padding):
            return registry.REGISTRY["qconv"].default(self, *args)
        rt = self.rt
        n, c, h, w = x.shape
        c_out, cg, kh, kw = weight.shape
        out = tuple(conv_output_size(*a) for a in zip((h, w), (kh, kw), stride, padding,
                                                      dilation))
        y = rt.empty((n, c_out) + out, dt.float32, "qconv")
        if y.size == 0:
            return y
        x, w_scale, bias, in_scale = (_dense(rt, t) for t in (x, w_scale, bias, in_scale))
        geo = [kh, kw, *stride, padding[0][0], padding[1][0], *dilation, *out]
        if groups == c == c_out:
            weight = _dense(rt, weight)
            meta = [n, c, h, w, *geo, x.offset, int(bias is not None), weight.offset]
            bufs = [x.block, weight.block, w_scale.block,
                    (bias if bias is not None else w_scale).block, in_scale.block, y.block]
            rt.engine.dispatch(_pipe(rt, "depthwise", 6), meta, bufs, rt.groups(y.size, 64))
            return y
        kg, positions = cg * kh * kw, out[0] * out[1]
        words, k4 = _weight_words(rt, weight, c_out, kg)
        np_ = n * positions
        codes = rt.empty((groups * np_ * k4,), dt.int32, "qpatches")
        meta = [groups, np_, k4, kg, c, h, w, cg, *geo, x.offset]
        rt.engine.dispatch(_pipe(rt, "pack_patches", 3), meta,
                           [x.block, in_scale.block, codes.block],
                           rt.groups(groups * np_ * k4, 64))
        _gemm(rt, codes, np_, k4, groups, words, c_out // groups, w_scale, bias, in_scale, y,
              positions, c_out)
        return y
