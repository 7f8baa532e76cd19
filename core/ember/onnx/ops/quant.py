"""Quantization: (De)QuantizeLinear, DynamicQuantizeLinear and the integer conv/matmul ops.

Integer arithmetic runs in the widest float the backend holds — float64 (exact for 8-bit
products summed over < 2**37 terms), or float32 on backends without it such as wgpu (exact up
to 2**24) — so the float conv kernels serve ConvInteger/QLinearConv on every backend.
"""

from __future__ import annotations

import ember

from .._lowbit import INT_RANGE, round_to
from .._types import onnx_dtype
from . import op
from ._util import axis as _axis
from .nn_conv import conv


def _wide(t):
    """The widest float dtype ``t``'s backend holds."""
    return ember.float64 if ember.float64 in t.backend.caps.dtypes else ember.float32


def _per_axis(v, x, axis, block_size=0):
    """Broadcast a scale/zero point along ``axis`` (scalar, per-axis 1-D or blocked)."""
    if v.ndim == 0 or v.numel() == 1 and v.ndim <= 1:
        return v.reshape([])
    a = _axis(axis, x.ndim)
    if v.ndim == 1:
        shape = [1] * x.ndim
        shape[a] = -1
        return v.reshape(shape)
    if block_size:
        idx = ember.arange(x.shape[a], dtype=ember.int64, backend=x.backend) // block_size
        return ember.index_select(v, a, idx)
    return v


def _saturate(y, dtype):
    if dtype.is_float:
        return y.astype(dtype)
    lo, hi = dtype.int_range
    return ember.clamp(y, lo, hi).astype(dtype)


def quantize(x, scale, zp, dtype):
    # divide in the scale's precision (float32 usually), as ONNX's reference does
    work = ember.float64 if ember.float64 in (x.dtype, scale.dtype) else ember.float32
    y = ember.round(x.astype(work) / scale.astype(work)).astype(_wide(x))
    if zp is not None:
        y = y + zp.astype(_wide(x))
    return _saturate(y, dtype)


@op("QuantizeLinear")
def quantize_linear(ctx, x, y_scale, y_zero_point=None, axis=1, block_size=0, saturate=1,
                    output_dtype=0, precision=0):
    dtype = (onnx_dtype(output_dtype) if output_dtype else y_zero_point.dtype
             if y_zero_point is not None else ember.uint8)
    s = _per_axis(y_scale, x, axis, block_size)
    zp = _per_axis(y_zero_point, x, axis, block_size) if y_zero_point is not None else None
    if output_dtype in INT_RANGE:  # int16/uint16/int4/int2...: stored widened
        lo, hi = INT_RANGE[output_dtype]
        y = quantize(x, s, zp, ember.float64 if ember.float64 in x.backend.caps.dtypes
                     else ember.float32)
        return ember.clamp(y, lo, hi).astype(dtype)
    if dtype.is_float:  # float8/float4: scale, shift, then round onto the type's grid
        y = x.astype(ember.float32) / s.astype(ember.float32)
        y = y + zp.astype(ember.float32) if zp is not None else y
        return round_to(y, output_dtype, bool(saturate))
    return quantize(x, s, zp, dtype)


@op("DequantizeLinear")
def dequantize_linear(ctx, x, x_scale, x_zero_point=None, axis=1, block_size=0,
                      output_dtype=0):
    s = _per_axis(x_scale, x, axis, block_size)
    wide = _wide(x)
    y = x.astype(wide)
    if x_zero_point is not None:
        y = y - _per_axis(x_zero_point, x, axis, block_size).astype(wide)
    return (y * s.astype(wide)).astype(x_scale.dtype)


@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx, x):
    zero = ember.zeros([], dtype=x.dtype, backend=ctx.backend)
    hi = ember.maximum(ember.amax(x), zero)
    lo = ember.minimum(ember.amin(x), zero)
    scale = ((hi - lo) / 255).astype(ember.float32)
    zp = _saturate(ember.round(-lo.astype(ember.float32) / scale), ember.uint8)
    return quantize(x, scale, zp, ember.uint8), scale, zp


