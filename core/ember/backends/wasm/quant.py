"""The quantized ops on the wasm kernels (``wasm/quant.c``, ``wasm/quant_dw.c``): int8 x int8
products summed in int32 (``em_gemm_i8_i32``, a direct kernel for depthwise, a pair GEMM for
other convs), one call per layer. The input is float32 (quantized in SIMD on the way in) or
int8/uint8 codes from the layer before (read as they are); the output is float32 rescaled
with the bias, or, for ``qlinear_q``/``qconv_q``, codes at the next layer's scale (the convs
requantize from the registers that hold the sums). float32 scales; anything else takes the
contract's default body. Semantics: :mod:`ember.contract.quantized`.

>>> import ember
>>> from ember.quantize.functional import qlinear
>>> x = ember.tensor([[1.0, -2.0]], backend="wasm")
>>> w = ember.tensor([[3, 4]], dtype=ember.int8, backend="wasm")
>>> one = ember.tensor([1.0], backend="wasm")
>>> qlinear(x, w, one, None, ember.tensor([0.5], backend="wasm")).tolist()
[[-5.0]]
>>> codes = ember.tensor([[2, 4]], dtype=ember.uint8, backend="wasm")  # x as codes
>>> y = qlinear(codes, w, one, None, one, out_scale=ember.tensor([4.0], backend="wasm"),
...             out_range=(0, 6))
>>> y.tolist(), y.dtype.name  # (2*3 + 4*4) / 4 = 5.5 rounds away from zero
([[6]], 'uint8')
"""

from __future__ import annotations

from ... import dtype as dt
from ...contract import registry
from ...contract.quantized import CODE_DTYPES, codes_dtype
from ...shape import conv_output_size
from .nn import _addr


def _on_kernels(x, w_scale, in_scale, out_scale) -> bool:
    """float32 or codes in, float32 scales (float64 ones take the default body)."""
    scales = (w_scale, in_scale) + (() if out_scale is None else (out_scale,))
    return (x.dtype in CODE_DTYPES or x.dtype == dt.float32) and all(
        s.dtype == dt.float32 for s in scales)


class WasmQuant:
    """``qlinear``, ``qconv``, their unsigned twins ``*_u8`` and the code-out ``*_q`` (a mixin
    of the wasm backend); ``self.rt`` is the Runtime."""

    def qlinear(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear("qlinear", (x, weight, w_scale, bias, in_scale), False, None)

    def qlinear_u8(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear("qlinear_u8", (x, weight, w_scale, bias, in_scale), True, None)

    def qlinear_q(self, x, weight, w_scale, bias, in_scale, out_scale, unsigned, out_lo,
                  out_hi):
        return self._qlinear("qlinear_q", (x, weight, w_scale, bias, in_scale, out_scale,
                                           unsigned, out_lo, out_hi),
                             unsigned, (out_scale, out_lo, out_hi))

    def qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        geometry = (stride, padding, dilation, groups)
        return self._qconv("qconv", (x, weight, w_scale, bias, in_scale, *geometry), geometry,
                           False, None)

    def qconv_u8(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        geometry = (stride, padding, dilation, groups)
        return self._qconv("qconv_u8", (x, weight, w_scale, bias, in_scale, *geometry),
                           geometry, True, None)

    def qconv_q(self, x, weight, w_scale, bias, in_scale, out_scale, stride, padding, dilation,
                groups, unsigned, out_lo, out_hi):
        geometry = (stride, padding, dilation, groups)
        return self._qconv("qconv_q", (x, weight, w_scale, bias, in_scale, out_scale, *geometry,
                                       unsigned, out_lo, out_hi),
                           geometry, unsigned, (out_scale, out_lo, out_hi))

    def _q_operands(self, x, unsigned: bool, codes_out, w_scale):
        """The output dtype and the kernel's trailing words: out_scale's address (0: float32
        out), whether x holds codes, whether they are unsigned, and the output clamp."""
        codes = x.dtype in CODE_DTYPES
        u = x.dtype == dt.uint8 if codes else bool(unsigned)
        if codes_out is None:
            return w_scale.dtype, None, (int(codes), int(u), 0, 0)
        out_scale, lo, hi = codes_out
        return codes_dtype(lo, hi), out_scale, (int(codes), int(u), int(lo), int(hi))

    def _qlinear(self, op, args, unsigned: bool, codes_out):
        x, weight, w_scale, bias, in_scale = args[:5]
        out_scale = None if codes_out is None else codes_out[0]
        k, n = x.shape[-1], weight.shape[0]
        m = x.numel // k if k else 0
        if not _on_kernels(x, w_scale, in_scale, out_scale) or m * n == 0 or k == 0:
            return registry.REGISTRY[op].default(self, *args)
        ydt, out_scale, words = self._q_operands(x, unsigned, codes_out, w_scale)
        y = self.rt.empty(x.shape[:-1] + (n,), ydt, op)
        xc, wc, sc, bc, ic, oc = self._dense(x, weight, w_scale, bias, in_scale, out_scale)
        self.rt.call("em_qlinear", xc.ptr, wc.ptr, sc.ptr, _addr(bc), ic.ptr, _addr(oc), y.ptr,
                     m, k, n, *words)
        return y

    def _qconv(self, op, args, geometry, unsigned: bool, codes_out):
        x, weight, w_scale, bias, in_scale = args[:5]
        out_scale = None if codes_out is None else codes_out[0]
        stride, padding, dilation, groups = geometry
        if (not _on_kernels(x, w_scale, in_scale, out_scale) or len(stride) != 2
                or any(lo < 0 for lo, _ in padding)):
            return registry.REGISTRY[op].default(self, *args)
        kernel = weight.shape[2:]
        out = tuple(conv_output_size(*a) for a in zip(x.shape[2:], kernel, stride, padding,
                                                      dilation))
        ydt, out_scale, words = self._q_operands(x, unsigned, codes_out, w_scale)
        y = self.rt.empty((x.shape[0], weight.shape[0], *out), ydt, op)
        if y.numel == 0:
            return y
        xc, wc, sc, bc, ic, oc = self._dense(x, weight, w_scale, bias, in_scale, out_scale)
        self._conv_geometry(x.shape[0], x.shape[1], x.shape[2:], weight.shape[0], kernel,
                            stride, tuple(lo for lo, _ in padding), dilation, groups, out)
        self.rt.call("em_qconv", xc.ptr, wc.ptr, sc.ptr, _addr(bc), ic.ptr, _addr(oc), y.ptr,
                     *words)
        return y
