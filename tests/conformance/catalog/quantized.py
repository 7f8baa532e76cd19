"""Quantized ops (``ember.quantize.functional``: qlinear, qconv2d) against a float64
reference computed from the same integer codes.

Inputs sit away from the rounding boundaries (codes ± 0.4 steps) with a power-of-two input
scale, so every target quantizes them to the same codes; cases with unit scales and integer
inputs are exact (a tolerance far below 1: the integer sums must be computed exactly, in any
order; the catalog asks every float case for a positive one).

Codes between layers: ``x`` given as int8/uint8 codes (used as they are), and codes out
(``out_scale=``, ``out_range=``; int8 or uint8 results, compared exactly). Targets compute
the requantization ``v = acc * m + c`` in float32, where a code may differ by one next to a
half-integer, so those cases pick ``bias`` so that no ``v`` lies within :data:`TIE` of one.
"""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t
from .nn_refs import conv

g = rng(17)
OP = "ember.quantize.functional."
EXACT = 1e-6  # x the float32 tolerances: < 1e-4 absolute on these sums, so exact integers


def _codes(x, s, unsigned=False):
    if x.dtype.kind in "iu":  # int8/uint8 codes from the layer before: used as they are
        return x.astype(np.float64)
    v = np.asarray(x, np.float64) / s
    lo, hi = (0, 255) if unsigned else (-127, 127)
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), lo, hi)


def _inputs(shape, s, spread=140, low=None):
    """Floats whose codes are integers in [low, spread] (default low: -spread; beyond the
    code range: clamped)."""
    ints = g.integers(-spread if low is None else low, spread, size=shape, endpoint=True)
    return ((ints + g.uniform(-0.4, 0.4, size=shape)) * s).astype(np.float32)


def _scale(acc, w_scale, in_scale, bias, axis):
    shape = [1] * acc.ndim
    shape[axis] = -1
    y = acc * (np.float64(in_scale[0]) * w_scale.astype(np.float64)).reshape(shape)
    return y if bias is None else y + bias.astype(np.float64).reshape(shape)


def _requant_factors(w_scale, bias, in_scale, out_scale):
    """``(m, c)`` per output channel in float64, from the float32 values the target gets."""
    out = np.float64(out_scale[0])
    m = (np.float64(in_scale[0]) * w_scale.astype(np.float64)) / out
    c = np.zeros_like(m) if bias is None else bias.astype(np.float64) / out
    return m, c


def _round_clamp(v, lo, hi):
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), lo, hi)


def _finish(acc, w_scale, bias, in_scale, out_scale, out_range, axis):
    """Floats (no ``out_scale``) or the codes at ``out_scale`` clamped to ``out_range``."""
    if out_scale is None:
        return _scale(acc, w_scale, in_scale, bias, axis)
    m, c = _requant_factors(w_scale, bias, in_scale, out_scale)
    shape = [1] * acc.ndim
    shape[axis] = -1
    return _round_clamp(acc * m.reshape(shape) + c.reshape(shape), *out_range)


def _linear_acc(x, w, in_scale, unsigned):
    return _codes(x, np.float64(in_scale[0]), unsigned) @ w.astype(np.float64).T


