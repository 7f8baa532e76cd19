"""The numpy backend's quantized ops (core/ember/backends/numpy/quant.py) on the paths its
speed-ups take: one float32 GEMM where each weight's largest row sum of ``|codes|`` keeps
the sums exact (centred unsigned codes included), the chunked sums where it does not (the
worst-case weights and inputs), 2-d stride-1 convs on widened rows (paddings, dilations,
batches, codes in and out), and the per-layer cache. Expected values: float64 numpy from
the contract's formulas, with power-of-two scales so that every rounding is exact."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
from ember.backends.numpy import quant
from ember.quantize.functional import qconv2d, qlinear

rng = np.random.default_rng(23)


def _t(a):
    return ember.tensor(np.asarray(a), backend="numpy")


def _round(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _codes(x, s, unsigned):
    if x.dtype.kind in "iu":
        return x.astype(np.float64)
    lo, hi = (0, 255) if unsigned else (-127, 127)
    return np.clip(_round(x.astype(np.float64) / s), lo, hi)


def _conv64(q, w, padding, dilation):
    """Stride-1 cross-correlation in float64, one kernel tap at a time."""
    (pt, pb), (pl, pr) = padding
    q = np.pad(q, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    c_out, _, kh, kw = w.shape
    ho = q.shape[2] - dilation[0] * (kh - 1)
    wo = q.shape[3] - dilation[1] * (kw - 1)
    out = np.zeros((q.shape[0], c_out, ho, wo))
    for i in range(kh):
        for j in range(kw):
            patch = q[:, :, i * dilation[0]:i * dilation[0] + ho, j * dilation[1]:j * dilation[1] + wo]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return out


def _finish(acc, w_scale, bias, in_scale, out_scale, out_range, axis):
    shape = [1] * acc.ndim
    shape[axis] = -1
    if out_scale is None:
        return acc * (in_scale * w_scale.astype(np.float64)).reshape(shape) + bias.reshape(shape)
    m = in_scale * w_scale.astype(np.float64) / out_scale
    v = acc * m.reshape(shape) + (bias.astype(np.float64) / out_scale).reshape(shape)
    return np.clip(_round(v), *out_range)


def _pow2(n, lo=-9, hi=-5):
    return (2.0 ** rng.integers(lo, hi, n, endpoint=True)).astype(np.float32)


# ---------------------------------------------------------------------- widened 2-d convs
GEOMETRIES = [
    # x shape, (c_out, kh, kw), padding pairs, dilation
    ((1, 1, 28, 28), (16, 3, 3), ((1, 1), (1, 1)), (1, 1)),
    ((3, 4, 9, 7), (5, 3, 3), ((1, 1), (1, 1)), (1, 1)),
    ((2, 3, 8, 10), (4, 3, 5), ((0, 2), (3, 1)), (1, 1)),
    ((2, 2, 11, 9), (3, 3, 3), ((2, 2), (2, 2)), (2, 3)),
    ((1, 5, 6, 6), (2, 2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((1, 2, 3, 4), (3, 3, 4), ((0, 0), (0, 0)), (1, 1)),  # one output position
]


@pytest.mark.parametrize("xs, wk, padding, dilation", GEOMETRIES)
@pytest.mark.parametrize("mode", ["float", "u8-float", "codes-u8", "codes-i8"])
def test_widened_conv_matches_float64(xs, wk, padding, dilation, mode):
    c_out, kh, kw = wk
    w = rng.integers(-127, 127, (c_out, xs[1], kh, kw), endpoint=True).astype(np.int8)
    unsigned = mode != "float"
    s_in = np.float32(0.125)
    if mode.startswith("codes"):
        x = rng.integers(0, 255, xs, endpoint=True).astype(np.uint8)
    else:
        x = ((rng.integers(-20 if unsigned else -140, 270, xs) + rng.uniform(-0.4, 0.4, xs))
             * s_in).astype(np.float32)
    w_scale, bias = _pow2(c_out), (rng.integers(-64, 64, c_out) / 64).astype(np.float32)
    acc = _conv64(_codes(x, s_in, unsigned), w, padding, dilation)
    args = (_t(w), _t(w_scale), _t(bias), _t(np.array([s_in])), (1, 1), padding, dilation, 1)
    if mode.startswith("codes"):
        out_scale = np.float32(0.5)
        out_range = (0, 255) if mode == "codes-u8" else (-127, 127)
        got = qconv2d(_t(x), *args, out_scale=_t(np.array([out_scale])), out_range=out_range)
        want = _finish(acc, w_scale, bias, s_in, out_scale, out_range, 1)
        assert got.dtype.name == ("uint8" if out_range[0] >= 0 else "int8")
        np.testing.assert_array_equal(got.numpy(), want)
    else:
        got = qconv2d(_t(x), *args, unsigned=unsigned).numpy()
        assert got.flags.c_contiguous
        np.testing.assert_allclose(got, _finish(acc, w_scale, bias, s_in, None, None, 1),
                                   rtol=1e-6, atol=1e-6)


def test_widened_conv_float64_inputs_quantize_in_their_own_dtype():
    # x / s lands 2**-30 under a half: rounded to float32 first it would tie and round up
    s = 0.5
    x = np.full((1, 1, 3, 3), (1.25 - 2.0 ** -31), np.float64)
    w = np.ones((1, 1, 3, 3), np.int8)
    one = np.ones(1)
    y = qconv2d(_t(x), _t(w), _t(one), _t(np.zeros(1)), _t(np.array([s])), (1, 1),
                ((1, 1), (1, 1)), (1, 1), 1)
    assert y.numpy()[0, 0, 1, 1] == 9 * 2 * s  # code 2 everywhere, not 3


# ---------------------------------------------------------------------- exact long sums
def _exact_linear(x, w, unsigned, dtype=np.float32):
    n = w.shape[0]
    one = np.ones(n, dtype)
    return qlinear(_t(x.astype(dtype)), _t(w), _t(one), _t(np.zeros(n, dtype)),
                   _t(np.ones(1, dtype)), unsigned=unsigned).numpy()


@pytest.mark.parametrize("k, spread, unsigned, path", [
    (6000, 10, False, "one"),  # 127 * l1 <= 2**24 although K * 127**2 is 5.8x past it
    (1600, 40, True, "one"),
    (1600, 80, True, "centred"),  # 255 * l1 past 2**24, 128 * l1 within
    (1100, 127, True, "chunks"),  # full-range weights: the K bound
    (2100, 127, False, "chunks"),
])
def test_linear_sums_are_exact_on_every_path(k, spread, unsigned, path):
    w = rng.integers(-spread, spread, (6, k), endpoint=True).astype(np.int8)
    w[0] = spread  # the largest row sum, and the extreme sums: codes all at the top
    w[1] = -spread
    l1 = int(np.abs(w.astype(np.int64)).sum(axis=1).max())
    centred, step = quant._plan(l1, k, unsigned)
    assert path == ("chunks" if step < k else "centred" if centred else "one")
    top = 255 if unsigned else 127
    x = rng.integers(0 if unsigned else -127, top, (3, k), endpoint=True).astype(np.float64)
    x[0] = top
    x[1] = 0 if unsigned else -top
    want = x @ w.astype(np.float64).T  # exact: far below 2**53
    got = _exact_linear(x, w, unsigned)
    np.testing.assert_array_equal(got, want.astype(np.float32))  # float(acc), rounded once
    np.testing.assert_array_equal(_exact_linear(x, w, unsigned, np.float64), want)


def test_centred_conv_sums_are_exact():
    # 64 channels x 9 taps of weights within +-127, 255 * l1 past 2**24, centred within
    c = 64
    w = rng.integers(-127, 127, (3, c, 3, 3), endpoint=True).astype(np.int8)
    w[0] = 127
    l1 = int(np.abs(w.astype(np.int64)).sum(axis=(1, 2, 3)).max())
    assert quant._plan(l1, c * 9, True) == (True, c * 9)
    x = rng.integers(0, 255, (2, c, 5, 6), endpoint=True).astype(np.uint8)
    x[0] = 255
    acc = _conv64(x.astype(np.float64), w, ((1, 1), (1, 1)), (1, 1))
    for dtype in (np.float32, np.float64):
        one = np.ones(3, dtype)
        got = qconv2d(_t(x), _t(w), _t(one), _t(np.zeros(3, dtype)), _t(np.ones(1, dtype)),
                      (1, 1), ((1, 1), (1, 1)), (1, 1), 1).numpy()
        np.testing.assert_array_equal(got, acc.astype(dtype))


def test_gemm_halves_give_the_whole_product():
    a = rng.integers(-127, 127, (32, 144)).astype(np.float32)
    b = rng.integers(0, 255, (144, 224)).astype(np.float32)
    assert 32 * 144 * 224 > quant.SMALL_GEMM  # the split path
    np.testing.assert_array_equal(quant._gemm(a, b), a @ b)


# ---------------------------------------------------------------------- the layer cache
def test_layer_cache_follows_the_arrays():
    w = rng.integers(-127, 127, (4, 8), endpoint=True).astype(np.int8)
    x = rng.integers(-127, 127, (2, 8), endpoint=True).astype(np.float32)
    one = np.ones(4, np.float32)
    args = [_t(w), _t(one), _t(np.zeros(4, np.float32)), _t(np.ones(1, np.float32))]
    before = len(quant._LAYERS)
    y = qlinear(_t(x), *args).numpy()
    assert len(quant._LAYERS) == before + 1
    np.testing.assert_array_equal(y, x @ w.T.astype(np.float32))
    args[0] = _t(-w)  # a new weight (as a loaded record's): new sums, not the cached ones
    np.testing.assert_array_equal(qlinear(_t(x), *args).numpy(), -y)
    del args
    gc.collect()
    assert len(quant._LAYERS) == before  # both entries left with their arrays


def test_conv_plans_stay_bounded_over_many_input_shapes():
    w = rng.integers(-127, 127, (3, 2, 3, 3), endpoint=True).astype(np.int8)
    one = np.ones(3, np.float32)
    args = [_t(w), _t(one), _t(np.zeros(3, np.float32)), _t(np.ones(1, np.float32))]
    for h in range(3, 24):
        x = rng.integers(-127, 127, (1, 2, h, 5), endpoint=True).astype(np.float32)
        got = qconv2d(_t(x), *args, (1, 1), ((1, 1), (1, 1)), (1, 1), 1).numpy()
        np.testing.assert_array_equal(got, _conv64(x, w, ((1, 1), (1, 1)), (1, 1)))
    layer = quant._layer(*(a._prim for a in args))
    assert 1 <= len(layer.convs) <= 17 and len(layer._shaped) <= 18  # the layer's own entry
