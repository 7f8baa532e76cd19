"""Quantized ops (``ember.quantize.functional``: qlinear, qconv2d) against a float64
reference computed from the same integer codes.

Inputs sit away from the rounding boundaries (codes ± 0.4 steps) with a power-of-two input
scale, so every target quantizes them to the same codes; cases with unit scales and integer
inputs are exact (a tolerance far below 1: the integer sums must be computed exactly, in any
order; the catalog asks every float case for a positive one).
"""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t
from .nn_refs import conv

g = rng(17)
OP = "ember.quantize.functional."
EXACT = 1e-6  # x the float32 tolerances: < 1e-4 absolute on these sums, so exact integers


def _codes(x, s, unsigned=False):
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


def ref_qlinear(x, w, w_scale, bias, in_scale, unsigned=False):
    acc = _codes(x, np.float64(in_scale[0]), unsigned) @ w.astype(np.float64).T
    return _scale(acc, w_scale, in_scale, bias, acc.ndim - 1)


def ref_qconv(x, w, w_scale, bias, in_scale, stride, padding, dilation, groups,
              unsigned=False):
    q = _codes(x, np.float64(in_scale[0]), unsigned)
    lo = [p[0] for p in padding]
    hi = [p[1] for p in padding]
    q = np.pad(q, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    acc = conv(q, w.astype(np.float64), None, stride, 0, dilation, groups)
    return _scale(acc, w_scale, in_scale, bias, 1)


def _weights(shape):
    return rand(g, shape, "int8", -127, 127)


# ---------------------------------------------------------------------- qlinear
for name, lead, k, n, with_bias in [
    ("2d", (5,), 12, 7, True),
    ("3d_batch", (2, 3), 16, 4, True),
    ("no_bias", (4,), 33, 9, False),
    ("long_k", (3,), 1100, 5, True),  # longer than float32 holds exactly in one sum
]:
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