def _conv_acc(x, w, in_scale, stride, padding, dilation, groups, unsigned):
    q = _codes(x, np.float64(in_scale[0]), unsigned)
    lo = [p[0] for p in padding]
    hi = [p[1] for p in padding]
    q = np.pad(q, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    return conv(q, w.astype(np.float64), None, stride, 0, dilation, groups)


def ref_qlinear(x, w, w_scale, bias, in_scale, unsigned=False, out_scale=None,
                out_range=(-127, 127)):
    acc = _linear_acc(x, w, in_scale, unsigned)
    return _finish(acc, w_scale, bias, in_scale, out_scale, out_range, acc.ndim - 1)


def ref_qconv(x, w, w_scale, bias, in_scale, stride, padding, dilation, groups,
              unsigned=False, out_scale=None, out_range=(-127, 127)):
    acc = _conv_acc(x, w, in_scale, stride, padding, dilation, groups, unsigned)
    return _finish(acc, w_scale, bias, in_scale, out_scale, out_range, 1)


def _weights(shape):
    return rand(g, shape, "int8", -127, 127)


# ---------------------------------------------------------------------- qlinear
LINEARS = [
    # name, leading dims, K, N, with bias
    ("2d", (5,), 12, 7, True),
    ("3d_batch", (2, 3), 16, 4, True),
    ("no_bias", (4,), 33, 9, False),
    ("long_k", (3,), 1100, 5, True),  # longer than float32 holds exactly in one sum
]
for name, lead, k, n, with_bias in LINEARS:
    s = 0.25
    case(f"qlinear/f32/{name}", OP + "qlinear",
         t(_inputs(lead + (k,), s)), t(_weights((n, k))),
         t(rand(g, (n,), "float32", 0.001, 0.02)),
         t(rand(g, (n,), "float32", -1, 1)) if with_bias else None,
         t(np.array([s], np.float32)), ref=ref_qlinear, tol=3)

# exact: unit scales, integer inputs, integer sums (any order must give the same integers)
for name, k in [("exact", 64), ("exact_long_k", 2100)]:
    x = g.integers(-127, 127, size=(4, k), endpoint=True).astype(np.float32)
    case(f"qlinear/f32/{name}", OP + "qlinear", t(x), t(_weights((6, k))),
         t(np.ones(6, np.float32)), None, t(np.ones(1, np.float32)), ref=ref_qlinear, tol=EXACT)

# ---------------------------------------------------------------------- qconv2d
CONVS = [
    # name, x shape, (c_out, kh, kw), stride, padding pairs, dilation, groups
    ("3x3_pad1", (2, 3, 7, 7), (4, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ("stride2_same_tf", (1, 4, 8, 8), (6, 3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1), 1),
    ("pointwise", (2, 8, 5, 5), (5, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ("depthwise", (2, 6, 6, 6), (6, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 6),
    ("depthwise_5x5_s2", (1, 4, 9, 9), (4, 5, 5), (2, 2), ((1, 2), (1, 2)), (1, 1), 4),
    ("grouped_dilated", (1, 4, 8, 8), (6, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 2),
    ("long_k", (1, 130, 4, 4), (3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]
for name, xs, (c_out, kh, kw), stride, pad, dil, groups in CONVS:
    s = 0.125
    case(f"qconv2d/f32/{name}", OP + "qconv2d",
         t(_inputs(xs, s)), t(_weights((c_out, xs[1] // groups, kh, kw))),
         t(rand(g, (c_out,), "float32", 0.001, 0.02)), t(rand(g, (c_out,), "float32", -1, 1)),
         t(np.array([s], np.float32)), stride, pad, dil, groups, ref=ref_qconv, tol=3)

x = g.integers(-127, 127, size=(1, 8, 5, 5), endpoint=True).astype(np.float32)
case("qconv2d/f32/exact", OP + "qconv2d", t(x), t(_weights((3, 8, 3, 3))),
     t(np.ones(3, np.float32)), None, t(np.ones(1, np.float32)), (1, 1), ((1, 1), (1, 1)),
     (1, 1), 1, ref=ref_qconv, tol=EXACT)

# ---------------------------------------------------------------------- unsigned codes (*_u8)
# inputs mostly >= 0 with a few negatives (clamped to code 0) and some past 255 (clamped)
U8 = {"unsigned": True}


def _u8(ref):
    return lambda *args: ref(*args, unsigned=True)


for name, lead, k, n in [("2d", (5,), 12, 7), ("long_k", (3,), 600, 5)]:
    s = 0.25
    case(f"qlinear_u8/f32/{name}", OP + "qlinear",
         t(_inputs(lead + (k,), s, 270, -10)), t(_weights((n, k))),
         t(rand(g, (n,), "float32", 0.001, 0.02)), t(rand(g, (n,), "float32", -1, 1)),
         t(np.array([s], np.float32)), ref=_u8(ref_qlinear), kwargs=U8, tol=3)

x = g.integers(0, 255, size=(4, 64), endpoint=True).astype(np.float32)
case("qlinear_u8/f32/exact", OP + "qlinear", t(x), t(_weights((6, 64))),
     t(np.ones(6, np.float32)), None, t(np.ones(1, np.float32)), ref=_u8(ref_qlinear),
     kwargs=U8, tol=EXACT)

for name, xs, (c_out, kh, kw), stride, pad, dil, groups in CONVS:
    s = 0.125
    case(f"qconv2d_u8/f32/{name}", OP + "qconv2d",
         t(_inputs(xs, s, 270, -10)), t(_weights((c_out, xs[1] // groups, kh, kw))),
         t(rand(g, (c_out,), "float32", 0.001, 0.02)), t(rand(g, (c_out,), "float32", -1, 1)),
         t(np.array([s], np.float32)), stride, pad, dil, groups, ref=_u8(ref_qconv),
         kwargs=U8, tol=3)

x = g.integers(0, 255, size=(1, 8, 5, 5), endpoint=True).astype(np.float32)
case("qconv2d_u8/f32/exact", OP + "qconv2d", t(x), t(_weights((3, 8, 3, 3))),
     t(np.ones(3, np.float32)), None, t(np.ones(1, np.float32)), (1, 1), ((1, 1), (1, 1)),
     (1, 1), 1, ref=_u8(ref_qconv), kwargs=U8, tol=EXACT)

# ---------------------------------------------------------------------- codes in (int8/uint8 x)
# Codes from the layer before are used as they are, so any in_scale works (not a power of
# two here). The unsigned flag doesn't matter for codes: uint8 codes go with it set, int8
# without, so both settings meet code inputs.
CODES = {"i8": ("int8", -127, 127), "u8": ("uint8", 0, 255)}


def _code_input(shape, kind):
    dtype, lo, hi = CODES[kind]
    return rand(g, shape, dtype, lo, hi)


for kind in CODES:
    flag = {"unsigned": kind == "u8"}
    for name, lead, k, n, with_bias in LINEARS:
        case(f"qlinear/{kind}_codes/{name}", OP + "qlinear",
             t(_code_input(lead + (k,), kind)), t(_weights((n, k))),
             t(rand(g, (n,), "float32", 0.001, 0.02)),
             t(rand(g, (n,), "float32", -1, 1)) if with_bias else None,
             t(np.array([0.0371], np.float32)), ref=ref_qlinear, out="float32", kwargs=flag,
             tol=3)
    for name, xs, (c_out, kh, kw), stride, pad, dil, groups in CONVS:
        case(f"qconv2d/{kind}_codes/{name}", OP + "qconv2d",
             t(_code_input(xs, kind)), t(_weights((c_out, xs[1] // groups, kh, kw))),
             t(rand(g, (c_out,), "float32", 0.001, 0.02)),
             t(rand(g, (c_out,), "float32", -1, 1)), t(np.array([0.0371], np.float32)),
             stride, pad, dil, groups, ref=ref_qconv, out="float32", kwargs=flag, tol=3)
    # exact: unit scales, integer sums; the long ones pass float32's exact range (2**24),
    # the middle ones only that of unsigned codes (K * 255 * 127 < 2**24: K <= 518)
    for name, k in [("exact", 64), ("exact_mid_k", 900), ("exact_long_k", 2100)]:
        case(f"qlinear/{kind}_codes/{name}", OP + "qlinear", t(_code_input((4, k), kind)),
             t(_weights((6, k))), t(np.ones(6, np.float32)), None, t(np.ones(1, np.float32)),
             ref=ref_qlinear, out="float32", kwargs=flag, tol=EXACT)
    for name, c_in in [("exact", 8), ("exact_mid_k", 100), ("exact_long_k", 260)]:
        case(f"qconv2d/{kind}_codes/{name}", OP + "qconv2d",
             t(_code_input((1, c_in, 5, 5), kind)), t(_weights((3, c_in, 3, 3))),
             t(np.ones(3, np.float32)), None, t(np.ones(1, np.float32)), (1, 1),
             ((1, 1), (1, 1)), (1, 1), 1, ref=ref_qconv, out="float32", kwargs=flag,
             tol=EXACT)

# ---------------------------------------------------------------------- codes out (out_scale)
# From float inputs (quantized as above, power-of-two in_scale) and from codes. out_scale is
# set so the values spread a quarter past the range's larger end (some codes clamp; the
# unsigned ranges also clamp the negative half to 0, a folded ReLU/ReLU6).
TIE = 1e-3  # no v this close to a half-integer: float32 m, c, v can't move a code there
RANGES = {"i8": (-127, 127), "u8": (0, 255), "relu6": (0, 40)}
SOURCES = ("f32", "i8_codes", "u8_codes")


def _source(shape, src, s):
    if src == "f32":
        return _inputs(shape, s)
    return _code_input(shape, src[:2])


def _requant_args(acc, w_scale, in_scale, out_range, axis):
    """``out_scale`` (1,) and ``bias`` (C_out,) float32 for codes out of the exact sums
    ``acc``: each channel's bias is nudged until none of its ``v`` lies within TIE of a
    half-integer (m and c computed exactly as the reference does, from float32 values)."""
    lo, hi = out_range
    top = max(-lo, hi)
    per_channel = np.moveaxis(acc, axis, -1).reshape(-1, acc.shape[axis])
    y = per_channel * (np.float64(in_scale[0]) * w_scale.astype(np.float64))
    out_scale = np.array([np.abs(y).max() / (1.25 * top)], np.float32)
    bias = np.empty(len(w_scale), np.float32)
    m, _ = _requant_factors(w_scale, None, in_scale, out_scale)
    for o in range(len(w_scale)):
        c = g.uniform(-0.1, 0.1) * top
        while True:
            bias[o] = c * np.float64(out_scale[0])
            v = per_channel[:, o] * m[o] + np.float64(bias[o]) / np.float64(out_scale[0])
            if np.abs(v % 1.0 - 0.5).min() > TIE:
                break
            c += 0.0371
    return out_scale, bias


def _codes_out(id, fn, ref, acc_of, x, w, in_scale, geometry, out_range, axis):
    w_scale = rand(g, (w.shape[0],), "float32", 0.001, 0.02)
    acc = acc_of(x, w, in_scale)
    out_scale, bias = _requant_args(acc, w_scale, in_scale, out_range, axis)
    out = "uint8" if out_range[0] >= 0 else "int8"
    # unsigned=False positionally; out_scale and out_range too, so the ref gets them
    case(id, OP + fn, t(x), t(w), t(w_scale), t(bias), t(in_scale), *geometry, False,
         t(out_scale), out_range, ref=ref, out=out)


for src in SOURCES:
    s = 0.25 if src == "f32" else 0.0371  # float inputs: a power of two, exact codes
    in_scale = np.array([s], np.float32)
    for rname, out_range in RANGES.items():
        for name, lead, k, n, with_bias in LINEARS:
            if not with_bias:  # codes out always take a bias (zeros for a layer without)
                continue
            _codes_out(f"qlinear/{src}->{rname}/{name}", "qlinear", ref_qlinear,
                       lambda x, w, si: _linear_acc(x, w, si, False),
                       _source(lead + (k,), src, s), _weights((n, k)), in_scale, (),
                       out_range, len(lead))
        for name, xs, (c_out, kh, kw), stride, pad, dil, groups in CONVS:
            geometry = (stride, pad, dil, groups)
            _codes_out(f"qconv2d/{src}->{rname}/{name}", "qconv2d", ref_qconv,
                       lambda x, w, si, geo=geometry: _conv_acc(x, w, si, *geo, False),
                       _source(xs, src, s), _weights((c_out, xs[1] // groups, kh, kw)),
                       in_scale, geometry, out_range, 1)