def _centered(x, zp, rowwise=False, dtype=None):
    wide = dtype or _wide(x)
    y = x.astype(wide)
    if zp is None:
        return y
    z = zp.astype(wide)
    if rowwise and z.ndim == 1 and z.numel() > 1:
        z = z.reshape(-1, 1)
    return y - z


def _centered_bound(x, zp) -> int:
    """The largest ``|x - zp|`` that ``x``'s integer dtype allows (``|x|`` without ``zp``)."""
    lo, hi = x.dtype.int_range
    return hi - lo if zp is not None else max(-lo, hi)


def integer_matmul(a, b, most: int):
    """``a @ b`` of integer-valued float32 tensors through float32 BLAS, exactly: the reduction is
    split into chunks short enough that float32 sums them without rounding (< 2**24, with each
    product at most ``most`` in size), and the chunks are added as int32 (float32 matmul is
    about twice as fast as float64). The bound comes from the dtypes, not the values, so a
    traced call (``ember.jit``, ``ember.onnx.export``) splits the same way at every replay."""
    k = a.shape[-1]
    step = max(2**24 // max(most, 1), 1)
    if k <= step:
        return ember.matmul(a, b).astype(ember.int32)
    out = None
    for lo in range(0, k, step):
        part = ember.matmul(a[..., lo:lo + step], b[..., lo:lo + step, :]).astype(ember.int32)
        out = part if out is None else out + part
    return out


@op("MatMulInteger")
def matmul_integer(ctx, a, b, a_zero_point=None, b_zero_point=None):
    if a.ndim < 2 or b.ndim < 2:  # vector operands: numpy's matmul rules, in float64
        y = ember.matmul(_centered(a, a_zero_point, rowwise=True), _centered(b, b_zero_point))
        return y.astype(ember.int32)
    # centred 8-bit values are exact in float32
    f32 = ember.float32
    most = _centered_bound(a, a_zero_point) * _centered_bound(b, b_zero_point)
    return integer_matmul(_centered(a, a_zero_point, rowwise=True, dtype=f32),
                          _centered(b, b_zero_point, dtype=f32), most)


def _w_centered(w, zp):
    y = w.astype(_wide(w))
    if zp is None:
        return y
    z = zp.astype(_wide(w))
    if z.numel() > 1:
        z = z.reshape([-1] + [1] * (w.ndim - 1))
    return y - z.reshape([]) if z.numel() == 1 else y - z


@op("ConvInteger")
def conv_integer(ctx, x, w, x_zero_point=None, w_zero_point=None, **attrs):
    y = conv(ctx, _centered(x, x_zero_point), _w_centered(w, w_zero_point), None, **attrs)
    return y.astype(ember.int32)


@op("QLinearConv")
def qlinear_conv(ctx, x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, b=None, **attrs):
    acc = conv(ctx, _centered(x, x_zp), _w_centered(w, w_zp), None, **attrs)
    wide = _wide(x)
    ws = w_scale.astype(wide)
    ws = ws.reshape([-1] + [1] * (x.ndim - 2)) if ws.numel() > 1 else ws.reshape([])
    if b is not None:
        acc = acc + b.astype(wide).reshape([-1] + [1] * (x.ndim - 2))
    real = acc * (x_scale.astype(wide).reshape([]) * ws)
    return quantize(real, y_scale, y_zp, y_zp.dtype)


@op("QLinearMatMul")
def qlinear_matmul(ctx, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    acc = ember.matmul(_centered(a, a_zp, rowwise=True), _centered(b, b_zp))
    sa = a_scale.astype(_wide(a))
    sa = sa.reshape(-1, 1) if sa.numel() > 1 else sa.reshape([])
    sb = b_scale.astype(_wide(a))
    sb = sb.reshape([]) if sb.numel() == 1 else sb
    return quantize(acc * sa * sb, y_scale, y_zp, y_zp.dtype)
