"""Module ops on the wasm kernels: convolution and its gradients (``wasm/conv.c``: implicit
GEMM on the matmul micro-kernel, a direct SIMD depthwise kernel), pooling (``wasm/pool.c``),
softmax and the norms (``wasm/nn.c``), each one kernel call. 1-D and 2-D float32/float64
inputs run on the kernels (a 1-D op is a 2-D one of height 1); anything else takes the
contract's default body, which composes primitives.

>>> import ember
>>> import ember.nn.functional as F
>>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]], backend="wasm")
>>> F.conv2d(x, ember.ones((1, 1, 2, 2), backend="wasm")).tolist()
[[[[10.0]]]]
>>> F.softmax(ember.tensor([0.0, 0.0], backend="wasm"), dim=0).tolist()
[0.5, 0.5]
"""

from __future__ import annotations

from ... import dtype as dt
from ...contract import registry
from ...shape import conv_output_size, conv_transpose_output_size, numel, pool_geometry
from .tensor import WasmTensor

_FLOATS = (dt.float32, dt.float64)


def _plane(spatial, kernel, stride, before, dilation):
    """Spatial sizes and per-dim parameters as 2-D ones: a 1-D op is 2-D with height 1
    (size 1, kernel 1, stride 1, padding 0, dilation 1 along the added dim)."""
    if len(spatial) == 2:
        return tuple(map(tuple, (spatial, kernel, stride, before, dilation)))
    return (1, *spatial), (1, *kernel), (1, *stride), (0, *before), (1, *dilation)


def _addr(t: WasmTensor | None) -> int:
    """An optional operand's address for C (NULL for None)."""
    return 0 if t is None else t.ptr


def _on_kernels(x: WasmTensor, nd: int) -> bool:
    return x.dtype in _FLOATS and nd in (1, 2)


