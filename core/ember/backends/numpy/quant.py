"""The quantized ops on numpy: integer-exact products through float32 BLAS.

int8 codes times int8 codes summed over K stay integers below ``K * 127**2`` (unsigned input
codes: ``K * 255 * 127``); float32 holds every integer below 2**24 exactly, so a float32 GEMM
(any summation order) is exact while the bound stays below 2**24 (K <= 1040, unsigned
K <= 518), and much faster than numpy's integer matmul (no BLAS). Longer unsigned sums read
the codes centred, ``code - 128`` in [-128, 127] (exact to K = 1032), and add 128 × the
weight's sums back. Longer sums still are split into near-equal chunks of K that each stay
exact, added in float64 (exact too). The weight codes' float32 copy and sums are made once
per weight array and kept while the array lives.
Semantics: :mod:`ember.contract.quantized`.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ...contract.quantized import LEVELS, code_range
from .nn import _pad

#: elements quantized per step: the passes over a chunk stay in the L2 cache
CHUNK = 1 << 14

#: the longest exact float32 sum of products of centred codes (within ±128) and weight codes
CENTRED_K = (1 << 24) // (128 * LEVELS)

#: (id(weight codes), what) -> (a weak reference to them, a value made from them)
_DERIVED: dict[tuple[int, str], tuple[weakref.ref, np.ndarray]] = {}


def exact_k(unsigned: bool) -> int:
    """The longest sum of code products float32 holds exactly."""
    return (1 << 24) // (code_range(unsigned)[1] * LEVELS)


def _is_codes(x: np.ndarray) -> bool:
    """An int8/uint8 input is codes from the layer before (the contract's "codes between
    layers"), used as they are."""
    return x.dtype in (np.int8, np.uint8)


def _derived(weight: np.ndarray, what: str, make) -> np.ndarray:
    """``make(weight)``, made once while the array lives (a quantized layer's weight buffer
    is replaced, never written in place, when a record is loaded)."""
    key = (id(weight), what)
    hit = _DERIVED.get(key)
    if hit is not None and hit[0]() is weight:
        return hit[1]
    value = make(weight)
    _DERIVED[key] = (weakref.ref(weight, lambda _, k=key: _DERIVED.pop(k, None)), value)
    return value


def _float_codes(weight: np.ndarray) -> np.ndarray:
    """``weight`` (int8) as float32."""
    return _derived(weight, "float32", lambda w: w.astype(np.float32))


def _centring(weight: np.ndarray, lead: int) -> np.ndarray:
    """What centred input codes leave out of each output channel's sums: 128 × the sum of
    its weight codes, float64, shaped to add onto sums with ``lead`` trailing dims."""
    def make(w):
        return 128.0 * w.reshape(len(w), -1).sum(axis=1, dtype=np.float64).reshape(
            (-1,) + (1,) * lead)

    return _derived(weight, f"centring{lead}", make)


def _chunk(k: int, limit: int) -> int:
    """The length of near-equal chunks of ``k``, each at most ``limit``."""
    return -(-k // -(-k // limit))


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
        v.clip(lo, hi, out=v)  # the method: np.clip's dispatch costs ~1 µs a call
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
        return v.clip(out_lo, out_hi, out=np.empty(v.shape, np.uint8), casting="unsafe")
    v += c.reshape(shape)
    v += np.copysign(m.dtype.type(0.5), v)
    np.trunc(v, out=v)
    v.clip(out_lo, out_hi, out=v)
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
        """The exact sums, (rows, N), float32 (float64 when centred or split)."""
        k = x.shape[-1]
        unsigned = unsigned if not _is_codes(x) else x.dtype == np.uint8
        rows = math.prod(x.shape[:-1])  # not reshape(-1, k): k may be 0
        q = _codes(x.reshape(rows, k), in_scale, unsigned).astype(np.float32, copy=False)
        w = _float_codes(weight)
        centred = unsigned and k > exact_k(True)
        if centred:
            q -= 128  # q is a new array (_codes' result)
        step = _chunk(k, CENTRED_K if centred else exact_k(unsigned))
        if k <= step:
            acc = q @ w.T
        else:
            acc = np.zeros((q.shape[0], w.shape[0]))
            for s in range(0, k, step):
                acc += q[:, s:s + step] @ w[:, s:s + step].T
        return acc + _centring(weight, 0) if centred else acc

    def _conv_acc(self, x, weight, in_scale, stride, padding, dilation, groups, unsigned):
        """The exact sums, (N, C_out, ...), float32 (float64 when centred or split)."""
        unsigned = unsigned if not _is_codes(x) else x.dtype == np.uint8
        q = _codes(x, in_scale, unsigned).astype(np.float32, copy=False)
        w = _float_codes(weight)
        c = w.shape[1]
        taps = math.prod(w.shape[2:])
        centred = unsigned and groups == 1 and c * taps > exact_k(True)
        if centred:  # padded with code 0 first: centred, the padding is -128
            q = _pad(q, padding, 0)
            q -= 128  # a new array: _codes' result or the padded copy
            padding = tuple((0, 0) for _ in padding)
        limit = CENTRED_K if centred else exact_k(unsigned)
        if c * taps <= limit:
            acc = self.conv(q, w, None, stride, padding, dilation, groups)
        elif groups == 1:
            step = _chunk(c, max(1, limit // taps))
            acc = sum(self.conv(q[:, s:s + step], w[:, s:s + step], None, stride, padding,
                                dilation, 1).astype(np.float64) for s in range(0, c, step))
        else:  # grouped with long sums: float64 is exact up to 2**53
            acc = self.conv(q.astype(np.float64), w.astype(np.float64), None, stride,
                            padding, dilation, groups)
        return acc + _centring(weight, q.ndim - 2) if centred else acc
