"""WGSL versions of the module and activation composites, mixed into ``WgpuBackend``.

Each method keeps the exact semantics (and signature) of the default body it replaces in
``ember.backend.module_ops`` / ``activation_ops``; the conformance suite and
tests/unit/test_wgpu_backend.py run both on the same cases. Convolution is im2col + the tiled
matmul, in batch chunks so the column buffer stays inside one storage binding; the transposed
convolution is the adjoint: one matmul then a col2im gather (no atomics). Grouped convolutions
with few channels per group (depthwise, as in MobileNet/EfficientNet) instead run direct
kernels, one lane per output element looping over the taps, for conv, conv_transpose and the
weight gradient (those batched matmuls would have one tiny matrix per group). Pooling, softmax and
layer norm are one lane per output element or row. Everything computes in float32; float16
inputs are widened and the result narrowed.
"""

from __future__ import annotations

import struct

from ... import dtype as dt
from ...contract import convolution
from ...shape import conv_output_size, conv_transpose_output_size, pool_output_size
from ...shape import numel
from . import compute
from .kernels import render
from .launch import WG, Runtime, contiguous, map_op, narrow, widen
from .primitive import WgpuTensor, collapse, contiguous_strides

# the column buffer of one conv chunk stays under this many bytes (and the binding limit)
_COLS_BYTES = 1 << 28
# grouped convs with at most this many (input) channels per group use the direct kernels
_DIRECT_MAX_CHANNELS = 8


def _pipe(rt: Runtime, section: str, n_buffers: int, **keys):
    key = ("nn", section, tuple(sorted(keys.items())))
    access = ("read",) * (n_buffers + 1) + ("read_write",)  # meta, inputs, output
    return rt.lib.pipeline(key, lambda: (
        render(rt.lib.source("nn", section), WG=WG, LIBS=rt.libs(), **keys), access))


def _f32(rt: Runtime, x: WgpuTensor) -> WgpuTensor:
    return widen(rt, x) if x.dtype != dt.float32 else x


def _shaped(x: WgpuTensor, shape) -> WgpuTensor:
    """``x`` (contiguous, offset 0) seen with another contiguous shape."""
    shape = tuple(shape)
    return x.view(shape, contiguous_strides(shape))


def _direct(groups: int, per_group: int) -> bool:
    """Whether a grouped (de)convolution runs the direct kernels rather than im2col + a batched
    matmul: with one or a few channels per group (depthwise) the matmul has tiny dimensions and
    one group per batch entry, far slower than looping over the taps."""
    return groups > 1 and per_group <= _DIRECT_MAX_CHANNELS


def _geometry(spatial, out, kernel, stride, dilation, pads, strides) -> list[int]:
    words: list[int] = []
    for d in range(len(kernel)):
        words += [spatial[d], out[d], kernel[d], stride[d], dilation[d], pads[d], strides[d]]
    return words


def _conv_direct(rt: Runtime, x, weight, bias, stride, padding, dilation, groups, out):
    n, c_out = x.shape[0], weight.shape[0]
    kernel = weight.shape[2:]
    y = rt.empty((n, c_out) + out, dt.float32, "conv")
    total = numel(y.shape)
    if total:
        b = _f32(rt, bias) if bias is not None else None
        b = contiguous(rt, b) if b is not None else None
        meta = [total, c_out, numel(out), numel(kernel), c_out // groups, weight.shape[1],
                len(kernel), x.offset, x.strides[0], x.strides[1], int(b is not None),
                *_geometry(x.shape[2:], out, kernel, stride, dilation,
                           [lo for lo, _ in padding], x.strides[2:])]
        rt.engine.dispatch(_pipe(rt, "conv_direct", 3), meta,
                           [x.block, weight.block, (b if b is not None else weight).block,
                            y.block], rt.groups(total))
    return y


