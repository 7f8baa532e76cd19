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
from numpy.lib.stride_tricks import sliding_window_view

from ..backend.module_ops import avg_pool_divisors, pool_output_size

_QUIET = {"divide": "ignore", "invalid": "ignore", "over": "ignore", "under": "ignore"}


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
    return np.pad(x, ((0, 0),) * lead + tuple(tuple(p) for p in pairs), constant_values=value)


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


class NumpyNNOps:
    # ------------------------------------------------------------------ convolution
    def conv(self, x, weight, bias, stride, padding, dilation, groups):
        nd = len(stride)
        kernel = weight.shape[2:]
        c_out = weight.shape[0]
        n, c = x.shape[:2]
        x = _pad(x, padding, 0)
        spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        spatial_axes = tuple(range(2, 2 + nd))
        win = sliding_window_view(x, spans, axis=spatial_axes)  # (N, C, *L, *spans)
        win = win[
            (slice(None), slice(None))
            + tuple(slice(None, None, s) for s in stride)
            + tuple(slice(None, None, d) for d in dilation)
        ]  # (N, C, *out, *kernel)
        out = win.shape[2 : 2 + nd]
        taps, positions, cg = math.prod(kernel), math.prod(out), c // groups
        if taps == 1 and groups == 1:
            # pointwise: no im2col at all, one (C_out, C) @ (C, positions) per sample
            xs = np.ascontiguousarray(win.reshape(n, c, positions))
            y = np.matmul(weight.reshape(c_out, c), xs).reshape((n, c_out) + out)
        else:
            y = self._conv_gemm(win, weight, n, c, c_out, out, taps, positions, groups, nd)
        if bias is not None:
            y += bias.reshape((1, c_out) + (1,) * nd)
        return y

    @staticmethod
    def _conv_gemm(win, weight, n, c, c_out, out, taps, positions, groups, nd):
        spatial_axes = tuple(range(2, 2 + nd))
        cg = c // groups
        # the one copy (im2col), laid out (g, C_g * taps, N * positions): one GEMM per group
        # (a matmul batched over N calls BLAS N times on small matrices: much slower)
        cols = win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + spatial_axes)
        cols = cols.reshape(groups, cg * taps, n * positions)
        w = weight.reshape(groups, c_out // groups, cg * taps)
        y = np.matmul(w, cols).reshape(groups, c_out // groups, n, positions)
        return y.transpose(2, 0, 1, 3).reshape((n, c_out) + out)

    def conv_transpose(self, x, weight, bias, stride, padding, output_padding, dilation, groups):
        nd = len(stride)
        n, c_in = x.shape[:2]
        spatial = x.shape[2:]
        c_out_g, kernel = weight.shape[1], weight.shape[2:]
        cig, c_out = c_in // groups, c_out_g * groups
        positions = math.prod(spatial)
        xs = x.reshape(n, groups, cig, positions).transpose(1, 2, 0, 3)
        xs = xs.reshape(groups, cig, n * positions)  # one GEMM per group, as in conv
        w = weight.reshape(groups, cig, c_out_g * math.prod(kernel)).transpose(0, 2, 1)
        cols = np.matmul(w, xs).reshape((groups, c_out_g, math.prod(kernel), n, positions))
        cols = cols.transpose(3, 0, 1, 2, 4).reshape((n, c_out) + tuple(kernel) + tuple(spatial))
        natural = [
            (s - 1) * st + d * (k - 1) + 1 for s, st, d, k in zip(spatial, stride, dilation, kernel)
        ]
        size = [length + max(0, op - p) for length, op, p in zip(natural, output_padding, padding)]
        y = np.zeros((n, c_out) + tuple(size), dtype=x.dtype)
        for offsets, index in _taps(kernel, spatial, stride, dilation):
            y[index] += cols[(slice(None), slice(None)) + offsets]
        crop = tuple(
            slice(p, length - p + op) for p, length, op in zip(padding, natural, output_padding)
        )
        y = y[(Ellipsis,) + crop]
        if bias is not None:
            y = y + bias.reshape((1, c_out) + (1,) * nd)
        return y

    # ------------------------------------------------------------------ pooling
    def max_pool(self, x, kernel, stride, padding, dilation, ceil_mode):
        spatial = x.shape[2:]
        out = tuple(
            pool_output_size(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, dilation)
        )
        pairs = [
            (p, max(p, (o - 1) * s + d * (k - 1) + 1 - size - p))
            for size, o, k, s, p, d in zip(spatial, out, kernel, stride, padding, dilation)
        ]
        xp = _pad(x, pairs, -np.inf)
        acc = None
        for _, index in _taps(kernel, out, stride, dilation):
            if acc is None:
                acc = xp[index].copy()
            else:
                np.maximum(acc, xp[index], out=acc)
        return acc

    def avg_pool(
        self, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None
    ):
        spatial = x.shape[2:]
        ones = (1,) * len(kernel)
        out = tuple(
            pool_output_size(*a, 1, ceil_mode) for a in zip(spatial, kernel, stride, padding)
        )
        pairs = [
            (p, max(p, (o - 1) * s + k - size - p))
            for size, o, k, s, p in zip(spatial, out, kernel, stride, padding)
        ]
        xp = _pad(x, pairs, 0)
        acc = None
        for _, index in _taps(kernel, out, stride, ones):
            if acc is None:
                acc = xp[index].copy()
            else:
                np.add(acc, xp[index], out=acc)
        if divisor_override:
            return acc / x.dtype.type(divisor_override)
        div = np.ones((), dtype=np.int64)
        for args in zip(spatial, out, kernel, stride, padding):
            div = np.multiply.outer(div, np.array(avg_pool_divisors(*args, count_include_pad)))
        return acc / div.astype(x.dtype)

    # ------------------------------------------------------------------ normalisation
    def layer_norm(self, x, normalized_ndim, weight, bias, eps):
        axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
        with np.errstate(**_QUIET):
            centred = x - x.mean(axis=axes, keepdims=True)
            var = np.mean(centred * centred, axis=axes, keepdims=True)
            y = centred * (1 / np.sqrt(var + x.dtype.type(eps)))
            if weight is not None:
                y *= weight
            if bias is not None:
                y += bias
        return y

    # ------------------------------------------------------------------ activations
    def relu(self, x):
        return np.maximum(x, x.dtype.type(0))

    def gelu(self, x, approximate="none"):
        t = x.dtype.type
        with np.errstate(**_QUIET):
            if approximate == "tanh":
                inner = (x + x * x * x * t(0.044715)) * t(math.sqrt(2.0 / math.pi))
                return x * (np.tanh(inner) + t(1)) * t(0.5)
            return x * (self.float_erf(x * t(1.0 / math.sqrt(2.0))) + t(1)) * t(0.5)

    def silu(self, x):
        with np.errstate(**_QUIET):
            return x / (x.dtype.type(1) + np.exp(-x))

    def softmax(self, x, dim):
        with np.errstate(**_QUIET):
            e = np.exp(x - x.max(axis=dim, keepdims=True))
            e /= e.sum(axis=dim, keepdims=True)
        return e

    def log_softmax(self, x, dim):
        with np.errstate(**_QUIET):
            shifted = x - x.max(axis=dim, keepdims=True)
            return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
