"""Convolutions and pooling for any number of spatial dims.

1-d and 2-d convolutions call ``ember.nn.functional`` (asymmetric pads are applied first with
``ember.pad``); other cases build sliding windows from strided slices, which works for every
rank and every backend.
"""

from __future__ import annotations

import math

import ember
from ember.nn import functional as F

from ... import limits
from ...errors import ShapeError
from ...shape import conv_output_size
from . import op
from ._util import const


def resolve_pads(auto_pad, pads, in_sizes, kernel, strides, dilations):
    """ONNX pads (begins + ends) after auto_pad."""
    nd = len(in_sizes)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for n, k, s, d in zip(in_sizes, kernel, strides, dilations):
            out = -(-n // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
            small = total // 2
            b = small if auto_pad == "SAME_UPPER" else total - small
            begins.append(b)
            ends.append(total - b)
        return begins + ends
    if auto_pad == "VALID" or pads is None:
        return [0] * (2 * nd)
    return list(pads)


def _zero_pad(x, begins, ends, value=0.0):
    flat = []
    for b, e in zip(reversed(begins), reversed(ends)):
        flat += [b, e]
    return ember.pad(x, flat, value=value) if any(flat) else x


def windows(x, kernel, strides, dilations, out):
    """(N, C, *out, K): every kernel offset's strided view, stacked last. Its size (and the
    K views made in Python) is checked against ``ember.limits`` ``max_tensor_bytes`` first:
    a kernel_shape attribute can ask for any number of windows."""
    span = math.prod(max(d, 1) for d in (*x.shape[:2], *out, *kernel))
    limits.check(ShapeError, f"onnx {len(kernel)}-d windows: kernel {tuple(kernel)} over "
                 f"{tuple(x.shape)} ({span} values)", span * x.dtype.itemsize,
                 "max_tensor_bytes")
    nd = len(kernel)
    views = []
    for offs in _offsets(kernel):
        key = [slice(None), slice(None)]
        for o, d, s, n in zip(offs, dilations, strides, out):
            start = o * d
            key.append(slice(start, start + (n - 1) * s + 1, s))
        views.append(x[tuple(key)])
    del nd
    return ember.stack(views, dim=-1)


def _offsets(kernel):
    out = [()]
    for k in kernel:
        out = [o + (i,) for o in out for i in range(k)]
    return out


def _conv_generic(x, w, b, strides, dilations, group, out):
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    k = math.prod(w.shape[2:])
    win = windows(x, list(w.shape[2:]), strides, dilations, out)  # N, C, *out, K
    nd = len(out)
    perm = [0] + list(range(2, 2 + nd)) + [1, 2 + nd]
    parts = []
    for g in range(group):
        xg = win[:, g * cg:(g + 1) * cg].permute(perm).reshape(n, math.prod(out), cg * k)
        wg = w[g * mg:(g + 1) * mg].reshape(mg, cg * k)
        parts.append(ember.matmul(xg, wg.permute(1, 0)))
    y = ember.cat(parts, dim=-1) if group > 1 else parts[0]
    y = y.reshape([n, *out, m]).permute([0, nd + 1] + list(range(1, nd + 1)))
    if b is not None:
        y = y + b.reshape([m] + [1] * nd)
    return y


@op("Conv")
def conv(ctx, x, w, b=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
         pads=None, strides=None):
    nd = x.ndim - 2
    kernel = list(w.shape[2:])
    strides = strides or [1] * nd
    dilations = dilations or [1] * nd
    p = resolve_pads(auto_pad, pads, x.shape[2:], kernel, strides, dilations)
    begins, ends = p[:nd], p[nd:]
    if nd in (1, 2):
        fn = F.conv1d if nd == 1 else F.conv2d
        if begins == ends:
            return fn(x, w, b, tuple(strides), tuple(begins), tuple(dilations), group)
        return fn(_zero_pad(x, begins, ends), w, b, tuple(strides), 0, tuple(dilations), group)
    xp = _zero_pad(x, begins, ends)
    out = [conv_output_size(n, k, s, (0, 0), d)
           for n, k, s, d in zip(xp.shape[2:], kernel, strides, dilations)]
    return _conv_generic(xp, w, b, strides, dilations, group, out)


@op("ConvTranspose")
def conv_transpose(ctx, x, w, b=None, auto_pad="NOTSET", dilations=None, group=1,
                   kernel_shape=None, output_padding=None, output_shape=None, pads=None,
                   strides=None):
    nd = x.ndim - 2
    kernel = list(w.shape[2:])
    strides = strides or [1] * nd
    dilations = dilations or [1] * nd
    output_padding = output_padding or [0] * nd
    full = [(n - 1) * s + (k - 1) * d + 1 + op_
            for n, s, k, d, op_ in zip(x.shape[2:], strides, kernel, dilations, output_padding)]
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = list(output_shape)[-nd:] if output_shape is not None else [
            n * s for n, s in zip(x.shape[2:], strides)]
        begins, ends = [], []
        for f, t in zip(full, target):
            total = f - t
            b_ = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            begins.append(b_)
            ends.append(total - b_)
    else:
        p = pads or [0] * (2 * nd)
        begins, ends = p[:nd], p[nd:]
    if nd not in (1, 2):
        raise ember.UnsupportedOpError(f"ConvTranspose: {nd}-d is not supported (1-d and 2-d)")
    fn = F.conv_transpose1d if nd == 1 else F.conv_transpose2d
    y = fn(x, w, None, tuple(strides), 0, tuple(output_padding), group, tuple(dilations))
    key = [slice(None), slice(None)] + [slice(max(bg, 0), y.shape[2 + i] - max(e, 0))
                                        for i, (bg, e) in enumerate(zip(begins, ends))]
    y = y[tuple(key)]
    grow = [max(-bg, 0) for bg in begins], [max(-e, 0) for e in ends]
    if any(grow[0]) or any(grow[1]):  # an output_shape beyond the full size: zeros, then bias
        y = _zero_pad(y, *grow)
    if b is not None:
        y = y + b.reshape([-1] + [1] * nd)
    return y


def _pool_geometry(x, kernel, strides, pads, dilations, ceil_mode, auto_pad):
    nd = len(kernel)
    strides = strides or [1] * nd
    dilations = dilations or [1] * nd
    p = resolve_pads(auto_pad, pads, x.shape[2:], kernel, strides, dilations)
    begins, ends = p[:nd], p[nd:]
    out, extra = [], []
    for n, k, s, d, b, e in zip(x.shape[2:], kernel, strides, dilations, begins, ends):
        o = conv_output_size(n, k, s, (b, e), d, bool(ceil_mode))
        out.append(o)
        extra.append(max((o - 1) * s + (k - 1) * d + 1 - (n + b + e), 0))
    return strides, dilations, begins, ends, out, extra


@op("MaxPool")
def max_pool(ctx, x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None,
             pads=None, storage_order=0, strides=None):
    kernel = kernel_shape
    strides, dilations, begins, ends, out, extra = _pool_geometry(
        x, kernel, strides, pads, dilations, ceil_mode, auto_pad)
    nd = len(kernel)
    low = -math.inf if x.dtype.is_float else x.dtype.int_range[0]
    if ctx.n_outputs == 1 and nd == 2 and x.dtype.is_float:
        if begins == ends and not any(extra) and all(b <= k // 2 for b, k in zip(begins,
                                                                                 kernel)):
            return F.max_pool2d(x, tuple(kernel), tuple(strides), tuple(begins),
                                tuple(dilations))
        # asymmetric ("SAME") or ceil-mode padding: pad with -inf, then the same fast kernel
        xp = _zero_pad(x, begins, [e + x_ for e, x_ in zip(ends, extra)], value=low)
        return F.max_pool2d(xp, tuple(kernel), tuple(strides), 0, tuple(dilations))
    xp = _zero_pad(x, begins, [e + x_ for e, x_ in zip(ends, extra)], value=low)
    win = windows(xp, kernel, strides, dilations, out)
    y = ember.amax(win, dim=-1)
    if ctx.n_outputs == 1:
        return y
    arg = ember.argmax(win, dim=-1)
    offs = _offsets(kernel)
    flat = None
    shape_in = x.shape
    # storage_order=1 numbers the positions column-major: the last spatial dim varies slowest
    order = range(nd - 1, -1, -1) if storage_order else range(nd)
    for i in order:
        table = const(ctx, [o[i] * dilations[i] for o in offs], ember.int64)
        shape = [1] * (nd + 2)
        shape[2 + i] = out[i]
        pos = ember.arange(out[i], dtype=ember.int64, backend=ctx.backend).reshape(shape)
        coord = pos * strides[i] + table[arg] - begins[i]
        flat = coord if flat is None else flat * shape_in[2 + i] + coord
    n, c = x.shape[:2]
    nc = ember.arange(n * c, dtype=ember.int64, backend=ctx.backend).reshape(
        [n, c] + [1] * nd)
    return y, nc * math.prod(shape_in[2:]) + flat


