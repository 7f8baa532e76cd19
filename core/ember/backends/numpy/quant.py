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

#: (ids of arrays, what) -> (weak references to them, a value made from them)
_DERIVED: dict[tuple, tuple[tuple[weakref.ref, ...], object]] = {}


def exact_k(unsigned: bool) -> int:
    """The longest sum of code products float32 holds exactly."""
    return (1 << 24) // (code_range(unsigned)[1] * LEVELS)


def _is_codes(x: np.ndarray) -> bool:
    """An int8/uint8 input is codes from the layer before (the contract's "codes between
    layers"), used as they are."""
    return x.dtype in (np.int8, np.uint8)


def _derived(arrays: tuple[np.ndarray, ...], what, make):
    """``make(*arrays)``, made once while the arrays live: a backend's primitives are never
    written in place (a quantized layer's buffers are replaced when a record is loaded)."""
    key = (tuple(map(id, arrays)), what)
    hit = _DERIVED.get(key)
    if hit is not None and all(r() is a for r, a in zip(hit[0], arrays)):
        return hit[1]
    value = make(*arrays)
    refs = tuple(weakref.ref(a, lambda _, k=key: _DERIVED.pop(k, None)) for a in arrays)
    _DERIVED[key] = (refs, value)
    return value


def _float_codes(weight: np.ndarray) -> np.ndarray:
    """``weight`` (int8) as float32."""
    return _derived((weight,), "float32", lambda w: w.astype(np.float32))


def _centring(weight: np.ndarray, lead: int) -> np.ndarray:
    """What centred input codes leave out of each output channel's sums: 128 × the sum of
    its weight codes, float64, shaped to add onto sums with ``lead`` trailing dims."""
    def make(w):
        return 128.0 * w.reshape(len(w), -1).sum(axis=1, dtype=np.float64).reshape(
            (-1,) + (1,) * lead)

    return _derived((weight,), f"centring{lead}", make)


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
    if x.size <= CHUNK:  # one step: no chunk bookkeeping (a small layer's calls add up)
        return _rounded(np.divide(x, s, out=np.empty_like(x)), lo, hi, unsigned)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    work = None if unsigned else np.empty(CHUNK, dtype=flat.dtype)
    for start in range(0, flat.size, CHUNK):
        v = np.divide(flat[start:start + CHUNK], s, out=out[start:start + CHUNK])
        _rounded(v, lo, hi, unsigned, None if unsigned else work[:v.size])
    return out.reshape(x.shape)


def _rounded(v: np.ndarray, lo: int, hi: int, unsigned: bool, work=None) -> np.ndarray:
    """``v`` rounded half away from zero and clamped to ``[lo, hi]``, in place (``work``:
    room for the signs' halves, else made)."""
    half = v.dtype.type(0.5)
    if unsigned:
        v += half
        np.floor(v, out=v)
    else:
        v += np.copysign(half, v, out=work)
        np.trunc(v, out=v)
    return v.clip(lo, hi, out=v)  # the method: np.clip's dispatch costs ~1 µs a call


def _requantize(acc: np.ndarray, w_scale, bias, in_scale, out_scale, out_lo: int,
                out_hi: int, axis: int) -> np.ndarray:
    """The sums ``acc`` as codes at ``out_scale`` (the contract's ``v = acc * m + c``,
    rounded half away from zero, clamped): unsigned, three passes (the clamp writes the
    uint8 codes, truncating)."""
    unsigned = out_lo >= 0
    m, c = _derived((w_scale, bias, in_scale, out_scale), (unsigned, acc.ndim, axis),
                    lambda *arrays: _factors(*arrays, unsigned, acc.ndim, axis))
    v = acc.astype(m.dtype, copy=False)
    v *= m
    v += c
    if unsigned:  # v >= 0 after the clamp: c holds the + 0.5, and the uint8 cast truncates
        return v.clip(out_lo, out_hi, out=np.empty(v.shape, np.uint8), casting="unsafe")
    return _rounded(v, out_lo, out_hi, False).astype(np.int8)


def _factors(w_scale, bias, in_scale, out_scale, unsigned: bool, ndim: int, axis: int):
    """The requantization's ``m = in_scale * w_scale / out_scale`` and ``c = bias /
    out_scale`` per channel (unsigned: ``c + 0.5``, the rounding's half folded in), shaped
    to broadcast along ``axis`` of ``ndim`` dims."""
    shape = [1] * ndim
    shape[axis] = -1
    m = (in_scale[0] * w_scale) / out_scale[0]
    c = bias / out_scale[0]
    if unsigned:
        c += m.dtype.type(0.5)
    return m.reshape(shape), c.reshape(shape)


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
