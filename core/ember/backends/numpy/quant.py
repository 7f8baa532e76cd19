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

import math
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


def _is_codes(x: np.ndarray) -> bool:
    """An int8/uint8 input is codes from the layer before (the contract's "codes between
    layers"), used as they are."""
    return x.dtype in (np.int8, np.uint8)


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
    if _is_codes(x):
        return x.astype(in_scale.dtype)
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


def _requantize(acc: np.ndarray, w_scale, bias, in_scale, out_scale, out_lo: int,
                out_hi: int, axis: int) -> np.ndarray:
    """The sums ``acc`` as codes at ``out_scale`` (the contract's ``v = acc * m + c``,
    rounded half away from zero, clamped): unsigned, three passes (the clamp writes the
    uint8 codes, truncating)."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    m = (in_scale[0] * w_scale) / out_scale[0]
    c = bias / out_scale[0]
    v = acc.astype(m.dtype, copy=False)
    v *= m.reshape(shape)
    if out_lo >= 0:  # v >= 0 after the clamp: floor(v + 0.5), and the uint8 cast truncates
        c += m.dtype.type(0.5)
        v += c.reshape(shape)
        return np.clip(v, out_lo, out_hi, out=np.empty(v.shape, np.uint8), casting="unsafe")
    v += c.reshape(shape)
    v += np.copysign(m.dtype.type(0.5), v)
    np.trunc(v, out=v)
    np.clip(v, out_lo, out_hi, out=v)
    return v.astype(np.int8)


def _rescale(acc: np.ndarray, w_scale, bias, in_scale, axis: int, dtype) -> np.ndarray:
    shape = [1] * acc.ndim
    shape[axis] = -1
    y = acc.astype(dtype, copy=False)
    y *= (w_scale * in_scale.reshape(())).reshape(shape)
    if bias is not None:
        y += bias.reshape(shape)
    return y


class NumpyQuantOps:
    """``qlinear``, ``qconv``, their unsigned twins ``*_u8`` and the code-output
    ``qlinear_q``/``qconv_q`` (a mixin of the numpy backend)."""

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

    def qlinear_q(self, x, weight, w_scale, bias, in_scale, out_scale, unsigned, out_lo,
                  out_hi):
        acc = self._linear_acc(x, weight, in_scale, unsigned)
        q = _requantize(acc, w_scale, bias, in_scale, out_scale, out_lo, out_hi, 1)
        return q.reshape(x.shape[:-1] + (weight.shape[0],))

    def qconv_q(self, x, weight, w_scale, bias, in_scale, out_scale, stride, padding,
                dilation, groups, unsigned, out_lo, out_hi):
        acc = self._conv_acc(x, weight, in_scale, stride, padding, dilation, groups, unsigned)
        return _requantize(acc, w_scale, bias, in_scale, out_scale, out_lo, out_hi, 1)

    def _qlinear(self, x, weight, w_scale, bias, in_scale, unsigned):
        acc = self._linear_acc(x, weight, in_scale, unsigned)
        y = _rescale(acc, w_scale, bias, in_scale, 1, w_scale.dtype)
        return y.reshape(x.shape[:-1] + (weight.shape[0],))

    def _qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups,
               unsigned):
        acc = self._conv_acc(x, weight, in_scale, stride, padding, dilation, groups, unsigned)
        return _rescale(acc, w_scale, bias, in_scale, 1, w_scale.dtype)

    def _linear_acc(self, x, weight, in_scale, unsigned):
        """The exact sums, (rows, N), float32 (float64 when split)."""
        k = x.shape[-1]
        unsigned = unsigned if not _is_codes(x) else x.dtype == np.uint8
        rows = math.prod(x.shape[:-1])  # not reshape(-1, k): k may be 0
        q = _codes(x.reshape(rows, k), in_scale, unsigned).astype(np.float32, copy=False)
        w = _float_codes(weight)
        step = exact_k(unsigned)
        if k <= step:
            return q @ w.T
        acc = np.zeros((q.shape[0], w.shape[0]))
        for s in range(0, k, step):
            acc += q[:, s:s + step] @ w[:, s:s + step].T
        return acc

    def _conv_acc(self, x, weight, in_scale, stride, padding, dilation, groups, unsigned):
        """The exact sums, (N, C_out, ...), float32 (float64 when split)."""
        unsigned = unsigned if not _is_codes(x) else x.dtype == np.uint8
        q = _codes(x, in_scale, unsigned).astype(np.float32, copy=False)
        w = _float_codes(weight)
        c = w.shape[1]
        taps = math.prod(w.shape[2:])
        limit = exact_k(unsigned)
        if c * taps <= limit:
            return self.conv(q, w, None, stride, padding, dilation, groups)
        if groups == 1:
            step = max(1, limit // taps)
            return sum(self.conv(q[:, s:s + step], w[:, s:s + step], None, stride, padding,
                                 dilation, 1).astype(np.float64) for s in range(0, c, step))
        # grouped with long sums: float64 is exact up to 2**53
        return self.conv(q.astype(np.float64), w.astype(np.float64), None, stride, padding,
                         dilation, groups)
