"""Fast numpy versions of the module and activation ops, mixed into ``NumpyBackend``.

Each method keeps the exact semantics of the composite default body it replaces
(``ember.backend.module_ops`` / ``activation_ops``); the tests run both on the same cases.
Convolution is im2col (a strided window view copied once) + one batched matmul; the
transposed convolution is the adjoint: one matmul then col2im (strided adds per kernel tap).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ...contract.windows import avg_pool_divisors
from ...shape import pool_geometry
from .blocks import blocked
from .quiet import quiet



def _pad(x: np.ndarray, pairs, value) -> np.ndarray:
    """Pad the trailing dims by ``(before, after)`` pairs; negative amounts crop."""
    lead = x.ndim - len(pairs)
    if any(p < 0 for pair in pairs for p in pair):
        crop = tuple(
            slice(max(-lo, 0), s - max(-hi, 0)) for s, (lo, hi) in zip(x.shape[lead:], pairs)
        )
        x = x[(slice(None),) * lead + crop]
        pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if not any(p for pair in pairs for p in pair):
        return x
    # np.pad is generic and slow; a filled array keeps x's memory order (K) for the copy
    shape = x.shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[lead:], pairs))
    out = np.empty_like(x, shape=shape)
    out.fill(value)
    out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[lead:], pairs))] = x
    return out


def _taps(kernel, out, stride, dilation):
    """Per kernel offset: (offset tuple, the index selecting it from every window)."""
    for offsets in itertools.product(*(range(k) for k in kernel)):
        yield (
            offsets,
            (Ellipsis,)
            + tuple(
                slice(k * d, k * d + (n - 1) * s + 1, s)
                for k, n, s, d in zip(offsets, out, stride, dilation)
            ),
        )


def _windows(x, kernel, stride, padding, dilation) -> np.ndarray:
    """The conv windows of ``x`` (padded with zeros) as a view: (N, C, *out, *kernel)."""
    nd = len(stride)
    x = _pad(x, padding, 0)
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    out = tuple((n - s) // st + 1 for n, s, st in zip(x.shape[2:], spans, stride))
    if min(out, default=1) <= 0:  # no window fits: let numpy's checked view say so
        win = sliding_window_view(x, spans, axis=tuple(range(2, 2 + nd)))
        return win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)
                   + tuple(slice(None, None, d) for d in dilation)]
    lead, inner = x.strides[:2], x.strides[2:]
    shape = x.shape[:2] + out + tuple(kernel)
    strides = lead + tuple(t * s for t, s in zip(inner, stride)) + tuple(
        t * d for t, d in zip(inner, dilation))
    if x.flags.c_contiguous:  # the ndarray constructor: ~1 us against as_strided's ~9
        return np.ndarray(shape, x.dtype, x, 0, strides)
    return as_strided(x, shape, strides, writeable=False)


def _im2col(win: np.ndarray, groups: int) -> np.ndarray:
    """The one copy of a conv: windows laid out (groups, C_g * taps, N * positions), rows in
    the weight's (C_in, *kernel) order."""
    nd = (win.ndim - 2) // 2
    n = win.shape[0]
    cols = win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
    return cols.reshape(groups, -1, n * math.prod(win.shape[2 : 2 + nd]))


