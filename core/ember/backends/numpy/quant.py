"""The quantized ops on numpy: integer-exact products through float32 BLAS.

float32 holds every integer up to 2**24 exactly, so a float32 GEMM of codes (any summation
order, fused multiply-adds included) is exact while every partial sum stays within 2**24: at
most the largest input code (127, unsigned 255) times the largest sum of ``|weight codes|``
over one output channel (at most ``K * 127``, far less for most trained or random weights).
That is much faster than numpy's integer matmul (no BLAS). Unsigned codes whose bound is too
large are read centred, ``code - 128`` in [-128, 127], and 128 × the weight's sums added back;
sums longer still are split into near-equal chunks of K that each stay exact (by the K bound),
added in float64 (exact too). What a layer's calls derive from its arrays (float32 weight
codes, the bound, the requantization factors) is made once per set of arrays and kept while
they live.

A 2-d stride-1 convolution reads its input codes laid out flat and zero-padded per channel:
each kernel tap's inputs for a whole *widened* output (rows as wide as the padded input) are
one contiguous run, so the im2col copy is a few long runs; the quantization writes its codes
straight into that padded layout. Codes out are a view that leaves the widened columns out
(the next layer reads them where they lie); float results are copied out once.
Semantics: :mod:`ember.contract.quantized`.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ...contract.quantized import code_range
from ...contract.rounding import round_codes_np
from .nn import _TILED, _pad

#: elements quantized per step: the passes over a chunk stay in the L2 cache
CHUNK = 1 << 14

#: the largest magnitude up to which float32 holds every integer
EXACT = 1 << 24

#: a centred code's largest magnitude (``code - 128`` in [-128, 127])
CENTRED = 128

#: the longest exact float32 sum of products of centred codes and any weight codes
CENTRED_K = EXACT // (CENTRED * code_range(False)[1])

#: results of up to this many elements take per-channel factors spread over their shape
SPREAD = 1 << 15

#: ids of a layer's (weight, w_scale, bias, in_scale, out_scale) -> what they give
_LAYERS: dict[tuple[int, ...], _Layer] = {}


def exact_k(unsigned: bool) -> int:
    """The longest sum of code products float32 holds exactly whatever the weights."""
    return EXACT // (code_range(unsigned)[1] * code_range(False)[1])


def _is_codes(x: np.ndarray) -> bool:
    """An int8/uint8 input is codes from the layer before (the contract's "codes between
    layers"), used as they are."""
    return x.dtype.char in "bB"  # int8, uint8: the char compares ~5x faster than dtypes


class _Layer:
    """What a quantized layer's calls derive from its arrays: the weight codes as float32
    (``rows``: one per output channel), ``l1`` (the largest sum of ``|codes|`` over one output channel), 128 × each channel's
    sum of codes (what centred inputs leave out), the float results' ``in_scale * w_scale``
    and bias, and the code results' factors ``m``, ``c``; each reshaped once per layout.
    """

    __slots__ = ("codes", "rows", "l1", "centring", "centring32", "scale", "bias", "m", "c",
                 "_shaped", "convs", "refs")

    def __init__(self, weight, w_scale, bias, in_scale, out_scale=None):
        self.codes = weight.astype(np.float32)
        self.rows = self.codes.reshape(len(weight), math.prod(weight.shape[1:]))
        ints = weight.reshape(self.rows.shape).astype(np.int64)
        self.l1 = int(np.abs(ints).sum(axis=1).max(initial=0))
        self.centring = CENTRED * ints.sum(axis=1).astype(np.float64)
        self.centring32 = self.centring.astype(np.float32)  # exact where used: |.| <= 128 l1
        self.scale = w_scale * in_scale.reshape(())
        self.bias = None if bias is None else bias.copy()
        self.m = self.c = None
        if out_scale is not None:  # the contract's m = in_scale * w_scale / out_scale
            self.m = (in_scale[0] * w_scale) / out_scale[0]
            self.c = bias / out_scale[0]
        self._shaped: dict[tuple, tuple] = {}
        self.convs: dict[tuple, tuple] = {}  # a conv's plan per input shape and geometry

    def shaped(self, layout: tuple, codes: bool) -> tuple:
        """``(m, c)`` (``codes``) or ``(scale, bias)`` in ``layout``: ``(shape, full)``,
        reshaped to ``shape`` (-1 at the channels' dim), then, unless ``full`` is None,
        spread over that whole shape (numpy multiplies a small array by one of its own shape
        1.4x faster than by channels broadcast along rows: 2.9 against 4.0 us on 16 x 840)."""
        key = (layout, codes)
        hit = self._shaped.get(key)
        if hit is None:
            shape, full = layout
            a, b = (self.m, self.c) if codes else (self.scale, self.bias)
            hit = tuple(None if v is None else v.reshape(shape) if full is None
                        else np.broadcast_to(v.reshape(shape), full).copy() for v in (a, b))
            self._shaped[key] = hit
        return hit

    def clear_spread(self):
        """Forget the factors spread over results' shapes."""
        self._shaped = {k: v for k, v in self._shaped.items() if k[0][1] is None}


def _layer(weight, w_scale, bias, in_scale, out_scale=None) -> _Layer:
    """The :class:`_Layer` of these arrays, made once while they live (a backend's
    primitives are never written in place; a quantized layer's buffers are replaced when a
    record is loaded). The entry leaves when any of them dies, from its weak reference's
    callback, so while it is there its ids name those live arrays: no check needed."""
    key = (id(weight), id(w_scale), id(bias), id(in_scale), id(out_scale))
    layer = _LAYERS.get(key)
    if layer is None:
        layer = _Layer(weight, w_scale, bias, in_scale, out_scale)

        def forget(_, key=key):
            _LAYERS.pop(key, None)

        # kept by the layer: a weak reference's callback runs only while it lives itself
        layer.refs = tuple(weakref.ref(a, forget)
                           for a in (weight, w_scale, bias, in_scale, out_scale) if a is not None)
        _LAYERS[key] = layer
    return layer


def _plan(l1: int, k: int, unsigned: bool, may_centre: bool = True) -> tuple[bool, int]:
    """``(centred, step)``: whether to centre the unsigned input codes, and the length of
    the chunks of K summed in float32 (``k``: one GEMM)."""
    if code_range(unsigned)[1] * l1 <= EXACT:
        return False, k
    centred = unsigned and may_centre
    if centred and CENTRED * l1 <= EXACT:
        return True, k
    return centred, _chunk(k, CENTRED_K if centred else exact_k(unsigned))


def _chunk(k: int, limit: int) -> int:
    """The length of near-equal chunks of ``k``, each at most ``limit``."""
    return -(-k // -(-k // limit))


def _codes(x: np.ndarray, in_scale: np.ndarray, unsigned: bool = False) -> np.ndarray:
    """The input codes as integer-valued floats of ``x``'s dtype (the contract's
    ``round_code``)."""
    if _is_codes(x):
        return x.astype(in_scale.dtype)
    s = in_scale.reshape(())
    lo, hi = code_range(unsigned)
    if x.size <= CHUNK:  # one step: no chunk bookkeeping (a small layer's calls add up)
        return round_codes_np(np.divide(x, s, out=np.empty_like(x)), lo, hi)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    work = np.empty(CHUNK, dtype=flat.dtype)
    for start in range(0, flat.size, CHUNK):
        v = np.divide(flat[start:start + CHUNK], s, out=out[start:start + CHUNK])
        round_codes_np(v, lo, hi, work[:v.size])
    return out.reshape(x.shape)


def _same(v: np.ndarray) -> np.ndarray:
    """Results laid out as they are returned."""
    return v


def _requantize(acc: np.ndarray, factors: tuple, out_lo: int, out_hi: int,
                view=_same) -> np.ndarray:
    """The sums ``acc`` (a new array: written in place) as codes (the contract's ``v = acc *
    m + c`` as ``round_code`` gives it), as ``view`` shows them (a view of the codes: they go
    on to the next layer, which reads them wherever they lie; cropping them would be one more
    pass)."""
    m, c = factors
    v = acc.astype(m.dtype, copy=False)  # float64 sums: float(acc) in the scales' dtype
    v *= m
    v += c
    return view(round_codes_np(v, out_lo, out_hi).astype(np.uint8 if out_lo >= 0 else np.int8))


def _rescale(acc: np.ndarray, factors: tuple, dtype, view=_same) -> np.ndarray:
    """The float results ``acc * (in_scale * w_scale) + bias`` (``acc``, ``view``: as
    :func:`_requantize`), C-ordered."""
    scale, bias = factors
    y = acc.astype(dtype, copy=False)
    y *= scale
    if bias is not None:
        y += bias
    return np.ascontiguousarray(view(y))


def _centre(acc: np.ndarray, layer: _Layer, shape: tuple, dtype) -> np.ndarray:
    """Centred sums ``acc`` (float32, exact) plus what the centring left out (``layer``'s,
    reshaped to ``shape``), in ``dtype`` (the scales'): float32 adds the two exact terms
    rounded once, as ``float(acc)`` is; wider dtypes need the exact sum."""
    if acc.dtype == np.float32 and np.dtype(dtype).itemsize <= 4:
        return np.add(acc, layer.centring32.reshape(shape), out=acc)
    return acc + layer.centring.reshape(shape)


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
        layer = _layer(weight, w_scale, bias, in_scale, out_scale)
        acc = _linear_acc(x, layer, in_scale, unsigned, w_scale.dtype)
        q = _requantize(acc, layer.shaped(((1, -1), None), True), out_lo, out_hi)
        return q.reshape(x.shape[:-1] + (weight.shape[0],))

    def qconv_q(self, x, weight, w_scale, bias, in_scale, out_scale, stride, padding,
                dilation, groups, unsigned, out_lo, out_hi):
        layer = _layer(weight, w_scale, bias, in_scale, out_scale)
        acc, layout, view = self._conv_acc(x, layer, in_scale, stride, padding, dilation,
                                          groups, unsigned, w_scale.dtype)
        return _requantize(acc, layer.shaped(layout, True), out_lo, out_hi,
                           view)

    def _qlinear(self, x, weight, w_scale, bias, in_scale, unsigned):
        layer = _layer(weight, w_scale, bias, in_scale)
        acc = _linear_acc(x, layer, in_scale, unsigned, w_scale.dtype)
        y = _rescale(acc, layer.shaped(((1, -1), None), False), w_scale.dtype)
        return y.reshape(x.shape[:-1] + (weight.shape[0],))

    def _qconv(self, x, weight, w_scale, bias, in_scale, stride, padding, dilation, groups,
               unsigned):
        layer = _layer(weight, w_scale, bias, in_scale)
        acc, layout, view = self._conv_acc(x, layer, in_scale, stride, padding, dilation,
                                          groups, unsigned, w_scale.dtype)
        return _rescale(acc, layer.shaped(layout, False), w_scale.dtype, view)

    def _conv_acc(self, x, layer, in_scale, stride, padding, dilation, groups, unsigned,
                  dtype):
        """The exact sums (a new array): float32 (``dtype`` when centred, float64 when
        split); the layout of per-channel factors on them (:meth:`_Layer.shaped`); the view
        of results in their layout as (N, C_out, ...)."""
        unsigned = unsigned if not _is_codes(x) else x.dtype.char == "B"
        key = (x.shape, unsigned, stride, padding, dilation, groups)
        plan = layer.convs.get(key)
        if plan is None:  # the geometry's decisions, once per input shape
            if len(layer.convs) > 16:  # inputs of ever new shapes: no growing without end
                layer.convs.clear()
                layer.clear_spread()
            plan = layer.convs[key] = _conv_plan(x.shape, layer, unsigned, stride, padding,
                                                 dilation, groups)
        centred, step, widened = plan
        if widened is not None:
            return widened.acc(x, layer, in_scale, unsigned, centred, dtype)
        w = layer.codes
        c = w.shape[1]
        taps = math.prod(w.shape[2:])
        q = _codes(x, in_scale, unsigned).astype(np.float32, copy=False)
        if centred:  # padded with code 0 first: centred, the padding is -128
            q = _pad(q, padding, 0)
            q -= CENTRED  # a new array: _codes' result or the padded copy
            padding = tuple((0, 0) for _ in padding)
        if step == c * taps:
            acc = self.conv(q, w, None, stride, padding, dilation, groups)
        elif groups == 1:
            step = _chunk(c, max(1, step // taps))
            acc = sum(self.conv(q[:, s:s + step], w[:, s:s + step], None, stride, padding,
                                dilation, 1).astype(np.float64) for s in range(0, c, step))
        else:  # grouped with long sums: float64 is exact up to 2**53
            acc = self.conv(q.astype(np.float64), w.astype(np.float64), None, stride,
                            padding, dilation, groups)
        shape = (-1,) + (1,) * (q.ndim - 2)
        if centred:
            acc = _centre(acc, layer, shape, dtype)
        return acc, ((1,) + shape, acc.shape if acc.size <= SPREAD else None), _same


def _linear_acc(x, layer, in_scale, unsigned, dtype):
    """The exact sums, (rows, N): float32 (``dtype`` when centred, float64 when split)."""
    k = x.shape[-1]
    unsigned = unsigned if not _is_codes(x) else x.dtype.char == "B"
    rows = math.prod(x.shape[:-1])  # not reshape(-1, k): k may be 0
    q = _codes(x.reshape(rows, k), in_scale, unsigned).astype(np.float32, copy=False)
    w = layer.codes
    centred, step = _plan(layer.l1, k, unsigned)
    if centred:
        q -= CENTRED  # q is a new array (_codes' result)
    if k <= step:
        acc = q @ w.T
    else:
        acc = np.zeros((q.shape[0], w.shape[0]))
        for s in range(0, k, step):
            acc += q[:, s:s + step] @ w[:, s:s + step].T
    return _centre(acc, layer, (-1,), dtype) if centred else acc


def _conv_plan(shape, layer, unsigned, stride, padding, dilation, groups) -> tuple:
    """``(centred, step, widened)``: :func:`_plan`'s, and the :class:`_Widened` geometry
    where the conv runs on widened rows (2-d, stride 1, dense, a kernel larger than 1x1, no
    cropping, some output, one GEMM; one sample's columns only up to the size where the
    float conv builds them in row tiles), else None."""
    w = layer.codes
    k = math.prod(w.shape[1:])
    centred, step = _plan(layer.l1, k, unsigned, groups == 1)
    if (len(shape) != 4 or groups != 1 or tuple(stride) != (1, 1) or not math.prod(shape)
            or w.shape[2] * w.shape[3] == 1 or min(p for pair in padding for p in pair) < 0
            or step < k):
        return centred, step, None
    widened = _Widened(shape, w.shape, padding, dilation)
    n, c = shape[:2]
    fits = n > 1 or c * w.shape[2] * w.shape[3] * widened.length * 4 <= _TILED
    return centred, step, widened if widened.wo > 0 and widened.length > 0 and fits else None


class _Widened:
    """A 2-d stride-1 conv of one input shape on widened rows: the input codes laid out
    flat per (sample, channel), padded, with room for the last tap's reads; the columns a
    strided view of them; the sums (C_out, N, ho, wp)."""

    __slots__ = ("flat", "inner", "cols", "rows", "out", "layout", "wo", "length")

    def __init__(self, shape, w_shape, padding, dilation):
        n, c, h, width = shape
        c_out, _, kh, kw = w_shape
        (pt, pb), (pl, pr) = padding
        dh, dw = dilation
        hp, wp = h + pt + pb, width + pl + pr
        ho, self.wo = hp - dh * (kh - 1), wp - dw * (kw - 1)
        self.length = max(ho, 0) * wp
        # the last tap of the last widened row reads dw * (kw - 1) past the padded map
        self.flat = (n, c, hp * wp + dw * (kw - 1))
        self.inner = (Ellipsis, slice(0, hp * wp)), (n, c, hp, wp), (
            Ellipsis, slice(pt, pt + h), slice(pl, pl + width))
        es = np.dtype(np.float32).itemsize
        row = self.flat[2] * es
        self.cols = (c, kh, kw, n, self.length), (row, dh * wp * es, dw * es, c * row, es)
        self.rows = (c * kh * kw, n * self.length)
        self.out = (c_out, n, ho, wp)
        # the factors spread over small results (each spread copy is as large as they are)
        self.layout = (-1, 1, 1, 1), self.out if math.prod(self.out) <= SPREAD else None

    def acc(self, x, layer, in_scale, unsigned, centred, dtype):
        """:meth:`NumpyQuantOps._conv_acc` on widened rows."""
        flat = np.zeros(self.flat, np.float32)
        head, wide, window = self.inner
        inner = flat[head].reshape(wide)[window]
        if x.dtype.char != "f":  # codes, or codes computed in x's own dtype
            inner[...] = _codes(x, in_scale, unsigned)
        else:  # quantized in place: the zero padding rounds to code 0
            np.divide(x, in_scale.reshape(()), out=inner)
            round_codes_np(flat, *code_range(unsigned))
        if centred:
            flat -= CENTRED  # the padding too: it is code 0
        cols = np.ndarray(*self.cols[:1], np.float32, flat, 0, self.cols[1])
        acc = _gemm(layer.rows, cols.reshape(self.rows))  # the one copy
        if centred:
            acc = _centre(acc, layer, (-1, 1), dtype)
        return acc.reshape(self.out), self.layout, self.view

    def view(self, v: np.ndarray) -> np.ndarray:
        """Results in widened rows (C_out, N, ho, wp) as (N, C_out, ho, wo)."""
        return v[..., :self.wo].transpose(1, 0, 2, 3)


#: OpenBLAS multiplies matrices of up to this many multiply-adds with its small-matrix
#: kernels, without packing: 1.5x faster than just past it (e.g. 12 against 18 us on
#: (32, 144) @ (144, 224)), so a GEMM a little over it runs as two
SMALL_GEMM = 10**6


def _gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``; in two halves of ``a``'s rows where each fits the small kernels."""
    work = a.shape[0] * a.shape[1] * b.shape[1]
    if not SMALL_GEMM < work <= 2 * SMALL_GEMM or a.shape[0] < 16:
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    half = a.shape[0] // 2
    np.matmul(a[:half], b, out=out[:half])
    np.matmul(a[half:], b, out=out[half:])
    return out