class WasmNN:
    """conv, conv_transpose, conv_weight_grad, max_pool(_grad), avg_pool, adaptive_avg_pool,
    softmax, log_softmax, layer_norm, batch_norm; ``self.rt`` is the :class:`Runtime`."""

    def _default(self, op: str, *args):
        return registry.REGISTRY[op].default(self, *args)

    def _dense(self, *ts: WasmTensor | None) -> list[WasmTensor | None]:
        """Contiguous versions of the optional operands (None stays None); the caller keeps
        them alive for the kernel call (a copy's memory goes with it)."""
        return [None if t is None else self.rt.contiguous(t) for t in ts]

    # ------------------------------------------------------------------ convolution
    def _conv_geometry(self, n, c, spatial, c_out, kernel, stride, before, dilation, groups,
                       out) -> None:
        """The 16 words of conv.c's cv_geom."""
        (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _plane(spatial, kernel, stride,
                                                                before, dilation)
        oh, ow = (1, *out) if len(out) == 1 else out
        self.rt.meta((n, c, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow))

    def conv(self, x, weight, bias, stride, padding, dilation, groups):
        nd = len(stride)
        if not _on_kernels(x, nd):
            return self._default("conv", x, weight, bias, stride, padding, dilation, groups)
        if any(lo < 0 for lo, _ in padding):
            # negative padding crops: a view of the kept part, padded by nothing before
            x = self.slice(x, ((0, x.shape[0], 1), (0, x.shape[1], 1)) + tuple(
                (max(-lo, 0), s, 1) for s, (lo, _) in zip(x.shape[2:], padding)))
            padding = tuple((max(lo, 0), hi) for lo, hi in padding)
        kernel = weight.shape[2:]
        out = tuple(conv_output_size(*a) for a in zip(x.shape[2:], kernel, stride, padding,
                                                      dilation))
        rt = self.rt
        y = rt.empty((x.shape[0], weight.shape[0], *out), x.dtype, "conv")
        if y.numel == 0:
            return y
        xc, wc, bc = self._dense(x, weight, bias)
        self._conv_geometry(x.shape[0], x.shape[1], x.shape[2:], weight.shape[0], kernel,
                            stride, tuple(lo for lo, _ in padding), dilation, groups, out)
        rt.call("em_conv", rt.code(x.dtype), xc.ptr, wc.ptr, _addr(bc), y.ptr)
        return y

    def conv_weight_grad(self, x, grad, weight_shape, stride, padding, dilation, groups):
        nd = len(stride)
        if not _on_kernels(x, nd) or any(lo < 0 for lo, _ in padding):
            return self._default("conv_weight_grad", x, grad, weight_shape, stride, padding,
                                 dilation, groups)
        rt = self.rt
        dw = rt.empty(tuple(weight_shape), x.dtype, "conv_weight_grad")
        if dw.numel == 0:
            return dw
        xc, gc = rt.contiguous(x), rt.contiguous(grad)
        self._conv_geometry(x.shape[0], x.shape[1], x.shape[2:], weight_shape[0],
                            weight_shape[2:], stride, tuple(lo for lo, _ in padding), dilation,
                            groups, grad.shape[2:])
        rt.call("em_conv_weight_grad", rt.code(x.dtype), xc.ptr, gc.ptr, dw.ptr)
        return dw

    def conv_transpose(self, x, weight, bias, stride, padding, output_padding, dilation,
                       groups):
        nd = len(stride)
        if not _on_kernels(x, nd):
            return self._default("conv_transpose", x, weight, bias, stride, padding,
                                 output_padding, dilation, groups)
        kernel = weight.shape[2:]
        out = tuple(conv_transpose_output_size(*a) for a in zip(
            x.shape[2:], kernel, stride, padding, output_padding, dilation))
        rt = self.rt
        c_out = weight.shape[1] * groups
        y = rt.empty((x.shape[0], c_out, *out), x.dtype, "conv_transpose")
        if y.numel == 0:
            return y
        xc, wc, bc = self._dense(x, weight, bias)
        self._conv_geometry(x.shape[0], x.shape[1], x.shape[2:], c_out, kernel, stride,
                            tuple(padding), dilation, groups, out)
        rt.call("em_conv_transpose", rt.code(x.dtype), xc.ptr, wc.ptr, _addr(bc), y.ptr)
        return y

    # ------------------------------------------------------------------ pooling
    def _pool_geometry(self, x, out, kernel, stride, before, dilation) -> None:
        """The 13 words of pool.c's pl_geom."""
        spatial, kernel, stride, before, dilation = _plane(x.shape[2:], kernel, stride, before,
                                                           dilation)
        oh, ow = (1, *out) if len(out) == 1 else out
        self.rt.meta((x.shape[0] * x.shape[1], *spatial, oh, ow, *kernel, *stride, *before,
                      *dilation))

    def max_pool(self, x, kernel, stride, padding, dilation, ceil_mode):
        # int8 / uint8 too: the codes between ember.quantize's layers
        codes = x.dtype in (dt.int8, dt.uint8) and len(kernel) in (1, 2)
        if not (codes or _on_kernels(x, len(kernel))):
            return self._default("max_pool", x, kernel, stride, padding, dilation, ceil_mode)
        out, _ = pool_geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
        rt = self.rt
        y = rt.empty(x.shape[:2] + tuple(out), x.dtype, "max_pool")
        if y.numel:
            xc = rt.contiguous(x)
            self._pool_geometry(x, out, kernel, stride, padding, dilation)
            rt.call("em_max_pool", rt.code(x.dtype), xc.ptr, y.ptr)
        return y

    def max_pool_grad(self, x, out, grad, kernel, stride, padding, dilation, ceil_mode):
        if not _on_kernels(x, len(kernel)):
            return self._default("max_pool_grad", x, out, grad, kernel, stride, padding,
                                 dilation, ceil_mode)
        rt = self.rt
        gx = rt.empty(x.shape, grad.dtype, "max_pool_grad")
        if gx.numel:
            xc, oc, gc = rt.contiguous(x), rt.contiguous(out), rt.contiguous(grad)
            self._pool_geometry(x, out.shape[2:], kernel, stride, padding, dilation)
            rt.call("em_max_pool_grad", rt.code(x.dtype), xc.ptr, oc.ptr, gc.ptr, gx.ptr)
        return gx

    def avg_pool(self, x, kernel, stride, padding, ceil_mode, count_include_pad,
                 divisor_override=None):
        if not _on_kernels(x, len(kernel)):
            return self._default("avg_pool", x, kernel, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override)
        ones = (1,) * len(kernel)
        out, _ = pool_geometry(x.shape[2:], kernel, stride, padding, ones, ceil_mode)
        rt = self.rt
        y = rt.empty(x.shape[:2] + tuple(out), x.dtype, "avg_pool")
        if y.numel:
            xc = rt.contiguous(x)
            self._pool_geometry(x, out, kernel, stride, padding, ones)
            rt.call("em_avg_pool", rt.code(x.dtype), xc.ptr, y.ptr, int(bool(count_include_pad)),
                    int(divisor_override or 0))
        return y

    def adaptive_avg_pool(self, x, output_size):
        if not _on_kernels(x, len(output_size)):
            return self._default("adaptive_avg_pool", x, output_size)
        rt = self.rt
        y = rt.empty(x.shape[:2] + tuple(output_size), x.dtype, "adaptive_avg_pool")
        if y.numel:
            xc = rt.contiguous(x)
            ones = (1,) * len(output_size)
            self._pool_geometry(x, tuple(output_size), ones, ones, (0,) * len(ones), ones)
            rt.call("em_adaptive_avg_pool", rt.code(x.dtype), xc.ptr, y.ptr)
        return y

    # ------------------------------------------------------------------ softmax and norms
    def _softmax(self, x, dim: int, log: bool):
        rt = self.rt
        y = rt.empty(x.shape, x.dtype, "log_softmax" if log else "softmax")
        if y.numel:
            xc = rt.contiguous(x)
            dim %= len(x.shape)
            rt.call("em_softmax", rt.code(x.dtype), xc.ptr, y.ptr, numel(x.shape[:dim]),
                    x.shape[dim], numel(x.shape[dim + 1:]), int(log))
        return y

    def softmax(self, x, dim):
        if x.dtype not in _FLOATS or not x.shape:
            return self._default("softmax", x, dim)
        return self._softmax(x, dim, False)

    def log_softmax(self, x, dim):
        if x.dtype not in _FLOATS or not x.shape:
            return self._default("log_softmax", x, dim)
        return self._softmax(x, dim, True)

    def layer_norm(self, x, normalized_ndim, weight, bias, eps):
        if x.dtype not in _FLOATS:
            return self._default("layer_norm", x, normalized_ndim, weight, bias, eps)
        rt = self.rt
        y = rt.empty(x.shape, x.dtype, "layer_norm")
        if y.numel:
            xc, wc, bc = self._dense(x, weight, bias)
            d = numel(x.shape[len(x.shape) - normalized_ndim:])
            rt.call("em_layer_norm", rt.code(x.dtype), xc.ptr, _addr(wc), _addr(bc), y.ptr,
                    x.numel // d, d, float(eps))
        return y

    def batch_norm(self, x, mean, var, weight, bias, eps):
        if x.dtype not in _FLOATS or len(x.shape) < 2:
            return self._default("batch_norm", x, mean, var, weight, bias, eps)
        rt = self.rt
        y = rt.empty(x.shape, x.dtype, "batch_norm")
        if y.numel:
            xc, mc, vc, wc, bc = self._dense(x, mean, var, weight, bias)
            rt.call("em_batch_norm", rt.code(x.dtype), xc.ptr, mc.ptr, vc.ptr, _addr(wc),
                    _addr(bc), y.ptr, x.shape[0], x.shape[1], numel(x.shape[2:]), float(eps))
        return y