@op("AveragePool")
def average_pool(ctx, x, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None,
                 kernel_shape=None, pads=None, strides=None):
    kernel = kernel_shape
    strides, dilations, begins, ends, out, extra = _pool_geometry(
        x, kernel, strides, pads, dilations, ceil_mode, auto_pad)
    nd = len(kernel)
    if (nd == 2 and begins == ends and not any(extra) and dilations == [1, 1]
            and all(b <= k // 2 for b, k in zip(begins, kernel))):
        return F.avg_pool2d(x, tuple(kernel), tuple(strides), tuple(begins),
                            count_include_pad=bool(count_include_pad))
    xp = _zero_pad(x, begins, [e + x_ for e, x_ in zip(ends, extra)])
    total = ember.sum(windows(xp, kernel, strides, dilations, out), dim=-1)
    ones = ember.ones([1, 1, *x.shape[2:]], dtype=x.dtype, backend=ctx.backend)
    if count_include_pad:
        mask = _zero_pad(_zero_pad(ones, begins, ends, value=1.0), [0] * nd, extra)
    else:
        mask = _zero_pad(ones, begins, [e + x_ for e, x_ in zip(ends, extra)])
    count = ember.sum(windows(mask, kernel, strides, dilations, out), dim=-1)
    return total / count


@op("LpPool")
def lp_pool(ctx, x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, p=2,
            pads=None, strides=None):
    kernel = kernel_shape
    strides, dilations, begins, ends, out, extra = _pool_geometry(
        x, kernel, strides, pads, dilations, ceil_mode, auto_pad)
    xp = _zero_pad(x, begins, [e + x_ for e, x_ in zip(ends, extra)])
    win = windows(xp, kernel, strides, dilations, out)
    return ember.pow(ember.sum(ember.pow(ember.abs(win), p), dim=-1), 1.0 / p)


@op("GlobalAveragePool")
def global_average_pool(ctx, x):
    return ember.mean(x, dim=tuple(range(2, x.ndim)), keepdim=True)


@op("GlobalMaxPool")
def global_max_pool(ctx, x):
    return ember.amax(x, dim=tuple(range(2, x.ndim)), keepdim=True)


@op("GlobalLpPool")
def global_lp_pool(ctx, x, p=2):
    s = ember.sum(ember.pow(ember.abs(x), p), dim=tuple(range(2, x.ndim)), keepdim=True)
    return ember.pow(s, 1.0 / p)


@op("MaxUnpool")
def max_unpool(ctx, x, indices, output_shape=None, kernel_shape=None, pads=None, strides=None):
    # the indices address the pooled input's (default) shape; a larger output_shape holds
    # that block at its start, zeros after (onnx.reference's rule)
    nd = x.ndim - 2
    strides = strides or [1] * nd
    pads = pads or [0] * (2 * nd)
    shape = list(x.shape[:2]) + [
        (n - 1) * s + k - pads[i] - pads[i + nd]
        for i, (n, s, k) in enumerate(zip(x.shape[2:], strides, kernel_shape))]
    out = ember.zeros(math.prod(shape), dtype=x.dtype, backend=ctx.backend)
    out = out.scatter(0, indices.reshape(-1), x.reshape(-1)).reshape(shape)
    wanted = shape if output_shape is None else [int(v) for v in output_shape.tolist()]
    if wanted == shape:
        return out
    if len(wanted) != len(shape) or any(w < n for w, n in zip(wanted, shape)):
        raise ShapeError(f"MaxUnpool: output_shape {wanted} is smaller than the unpooled "
                         f"shape {shape}; it must have {len(shape)} dims, each at least as large")
    return F.pad(out, [p for n, w in zip(shape[::-1], wanted[::-1]) for p in (0, w - n)])