def conv(rt: Runtime, x, weight, bias, stride, padding, dilation, groups):
    dtype = x.dtype
    x, weight = _f32(rt, x), contiguous(rt, _f32(rt, weight))
    n, c = x.shape[:2]
    spatial, kernel = x.shape[2:], weight.shape[2:]
    c_out = weight.shape[0]
    out = tuple(conv_output_size(*a) for a in zip(spatial, kernel, stride, padding, dilation))
    positions, taps = numel(out), numel(kernel)
    cg, cog = c // groups, c_out // groups
    if _direct(groups, cg):
        return narrow(rt, _conv_direct(rt, x, weight, bias, stride, padding, dilation, groups,
                                       out), dtype)
    kk = cg * taps
    y = rt.empty((c_out, n, positions), dt.float32, "conv")
    if numel(y.shape) and kk:
        w = _shaped(weight, (groups, cog, kk))
        chunk = max(1, min(_COLS_BYTES, rt.info.max_binding_size) // (4 * groups * kk * positions))
        pipe = _pipe(rt, "im2col", 1)
        dims = []
        for d in range(len(kernel)):
            dims += [spatial[d], out[d], kernel[d], stride[d], dilation[d], padding[d][0],
                     x.strides[2 + d]]
        for n0 in range(0, n, chunk):
            m = min(chunk, n - n0)
            cols = rt.empty((groups, kk, m * positions), dt.float32, "conv")
            total = numel(cols.shape)
            meta = [total, m, positions, kk, taps, cg, len(kernel), x.offset, x.strides[0],
                    x.strides[1], n0, *dims]
            rt.engine.dispatch(pipe, meta, [x.block, cols.block], rt.groups(total))
            compute.matmul(rt, w, cols, out=y,
                           out_view=(n0 * positions, cog * n * positions, n * positions))
    shape = (n, c_out) + out
    view = y.view(shape, (positions, n * positions) + contiguous_strides(out))
    if bias is not None:
        b = _f32(rt, bias)
        bv = b.view(shape, (0, b.strides[0]) + (0,) * len(out))
        return narrow(rt, map_op(rt, [view, bv], dt.float32, "x0 + x1"), dtype)
    return narrow(rt, view if n == 1 else contiguous(rt, view), dtype)


def conv_transpose(rt: Runtime, x, weight, bias, stride, padding, output_padding, dilation,
                   groups):
    dtype = x.dtype
    x, weight = _f32(rt, x), contiguous(rt, _f32(rt, weight))
    n, c_in = x.shape[:2]
    spatial, kernel = x.shape[2:], weight.shape[2:]
    cog = weight.shape[1]
    c_out = cog * groups
    nd = len(kernel)
    out = tuple(conv_transpose_output_size(*a)
                for a in zip(spatial, kernel, stride, padding, output_padding, dilation))
    p_in, p_out, taps = numel(spatial), numel(out), numel(kernel)
    cig = c_in // groups
    y = rt.empty((n, c_out) + out, dt.float32, "conv_transpose")
    if not numel(y.shape):
        return narrow(rt, y, dtype)
    if _direct(groups, cig):
        b = contiguous(rt, _f32(rt, bias)) if bias is not None else None
        meta = [numel(y.shape), c_out, p_out, taps, cog, cig, nd, x.offset, x.strides[0],
                x.strides[1], int(b is not None),
                *_geometry(spatial, out, kernel, stride, dilation, padding, x.strides[2:])]
        rt.engine.dispatch(_pipe(rt, "conv_transpose_direct", 3), meta,
                           [x.block, weight.block, (b if b is not None else weight).block,
                            y.block], rt.groups(numel(y.shape)))
        return narrow(rt, y, dtype)
    # x as (G, C_in/G, N·P_in): channels first, then one contiguous copy
    perm = (1, 0) + tuple(range(2, 2 + nd))
    xt = map_op(rt, [x.view(tuple(x.shape[a] for a in perm), tuple(x.strides[a] for a in perm))],
                dt.float32, "x0")
    xt = _shaped(xt, (groups, cig, n * p_in))
    # Wᵀ per group: (G, C_out/G·taps, C_in/G), a strided view of the weight
    rows = cog * taps
    wt = weight.view((groups, rows, cig), (cig * rows, 1, rows))
    if cig:
        cols = compute.matmul(rt, wt, xt)
    else:  # no input channels: every output is the bias (or zero)
        cols = map_op(rt, [], dt.float32, "0.0", shape=(groups, rows, n * p_in))
    b = _f32(rt, bias) if bias is not None else None
    meta = [numel(y.shape), n, c_out, cog, taps, p_in, p_out, nd, int(b is not None)]
    for d in range(nd):
        meta += [spatial[d], out[d], kernel[d], stride[d], dilation[d], padding[d]]
    pipe = _pipe(rt, "col2im", 2)
    rt.engine.dispatch(pipe, meta, [cols.block, (b if b is not None else cols).block, y.block],
                       rt.groups(numel(y.shape)))
    return narrow(rt, y, dtype)


def conv_weight_grad(rt: Runtime, x, grad, weight_shape, stride, padding, dilation, groups):
    """The direct weight gradient of a grouped conv with few channels per group."""
    dtype = x.dtype
    x, grad = _f32(rt, x), contiguous(rt, _f32(rt, grad))
    n, c_out = grad.shape[:2]
    out, kernel = grad.shape[2:], tuple(weight_shape[2:])
    y = rt.empty(tuple(weight_shape), dt.float32, "conv_weight_grad")
    total = numel(y.shape)
    if total:
        meta = [total, n, c_out, numel(out), numel(kernel), c_out // groups, weight_shape[1],
                len(kernel), x.offset, x.strides[0], x.strides[1],
                *_geometry(x.shape[2:], out, kernel, stride, dilation,
                           [lo for lo, _ in padding], x.strides[2:])]
        rt.engine.dispatch(_pipe(rt, "conv_weight_grad_direct", 2), meta,
                           [x.block, grad.block, y.block], rt.groups(total))
    return narrow(rt, y, dtype)


def _pool(rt: Runtime, x, kernel, stride, padding, dilation, out, op, include_pad=False,
          divisor=0):
    dtype = x.dtype
    x = _f32(rt, x)
    lead = x.shape[:-len(kernel)]
    c = lead[-1]
    y = rt.empty(lead + out, dt.float32, op)
    total = numel(y.shape)
    if total:
        # the dims before C must collapse to one batch stride
        bshape, (bstr,) = collapse(lead[:-1], x.strides[:len(lead) - 1])
        if len(bshape) > 1:
            x = contiguous(rt, x)
            bshape, (bstr,) = collapse(lead[:-1], x.strides[:len(lead) - 1])
        s_n = bstr[0] if bstr else 0
        meta = [total, c, numel(out), len(kernel), x.offset, s_n, x.strides[len(lead) - 1],
                int(include_pad), divisor or 0]
        sp = x.strides[len(lead):]
        for d in range(len(kernel)):
            meta += [x.shape[len(lead) + d], out[d], kernel[d], stride[d], padding[d],
                     dilation[d], sp[d]]
        if op == "max_pool":
            keys = {"INIT": "-inf_f()", "FINISH": "acc",
                    "ACCUMULATE": "if (is_nan_f(v) || v > acc) { acc = v; }"}
        else:
            keys = {"INIT": "0.0", "FINISH": "acc / f32(div)", "ACCUMULATE": "acc = acc + v;"}
        rt.engine.dispatch(_pipe(rt, "pool", 1, **keys), meta, [x.block, y.block],
                           rt.groups(total))
    return narrow(rt, y, dtype)


def softmax(rt: Runtime, x, dim: int, log: bool):
    dtype = x.dtype
    x = _f32(rt, x)
    nd = len(x.shape)
    perm = [d for d in range(nd) if d != dim] + [dim]
    inverse = [perm.index(d) for d in range(nd)]
    outer = tuple(x.shape[d] for d in perm[:-1])
    length = x.shape[dim]
    y = rt.empty(outer + (length,), dt.float32, "log_softmax" if log else "softmax")
    rows = numel(outer)
    if rows and length:
        oshape, (ostr,) = collapse(outer, tuple(x.strides[d] for d in perm[:-1]))
        meta = [rows, length, len(oshape), x.offset, x.strides[dim], *oshape, *ostr]
        result = "shifted - f_log(s)" if log else "f_exp(shifted) / s"
        rt.engine.dispatch(_pipe(rt, "softmax", 1, RESULT=result), meta, [x.block, y.block],
                           rt.groups(rows))
    y = y.view(tuple(y.shape[i] for i in inverse), tuple(y.strides[i] for i in inverse))
    return narrow(rt, y, dtype)


def layer_norm(rt: Runtime, x, normalized_ndim: int, weight, bias, eps: float):
    dtype = x.dtype
    x = contiguous(rt, _f32(rt, x))
    shape = x.shape
    d = numel(shape[len(shape) - normalized_ndim:])
    rows = numel(shape[:len(shape) - normalized_ndim])
    y = rt.empty(shape, dt.float32, "layer_norm")
    if rows and d:
        w = contiguous(rt, _f32(rt, weight)) if weight is not None else x
        b = contiguous(rt, _f32(rt, bias)) if bias is not None else x
        eps_bits = struct.unpack("<I", struct.pack("<f", eps))[0]
        meta = [rows, d, int(weight is not None), int(bias is not None), eps_bits]
        rt.engine.dispatch(_pipe(rt, "layer_norm", 3), meta, [x.block, w.block, b.block, y.block],
                           rt.groups(rows))
    return narrow(rt, y, dtype)


class WgpuNNOps:
    """The overrides, with the composite defaults' signatures."""

    rt: Runtime

    def conv(self, x, weight, bias, stride: tuple, padding: tuple, dilation: tuple, groups: int):
        return conv(self.rt, x, weight, bias, tuple(stride), tuple(tuple(p) for p in padding),
                    tuple(dilation), groups)

    def conv_weight_grad(self, x, grad, weight_shape: tuple, stride: tuple, padding: tuple,
                         dilation: tuple, groups: int):
        if not _direct(groups, weight_shape[1]):
            return convolution.conv_weight_grad.default(self, x, grad, weight_shape, stride, padding,
                                              dilation, groups)
        return conv_weight_grad(self.rt, x, grad, tuple(weight_shape), tuple(stride),
                                tuple(tuple(p) for p in padding), tuple(dilation), groups)

    def conv_transpose(self, x, weight, bias, stride: tuple, padding: tuple,
                       output_padding: tuple, dilation: tuple, groups: int):
        return conv_transpose(self.rt, x, weight, bias, tuple(stride), tuple(padding),
                              tuple(output_padding), tuple(dilation), groups)

    def max_pool(self, x, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 ceil_mode: bool):
        spatial = x.shape[len(x.shape) - len(kernel):]
        out = tuple(pool_output_size(*a, ceil_mode)
                    for a in zip(spatial, kernel, stride, padding, dilation))
        return _pool(self.rt, x, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation),
                     out, "max_pool")

    def avg_pool(self, x, kernel: tuple, stride: tuple, padding: tuple, ceil_mode: bool,
                 count_include_pad: bool, divisor_override: int | None = None):
        spatial = x.shape[len(x.shape) - len(kernel):]
        out = tuple(pool_output_size(*a, 1, ceil_mode)
                    for a in zip(spatial, kernel, stride, padding))
        return _pool(self.rt, x, tuple(kernel), tuple(stride), tuple(padding),
                     (1,) * len(kernel), out, "avg_pool", count_include_pad, divisor_override)

    def softmax(self, x, dim: int):
        return softmax(self.rt, x, dim, False)

    def log_softmax(self, x, dim: int):
        return softmax(self.rt, x, dim, True)

    def layer_norm(self, x, normalized_ndim: int, weight, bias, eps: float):
        return layer_norm(self.rt, x, normalized_ndim, weight, bias, eps)