def _select(cond: np.ndarray, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``where(cond, x, 0)`` as a bit mask (exact, and far faster than ``np.where``)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    m = np.negative(cond.view(np.int8), dtype=bits)
    return np.bitwise_and(x.view(bits), m, out=m if out is None else out.view(bits))


def _col2im_stride1(x, w, groups, kernel, dilation, natural) -> np.ndarray:
    """Stride-1 transposed conv as (C_out, N, *natural). The input is zero-extended to the
    output's trailing widths, so each kernel tap's block of the GEMM output lands on the
    flattened output at one offset: one contiguous add per tap (no strided col2im)."""
    nd = len(kernel)
    n, spatial = x.shape[0], x.shape[2:]
    cig = x.shape[1] // groups
    wide = spatial[:1] + natural[1:]
    xs = np.zeros((groups, cig, n) + wide, dtype=x.dtype)
    xs[(Ellipsis,) + tuple(slice(0, s) for s in spatial)] = x.reshape(
        (n, groups, cig) + spatial
    ).transpose((1, 2, 0) + tuple(range(3, 3 + nd)))
    length = math.prod(wide)
    cols = np.matmul(w, xs.reshape(groups, cig, n * length))  # (g, C_out/g * taps, N * L)
    cols = cols.reshape(-1, math.prod(kernel), n, length)  # (C_out, taps, N, L)
    ostrides = [math.prod(natural[d + 1 :]) for d in range(nd)]
    total = math.prod(natural)
    # zeros of the widened columns spill past the end: room for them
    slack = sum(d * (k - 1) * o for k, d, o in zip(kernel[1:], dilation[1:], ostrides[1:]))
    y = np.zeros((cols.shape[0], n, total + slack), dtype=x.dtype)
    for t, offsets in enumerate(itertools.product(*(range(k) for k in kernel))):
        at = sum(k * d * o for k, d, o in zip(offsets, dilation, ostrides))
        y[:, :, at : at + length] += cols[:, t]
    return y[:, :, :total].reshape((cols.shape[0], n) + natural)


def _depthwise_stride1(x, weight, padding, dilation) -> np.ndarray:
    """Depthwise 2-d convolution, stride 1. Each channel's padded image is kept flat (plus a
    little slack), so a kernel tap's inputs for every output position of a widened output
    row (the padded width) are one contiguous run; the im2col copy is then one long run per
    (channel, tap) instead of one short run per output row, which dominated: 10-35 % off
    the whole conv on EfficientNet/PP-OCR shapes. The widened columns are cropped after one
    batched (1 x taps) @ (taps x positions) product per channel."""
    n, c, h, w = x.shape
    kh, kw = weight.shape[2:]
    (pt, pb), (pl, pr) = padding
    dh, dw = dilation
    hp, wp = h + pt + pb, w + pl + pr
    ho, wo = hp - dh * (kh - 1), wp - dw * (kw - 1)
    length = ho * wp
    flat = np.zeros((n * c, hp * wp + dw * (kw - 1)), dtype=x.dtype)
    flat[:, : hp * wp].reshape(n * c, hp, wp)[:, pt : pt + h, pl : pl + w] = x.reshape(
        n * c, h, w)
    # kernel rows/columns that only ever read padding add zeros: left out (a 5x5 kernel over
    # a 2-row map reads real rows with 3 of its 5 rows)
    i0, i1 = _reaching(kh, dh, ho, pt, h)
    j0, j1 = _reaching(kw, dw, wo, pl, w)
    kh, kw = max(i1 - i0, 0), max(j1 - j0, 0)
    if not kh or not kw:
        return np.zeros((n, c, ho, wo), dtype=x.dtype)
    rs, es = flat.strides
    taps = as_strided(flat[:, i0 * dh * wp + j0 * dw:], (n * c, kh, kw, length),
                      (rs, dh * wp * es, dw * es, es), writeable=False)
    cols = taps.reshape(n * c, kh * kw, length)  # the one copy
    wt = weight[:, :, i0:i1, j0:j1].reshape(1, c, 1, kh * kw)
    wt = np.broadcast_to(wt, (n, c, 1, kh * kw)).reshape(n * c, 1, kh * kw)
    y = np.matmul(wt, cols).reshape(n, c, ho, wp)
    return np.ascontiguousarray(y[..., :wo])


_TILED = 4 << 20  # im2col columns past this (bytes) are built and multiplied in row tiles


def _conv_row_tiles(win, w2, out) -> np.ndarray:
    """One sample's 2-d conv as im2col + GEMM over tiles of output rows, each tile's columns
    about 1 MB, so they are still in L2 when the GEMM reads them (the whole im2col of a
    large map is 4-22 MB here: 10-25 % off e.g. 3x3 convs over 56x56 to 112x112 maps)."""
    ho, wo = out
    y = np.empty((1, w2.shape[0], ho, wo), dtype=w2.dtype)
    rows = max(1, (1 << 20) // (w2.shape[1] * wo * w2.itemsize))
    for r in range(0, ho, rows):
        cols = _im2col(win[:, :, r : r + rows], 1)[0]
        y[0, :, r : r + rows] = np.matmul(w2, cols).reshape(w2.shape[0], -1, wo)
    return y


def _reaching(k, d, out, pad, size) -> tuple[int, int]:
    """The kernel taps ``[first, last)`` along one dim (stride 1) that read at least one
    real (unpadded) input for some output position."""
    # tap t reads padded positions t*d .. t*d + out - 1; real ones are pad .. pad + size - 1
    hits = [t for t in range(k) if t * d < pad + size and t * d + out - 1 >= pad]
    return (hits[0], hits[-1] + 1) if hits else (0, 0)


class NumpyNNOps:
    # ------------------------------------------------------------------ convolution
    def conv(self, x, weight, bias, stride, padding, dilation, groups):
        nd = len(stride)
        c_out = weight.shape[0]
        n, c = x.shape[:2]
        pointwise = math.prod(weight.shape[2:]) == 1 and groups == 1
        if pointwise and not any(p for pair in padding for p in pair):
            # 1x1: the input itself (strided if the conv is) is the GEMM's right operand
            xs = x[(Ellipsis,) + tuple(slice(None, None, s) for s in stride)] if any(
                s != 1 for s in stride) else x
            out = xs.shape[2:]
            w2 = weight.reshape(c_out, c)
            if n == 1:
                y = np.matmul(w2, xs.reshape(c, -1)).reshape((1, c_out) + out)
            else:
                y = np.matmul(w2, xs.reshape(n, c, -1)).reshape((n, c_out) + out)
            if bias is not None:
                y += bias.reshape((1, c_out) + (1,) * nd)
            return y
        if (nd == 2 and groups == c == c_out and all(st == 1 for st in stride)
                and min(p for pair in padding for p in pair) >= 0):
            y = _depthwise_stride1(x, weight, padding, dilation)
            if bias is not None:
                y += bias.reshape((1, c_out, 1, 1))
            return y
        win = _windows(x, weight.shape[2:], stride, padding, dilation)
        out = win.shape[2 : 2 + nd]
        k = math.prod(weight.shape[1:])
        if pointwise:
            # pointwise: no im2col at all, one (C_out, C) @ (C, positions) per sample
            xs = np.ascontiguousarray(win.reshape(n, c, math.prod(out)))
            y = np.matmul(weight.reshape(c_out, c), xs).reshape((n, c_out) + out)
        elif n == 1 and groups == 1 and nd == 2 and k * math.prod(out) * x.itemsize > _TILED:
            y = _conv_row_tiles(win, weight.reshape(c_out, k), out)
        else:
            cols = _im2col(win, groups)
            w = weight.reshape(groups, c_out // groups, cols.shape[1])
            # one GEMM per group (a matmul batched over N calls BLAS N times on small
            # matrices: much slower)
            y = np.matmul(w, cols).reshape(groups, c_out // groups, n, -1)
            y = y.transpose(2, 0, 1, 3).reshape((n, c_out) + out)
        if bias is not None:
            y += bias.reshape((1, c_out) + (1,) * nd)
        return y

    def conv_weight_grad(self, x, grad, weight_shape, stride, padding, dilation, groups):
        # one GEMM on the im2col columns: (C_out/g, N*P) @ (N*P, C_in/g * taps) per group
        n = x.shape[0]
        win = _windows(x, weight_shape[2:], stride, padding, dilation)
        cols = _im2col(win, groups)
        g = grad.reshape(n, groups, weight_shape[0] // groups, -1).transpose(1, 2, 0, 3)
        g = g.reshape(groups, weight_shape[0] // groups, cols.shape[2])
        return np.matmul(g, cols.transpose(0, 2, 1)).reshape(weight_shape)

    def conv_transpose(self, x, weight, bias, stride, padding, output_padding, dilation, groups):
        nd = len(stride)
        n, c_in = x.shape[:2]
        spatial = x.shape[2:]
        c_out_g, kernel = weight.shape[1], weight.shape[2:]
        cig, c_out = c_in // groups, c_out_g * groups
        w = weight.reshape(groups, cig, c_out_g * math.prod(kernel)).transpose(0, 2, 1)
        natural = tuple(
            (s - 1) * st + d * (k - 1) + 1 for s, st, d, k in zip(spatial, stride, dilation, kernel)
        )
        # y is built channels-first, (C_out, N, *spatial): the GEMM's natural output order
        if all(s == 1 for s in stride):
            y = _col2im_stride1(x, w, groups, kernel, dilation, natural)
        else:
            positions = math.prod(spatial)
            xs = x.reshape(n, groups, cig, positions).transpose(1, 2, 0, 3)
            xs = xs.reshape(groups, cig, n * positions)  # one GEMM per group, as in conv
            cols = np.matmul(w, xs).reshape((c_out,) + tuple(kernel) + (n,) + tuple(spatial))
            size = tuple(
                length + max(0, op - p) for length, op, p in zip(natural, output_padding, padding)
            )
            y = np.zeros((c_out, n) + size, dtype=x.dtype)
            for offsets, index in _taps(kernel, spatial, stride, dilation):
                y[index] += cols[(slice(None),) + offsets]
        extra = [
            (0, max(0, op - p - (y.shape[2 + i] - length)))
            for i, (length, op, p) in enumerate(zip(natural, output_padding, padding))
        ]
        if any(hi for _, hi in extra):
            y = _pad(y, extra, 0)
        crop = tuple(
            slice(p, length - p + op) for p, length, op in zip(padding, natural, output_padding)
        )
        y = y[(Ellipsis,) + crop].swapaxes(0, 1)  # stays channels-first in memory
        if bias is not None:
            y = y + bias.reshape((1, c_out) + (1,) * nd)
        return y

    # ------------------------------------------------------------------ pooling
    def max_pool(self, x, kernel, stride, padding, dilation, ceil_mode):
        out, pairs = pool_geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
        return _window_reduce(np.maximum, _pad(x, pairs, -np.inf), kernel, out, stride, dilation)

    def max_pool_grad(self, x, out, grad, kernel, stride, padding, dilation, ceil_mode):
        size, pairs = pool_geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
        xp = _pad(x, pairs, -np.inf)
        gxp = np.zeros_like(xp, dtype=grad.dtype)  # x's memory order: writes follow reads
        # windows no wider than the stride (the usual kernel == stride) never overlap: each
        # tap writes its slots directly instead of adding
        disjoint = all(d * (k - 1) + 1 <= s for k, s, d in zip(kernel, stride, dilation))
        taken = None
        for _, index in _taps(kernel, size, stride, dilation):
            hit = xp[index] == out
            if taken is None:
                taken = hit
            else:
                np.greater(hit, taken, out=hit)  # hit and not taken: the first max wins
                taken |= hit
            if disjoint:
                _select(hit, grad, out=gxp[index])
            else:
                gxp[index] += _select(hit, grad).view(grad.dtype)
        return _pad(gxp, [(-lo, -hi) for lo, hi in pairs], 0)

    def avg_pool(
        self, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None
    ):
        spatial = x.shape[2:]
        ones = (1,) * len(kernel)
        out, pairs = pool_geometry(spatial, kernel, stride, padding, ones, ceil_mode)
        acc = _window_reduce(np.add, _pad(x, pairs, 0), kernel, out, stride, ones)
        if divisor_override:
            return acc / x.dtype.type(divisor_override)
        div = np.ones((), dtype=np.int64)
        for args in zip(spatial, out, kernel, stride, padding):
            div = np.multiply.outer(div, np.array(avg_pool_divisors(*args, count_include_pad)))
        return acc / div.astype(x.dtype)

    # ------------------------------------------------------------------ normalisation
    def layer_norm(self, x, normalized_ndim, weight, bias, eps):
        axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
        with quiet():
            y = x - x.mean(axis=axes, keepdims=True)
            size = math.prod(x.shape[x.ndim - normalized_ndim:])
            if x.dtype in (np.float32, np.float64) and size and y.size:
                # the variance as one dot per row (no squared temporary), y scaled in place
                rows = y.reshape(-1, size)
                kept = y.shape[:y.ndim - normalized_ndim] + (1,) * normalized_ndim
                var = np.einsum("ij,ij->i", rows, rows).reshape(kept)
                var /= x.dtype.type(size)
                var += x.dtype.type(eps)
                np.sqrt(var, out=var)
                y /= var
            else:
                var = np.mean(y * y, axis=axes, keepdims=True)
                y = y * (1 / np.sqrt(var + x.dtype.type(eps)))
            if weight is not None:
                y *= weight
            if bias is not None:
                y += bias
        return y

    # ------------------------------------------------------------------ activations
    def relu(self, x):
        return np.maximum(x, x.dtype.type(0))

    def gelu(self, x, approximate="none"):
        return blocked(lambda b: self._gelu(b, approximate), x)

    def _gelu(self, x, approximate):
        # in place on one fresh array after the first step (each temporary costs a pass)
        t = x.dtype.type
        with quiet():
            if approximate == "tanh":
                y = x * x
                y *= t(0.044715)
                y += t(1)
                y *= x
                y *= t(math.sqrt(2.0 / math.pi))
                np.tanh(y, out=y)
            else:
                y = self.float_erf(x * t(1.0 / math.sqrt(2.0)))
            y += t(1)
            y *= x
            y *= t(0.5)
            return y

    def silu(self, x):
        with quiet():
            return x / (x.dtype.type(1) + np.exp(-x))

    def softmax(self, x, dim):
        with quiet():
            e = np.subtract(x, x.max(axis=dim, keepdims=True))
            np.exp(e, out=e)
            e /= e.sum(axis=dim, keepdims=True)
        return e

    def log_softmax(self, x, dim):
        with quiet():
            shifted = x - x.max(axis=dim, keepdims=True)
            return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def _window_reduce(ufunc, xp, kernel, out, stride, dilation):
    """``ufunc`` (np.maximum, np.add) over every window tap of the padded input ``xp``."""
    if ufunc is np.maximum and len(kernel) > 1:
        return _separable_max(xp, kernel, out, stride, dilation)
    acc = None
    for _, index in _taps(kernel, out, stride, dilation):
        if acc is None:
            acc = xp[index].copy(order="K")  # keep x's memory order
        else:
            ufunc(acc, xp[index], out=acc)
    return acc


def _separable_max(xp, kernel, out, stride, dilation):
    """Max over the windows one spatial dim at a time: a kh x kw window's kh * kw passes
    become kh + kw, the first over whole contiguous rows (max is exact in any order;
    3x3 stride-2 max pool on (1, 16, 224, 224): 2.0 -> 1.1 ms)."""
    acc = xp
    first = xp.ndim - len(kernel)
    for ax, (k, n, s, d) in enumerate(zip(kernel, out, stride, dilation), start=first):
        lead = (slice(None),) * ax
        r = acc[lead + (slice(0, (n - 1) * s + 1, s),)].copy(order="K")
        for o in range(1, k):
            np.maximum(r, acc[lead + (slice(o * d, o * d + (n - 1) * s + 1, s),)], out=r)
        acc = r
    return acc
