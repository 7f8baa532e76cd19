"""The quantized ops on numpy: integer-exact products through float32 BLAS.

int8 codes times int8 codes summed over K stay integers below ``K * 127**2``; float32 holds
every integer below 2**24 exactly, so a float32 GEMM (any summation order) is exact while
``K * 127**2 < 2**24`` (K <= 1040), and much faster than numpy's integer matmul (no BLAS).
Longer sums are split into chunks of K that each stay exact, added in float64 (exact too).
Semantics: :mod:`ember.contract.quantized`.
"""

from __future__ import annotations

import numpy as np

from ...contract.quantized import LEVELS

#: the longest sum of int8 products float32 holds exactly
EXACT_K = (1 << 24) // (LEVELS * LEVELS)


#: elements quantized per step: the six passes over a chunk stay in the L2 cache
CHUNK = 1 << 14


def _codes(x: np.ndarray, in_scale: np.ndarray) -> np.ndarray:
    s = in_scale.reshape(())
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    work = np.empty(min(CHUNK, flat.size), dtype=flat.dtype)
    half = flat.dtype.type(0.5)
    for start in range(0, flat.size, CHUNK):
        v = np.divide(flat[start:start + CHUNK], s, out=out[start:start + CHUNK])
        a = np.abs(v, out=work[:v.size])
        a += half
        np.floor(a, out=a)
        np.minimum(a, LEVELS, out=a)
        np.copysign(a, v, out=v)
    return out.reshape(x.shape)


def _rescale(acc: np.ndarray, w_scale, bias, in_scale, axis: int, dtype) -> np.ndarray:
    shape = [1] * acc.ndim
    shape[axis] = -1
    y = acc.astype(dtype, copy=False)
    y *= (w_scale * in_scale.reshape(())).reshape(shape)
    if bias is not None:
        y += bias.reshape(shape)
    return y


class NumpyQuantOps:
    """``qlinear`` and ``qconv`` (a mixin of the numpy backend)."""

    def qlinear(self, x, weight, w_scale, bias, in_scale):
        k = x.shape[-1]
        q = _codes(x.reshape(-1, k), in_scale).astype(np.float32, copy=False)
        w = weight.astype(np.float32)
        if k <= EXACT_K:
            acc = q @ w.T
        else:
            acc = np.zeros((q.shape[0], w.shape[0]))
            for s in range(0, k, EXACT_K):
                acc += q[:, s:s + EXACT_K] @ w[:, s:s + EXACT_K].T
        y = _rescale(acc, w_scale, bias, in_scale, 1, x.dtype)
        return y.reshape(x.shape[:-1] + (w.shape[0],))

    def qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        q = _codes(x, in_scale).astype(np.float32, copy=False)
        w = weight.astype(np.float32)
        c = w.shape[1]
        taps = int(np.prod(w.shape[2:]))
        if c * taps <= EXACT_K:
            acc = self.conv(q, w, None, stride, padding, dilation, groups)
        elif groups == 1:
            step = max(1, EXACT_K // taps)
            acc = sum(self.conv(q[:, s:s + step], w[:, s:s + step], None, stride, padding,
                                dilation, 1).astype(np.float64) for s in range(0, c, step))
        else:  # grouped with long sums: float64 is exact up to 2**53
            acc = self.conv(q.astype(np.float64), w.astype(np.float64), None, stride, padding,
                            dilation, groups)
        return _rescale(acc, w_scale, bias, in_scale, 1, x.dtype)
