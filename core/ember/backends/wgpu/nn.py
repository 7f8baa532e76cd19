"""WGSL versions of the module and activation composites, mixed into ``WgpuBackend``.

Each method keeps the exact semantics (and signature) of the default body it replaces in
``ember.backend.module_ops`` / ``activation_ops``; the conformance suite and
tests/unit/test_wgpu_backend.py run both on the same cases. The convolutions (implicit GEMMs,
direct kernels for depthwise) live in :mod:`.conv`. Pooling, softmax and layer norm are one
lane per output element or row (long softmax rows: one subgroup per row where
:func:`.compute.subgroups` allows). Everything computes in float32; float16 inputs are widened and
the result narrowed.
"""

from __future__ import annotations

import struct

from ... import dtype as dt
from ...shape import numel, pool_output_size
from . import conv as _conv
from .conv import f32 as _f32
from .conv import nn_pipe as _pipe
from .compute import subgroups
from .launch import WG, Runtime, contiguous, narrow
from .primitive import collapse


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


# softmax rows this long or longer go to one subgroup each (softmax_sg, reading the row
# coalesced) where compute.subgroups allows; shorter ones stay one lane per row
_SG_MIN_LENGTH = 64
_SG_ROWS = WG // 8  # rows per workgroup: one per subgroup of 8 lanes (fewer larger ones share)


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
        if length >= _SG_MIN_LENGTH and subgroups(rt, emulated_too=False):
            pipe = _pipe(rt, "softmax_sg", 1, RESULT=result, RPW=_SG_ROWS)
            groups = rt.groups(rows, _SG_ROWS)
        else:
            pipe, groups = _pipe(rt, "softmax", 1, RESULT=result), rt.groups(rows)
        rt.engine.dispatch(pipe, meta, [x.block, y.block], groups)
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
        return _conv.conv(self.rt, x, weight, bias, tuple(stride),
                          tuple(tuple(p) for p in padding), tuple(dilation), groups)

    def conv_weight_grad(self, x, grad, weight_shape: tuple, stride: tuple, padding: tuple,
                         dilation: tuple, groups: int):
        return _conv.conv_weight_grad(self.rt, x, grad, tuple(weight_shape), tuple(stride),
                                      tuple(tuple(p) for p in padding), tuple(dilation), groups)

    def conv_transpose(self, x, weight, bias, stride: tuple, padding: tuple,
                       output_padding: tuple, dilation: tuple, groups: int):
        return _conv.conv_transpose(self.rt, x, weight, bias, tuple(stride), tuple(padding),
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
