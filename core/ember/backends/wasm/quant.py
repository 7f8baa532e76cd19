"""The quantized ops on the wasm kernels (``wasm/quant.c``): the input quantized to int8 in
SIMD, int8 x int8 products summed in int32 (``em_gemm_i8_i32``, a direct kernel for
depthwise), rescaled with the bias in the same call. float32 inputs; others take the
contract's default body. Semantics: :mod:`ember.contract.quantized`.

>>> import ember
>>> from ember.quantize.functional import qlinear
>>> x = ember.tensor([[1.0, -2.0]], backend="wasm")
>>> w = ember.tensor([[3, 4]], dtype=ember.int8, backend="wasm")
>>> one = ember.tensor([1.0], backend="wasm")
>>> qlinear(x, w, one, None, ember.tensor([0.5], backend="wasm")).tolist()
[[-5.0]]
"""

from __future__ import annotations

from ... import dtype as dt
from ...contract import registry
from ...shape import conv_output_size


def _addr(t) -> int:
    return 0 if t is None else t.ptr


class WasmQuant:
    """``qlinear``, ``qconv`` and their unsigned twins ``*_u8`` (a mixin of the wasm backend);
    ``self.rt`` is the Runtime."""

    def qlinear(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear("qlinear", x, weight, w_scale, bias, in_scale)

    def qlinear_u8(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear("qlinear_u8", x, weight, w_scale, bias, in_scale)

    def qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        return self._qconv("qconv", x, weight, w_scale, bias, in_scale, stride, padding,
                           dilation, groups)

    def qconv_u8(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        return self._qconv("qconv_u8", x, weight, w_scale, bias, in_scale, stride, padding,
                           dilation, groups)

    def _qlinear(self, op, x, weight, w_scale, bias, in_scale):
        if x.dtype != dt.float32:
            return registry.REGISTRY[op].default(self, x, weight, w_scale, bias, in_scale)
        rt = self.rt
        k, n = x.shape[-1], weight.shape[0]
        m = x.numel // k if k else 0
        y = rt.empty(x.shape[:-1] + (n,), x.dtype, "qlinear")
        if y.numel == 0 or k == 0:
            return registry.REGISTRY[op].default(self, x, weight, w_scale, bias, in_scale)
        xc, wc, sc, bc, ic = self._dense(x, weight, w_scale, bias, in_scale)
        rt.call("em_qlinear", xc.ptr, wc.ptr, sc.ptr, _addr(bc), ic.ptr, y.ptr, m, k, n,
                int(op.endswith("_u8")))
        return y

    def _qconv(self, op, x, weight, w_scale, bias, in_scale, stride, padding, dilation,
               groups):
        args = (x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups)
        if x.dtype != dt.float32 or len(stride) != 2 or any(lo < 0 for lo, _ in padding):
            return registry.REGISTRY[op].default(self, *args)
        kernel = weight.shape[2:]
        out = tuple(conv_output_size(*a) for a in zip(x.shape[2:], kernel, stride, padding,
                                                      dilation))
        rt = self.rt
        y = rt.empty((x.shape[0], weight.shape[0], *out), x.dtype, "qconv")
        if y.numel == 0:
            return y
        xc, wc, sc, bc, ic = self._dense(x, weight, w_scale, bias, in_scale)
        self._conv_geometry(x.shape[0], x.shape[1], x.shape[2:], weight.shape[0], kernel,
                            stride, tuple(lo for lo, _ in padding), dilation, groups, out)
        rt.call("em_qconv", xc.ptr, wc.ptr, sc.ptr, _addr(bc), ic.ptr, y.ptr,
                int(op.endswith("_u8")))
        return y
