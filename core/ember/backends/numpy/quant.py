"""The quantized ops on numpy: integer-exact products through float32 BLAS.

int8 codes times int8 codes summed over K stay integers below ``K * 127**2`` (unsigned input
codes: ``K * 255 * 127``); float32 holds every integer below 2**24 exactly, so a float32 GEMM
(any summation order) is exact while the bound stays below 2**24 (K <= 1040, unsigned
K <= 518), and much faster than numpy's integer matmul (no BLAS). Longer sums are split into
chunks of K that each stay exact, added in float64 (exact too). The weight codes' float32
copy is made once per weight array and kept while the array lives.
Semantics: :mod:`ember.contract.quantized`.
"""

from __future__ import annotations

import weakref

import numpy as np

from ...contract.quantized import LEVELS, code_range

#: elements quantized per step: the passes over a chunk stay in the L2 cache
CHUNK = 1 << 14

#: id(weight codes) -> (a weak reference to them, their float32 copy)
_FLOAT_CODES: dict[int, tuple[weakref.ref, np.ndarray]] = {}


def exact_k(unsigned: bool) -> int:
    """The longest sum of code products float32 holds exactly."""
    return (1 << 24) // (code_range(unsigned)[1] * LEVELS)


def _float_codes(weight: np.ndarray) -> np.ndarray:
    """``weight`` (int8) as float32, converted once while the array lives (a quantized
    layer's weight buffer is replaced, never written in place, when a record is loaded)."""
    key = id(weight)
    hit = _FLOAT_CODES.get(key)
    if hit is not None and hit[0]() is weight:
        return hit[1]
    w = weight.astype(np.float32)
    _FLOAT_CODES[key] = (weakref.ref(weight, lambda _, k=key: _FLOAT_CODES.pop(k, None)), w)
    return w


def _codes(x: np.ndarray, in_scale: np.ndarray, unsigned: bool = False) -> np.ndarray:
    """The input codes as integer-valued floats of ``x``'s dtype (the contract: half away
    from zero, clamped to the range): ``trunc(v + copysign(0.5, v))`` is
    ``sign(v) * floor(|v| + 0.5)`` (IEEE rounding is symmetric), one pass less; unsigned codes clamp at 0, so ``floor(v + 0.5)`` suffices."""
    s = in_scale.reshape(())
    lo, hi = code_range(unsigned)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    work = None if unsigned else np.empty(min(CHUNK, flat.size), dtype=flat.dtype)
    half = flat.dtype.type(0.5)
    for start in range(0, flat.size, CHUNK):
        v = np.divide(flat[start:start + CHUNK], s, out=out[start:start + CHUNK])
        if unsigned:
            v += half
            np.floor(v, out=v)
        else:
            v += np.copysign(half, v, out=work[:v.size])
            np.trunc(v, out=v)
        np.clip(v, lo, hi, out=v)
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
    """``qlinear``, ``qconv`` and their unsigned twins ``*_u8`` (a mixin of the numpy
    backend)."""

    def qlinear(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear(x, weight, w_scale, bias, in_scale, False)

    def qlinear_u8(self, x, weight, w_scale, bias, in_scale):
        return self._qlinear(x, weight, w_scale, bias, in_scale, True)

    def qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        return self._qconv(x, weight, w_scale, bias, in_scale, stride, padding, dilation,
                           groups, False)

    def qconv_u8(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups):
        return self._qconv(x, weight, w_scale, bias, in_scale, stride, padding, dilation,
                           groups, True)

    def _qlinear(self, x, weight, w_scale, bias, in_scale, unsigned):
        k = x.shape[-1]
        q = _codes(x.reshape(-1, k), in_scale, unsigned).astype(np.float32, copy=False)
        w = _float_codes(weight)
        step = exact_k(unsigned)
        if k <= step:
            acc = q @ w.T
        else:
            acc = np.zeros((q.shape[0], w.shape[0]))
            for s in range(0, k, step):
                acc += q[:, s:s + step] @ w[:, s:s + step].T
        y = _rescale(acc, w_scale, bias, in_scale, 1, x.dtype)
        return y.reshape(x.shape[:-1] + (w.shape[0],))

    def _qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups,
               unsigned):
        q = _codes(x, in_scale, unsigned).astype(np.float32, copy=False)
        w = _float_codes(weight)
        c = w.shape[1]
        taps = int(np.prod(w.shape[2:]))
        limit = exact_k(unsigned)
        if c * taps <= limit:
            acc = self.conv(q, w, None, stride, padding, dilation, groups)
        elif groups == 1:
            step = max(1, limit // taps)
            acc = sum(self.conv(q[:, s:s + step], w[:, s:s + step], None, stride, padding,
                                dilation, 1).astype(np.float64) for s in range(0, c, step))
        else:  # grouped with long sums: float64 is exact up to 2**53
            acc = self.conv(q.astype(np.float64), w.astype(np.float64), None, stride, padding,
                            dilation, groups)
        return _rescale(acc, w_scale, bias, in_scale, 1, x.dtype)
