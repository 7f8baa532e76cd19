"""Codes between quantized layers on the wasm kernels (``wasm/quant*.c``): int8/uint8 codes in
(read as they are) and codes out (``qlinear_q``/``qconv_q``: requantized at the next layer's
scale, clamped), against float64 references computed from the same integer codes, and against
the numpy backend. A code may differ by one only where the float64 value is within 1e-3 of a
half-integer (the float32 factors and sums may round it either way there); elsewhere exact."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("wasmtime")

import ember  # noqa: E402
from ember.quantize.functional import qconv2d, qlinear  # noqa: E402

TIE = 1e-3  # |v - (k + 1/2)| below this: either neighbour is a correct code
SAME3 = ((1, 1), (1, 1))


@pytest.fixture
def rng():
    return np.random.default_rng(1717)


@pytest.fixture
def kernels(monkeypatch):
    """The names of the wasm kernels called (the quantized ops must not take the default
    bodies' many small kernels)."""
    rt = ember.tensor([0.0], backend="wasm").backend.rt
    names, call = [], rt.call

    def spy(name, *args):
        names.append(name)
        return call(name, *args)

    monkeypatch.setattr(rt, "call", spy)
    return names


def _t(a, backend="wasm"):
    return ember.tensor(np.asarray(a), backend=backend)  # numpy's dtype


def _code_input(rng, shape, kind):
    lo, hi = (0, 255) if kind == "uint8" else (-127, 127)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(kind)


def _float_input(rng, shape, s, unsigned):
    """Floats whose codes at scale ``s`` are the returned integers (± 0.4 steps off them)."""
    ints = rng.integers(0 if unsigned else -127, 255 if unsigned else 127, size=shape,
                        endpoint=True)
    return ((ints + rng.uniform(-0.4, 0.4, size=shape)) * s).astype(np.float32), ints


def _linear_acc(q, w):
    return q.astype(np.float64) @ w.astype(np.float64).T


def _conv_acc(q, w, stride, padding, dilation, groups):
    """The exact integer sums of a 2-d cross-correlation, in float64 (tap by tap)."""
    q = np.pad(q.astype(np.float64), [(0, 0), (0, 0), *padding])
    n, c, h, wd = q.shape
    c_out, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    wg = w.astype(np.float64).reshape(groups, c_out // groups, cg, kh, kw)
    acc = np.zeros((n, groups, c_out // groups, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            win = q[:, :, ky * dh:ky * dh + (oh - 1) * sh + 1:sh,
                    kx * dw:kx * dw + (ow - 1) * sw + 1:sw].reshape(n, groups, cg, oh, ow)
            acc += np.einsum("ngcyx,goc->ngoyx", win, wg[..., ky, kx])
    return acc.reshape(n, c_out, oh, ow)


def _along(a, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return np.asarray(a, np.float64).reshape(shape)


def _requant_v(acc, w_scale, bias, in_scale, out_scale, axis):
    """The module doc's v in float64 from the float32 scales' exact values."""
    m = np.float64(in_scale[0]) * w_scale.astype(np.float64) / np.float64(out_scale[0])
    c = bias.astype(np.float64) / np.float64(out_scale[0])
    return acc * _along(m, axis, acc.ndim) + _along(c, axis, acc.ndim)


def assert_codes(got, v, lo, hi):
    """``got`` is v rounded half away from zero and clamped to [lo, hi] (± 1 at ties)."""
    want = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), lo, hi)
    got = np.asarray(got)
    assert got.dtype == (np.uint8 if lo >= 0 else np.int8)
    assert got.shape == v.shape
    diff = np.abs(got.astype(np.int64) - want)
    near_tie = np.abs(np.abs(v) - np.floor(np.abs(v)) - 0.5) < TIE
    bad = (diff > 1) | ((diff == 1) & ~near_tie)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} codes off, e.g. got "
                           f"{got[bad][:5]}, want {want[bad][:5]} (v {v[bad][:5]})")
    assert (want > lo).any() and (want < hi).any()  # the data reach inside the range


def _scales(rng, c_out, acc, in_scale, hi, axis, spread=1.25):
    """w_scale, bias and an out_scale that puts the values a quarter past ``hi``."""
    w_scale = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
    bias = rng.uniform(-1, 1, c_out).astype(np.float32)
    y = acc * _along(in_scale * w_scale.astype(np.float64), axis, acc.ndim)
    out = np.float32(np.abs(y).max() / (spread * max(abs(hi), 1)))
    return w_scale, bias, np.array([out], np.float32)


LINEAR = [  # rows, k, n
    ((1,), 24, 144),
    ((3,), 37, 13),  # odd sizes: column tails of the epilogue
    ((2, 5), 64, 8),
    ((4,), 2100, 9),  # long K: more than float32 holds exactly
]
RANGES = [(-127, 127), (0, 255), (0, 40), (-40, 100)]


@pytest.mark.parametrize("lead,k,n", LINEAR)
@pytest.mark.parametrize("kind", ["int8", "uint8"])
@pytest.mark.parametrize("out_range", RANGES)
def test_qlinear_codes_in_codes_out(rng, kernels, lead, k, n, kind, out_range):
    x = _code_input(rng, lead + (k,), kind)
    w = rng.integers(-127, 127, (n, k), endpoint=True).astype(np.int8)
    in_scale = np.array([0.05], np.float32)
    acc = _linear_acc(x, w)
    w_scale, bias, out_scale = _scales(rng, n, acc, 0.05, out_range[1], -1)
    args = [_t(a) for a in (x, w, w_scale, bias, in_scale)]
    kernels.clear()
    y = qlinear(*args, out_scale=_t(out_scale), out_range=out_range)
    assert kernels == ["em_qlinear"]  # one call: no quantize, requantize or cast pass
    v = _requant_v(acc, w_scale, bias, in_scale, out_scale, -1)
    assert_codes(y.numpy(), v, *out_range)
    ref = qlinear(*[_t(a, "numpy") for a in (x, w, w_scale, bias, in_scale)],
                  out_scale=_t(out_scale, "numpy"), out_range=out_range)
    assert_codes(ref.numpy(), v, *out_range)  # the numpy backend agrees up to ties
    assert np.abs(y.numpy().astype(int) - ref.numpy().astype(int)).max() <= 1


@pytest.mark.parametrize("lead,k,n", LINEAR)
@pytest.mark.parametrize("kind", ["int8", "uint8"])
def test_qlinear_codes_in_float_out(rng, lead, k, n, kind):
    x = _code_input(rng, lead + (k,), kind)
    w = rng.integers(-127, 127, (n, k), endpoint=True).astype(np.int8)
    w_scale = rng.uniform(0.002, 0.02, n).astype(np.float32)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    in_scale = np.array([0.05], np.float32)
    args = (x, w, w_scale, bias, in_scale)
    for unsigned in (False, True):  # the flag doesn't matter for codes
        y = qlinear(*map(_t, args), unsigned=unsigned)
        assert y.dtype == ember.float32
        want = _linear_acc(x, w) * (0.05 * w_scale.astype(np.float64)) + bias
        np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=2e-6 * np.abs(want).max())


@pytest.mark.parametrize("unsigned,out_range", [(False, (-127, 127)), (True, (0, 255)),
                                                (True, (0, 6))])
def test_qlinear_float_in_codes_out(rng, unsigned, out_range):
    in_scale = np.array([0.125], np.float32)  # a power of two: the input codes are exact
    x, q = _float_input(rng, (6, 50), 0.125, unsigned)
    w = rng.integers(-127, 127, (19, 50), endpoint=True).astype(np.int8)
    acc = _linear_acc(q, w)
    w_scale, bias, out_scale = _scales(rng, 19, acc, 0.125, out_range[1], -1)
    y = qlinear(*map(_t, (x, w, w_scale, bias, in_scale)), unsigned=unsigned,
                out_scale=_t(out_scale), out_range=out_range)
    assert_codes(y.numpy(), _requant_v(acc, w_scale, bias, in_scale, out_scale, -1),
                 *out_range)


def test_qlinear_reads_a_view_of_codes(rng):
    """A transposed view of codes is made contiguous before the kernel reads it."""
    x = _code_input(rng, (40, 3), "int8")
    w = rng.integers(-127, 127, (5, 40), endpoint=True).astype(np.int8)
    one = np.ones(1, np.float32)
    y = qlinear(_t(x).permute(1, 0), _t(w), _t(np.ones(5, np.float32)), None, _t(one))
    np.testing.assert_array_equal(y.numpy(), _linear_acc(x.T, w))


# x shape, weight shape, stride, padding, dilation, groups; output widths of whole vectors
# (8, 16: the depthwise rows go straight to y; 20: the GEMM's columns packed 8 at a time from
# one row) and of tails
CONV = [
    ("1x1_expand", (1, 24, 14, 14), (144, 24, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ("1x1_project_odd", (2, 29, 7, 11), (13, 29, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ("1x1_stride2", (1, 16, 9, 9), (8, 16, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    ("dw3x3_s1", (1, 32, 13, 13), (32, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 32),
    ("dw3x3_s2", (2, 24, 15, 17), (24, 1, 3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1), 24),
    ("dw3x3_s1_w16", (1, 24, 16, 16), (24, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 24),
    ("dw3x3_s2_w8", (1, 16, 16, 16), (16, 1, 3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1), 16),
    ("dw5x5_s1", (1, 20, 11, 9), (20, 1, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 20),
    ("dw5x5_s2", (1, 40, 14, 14), (40, 1, 5, 5), (2, 2), ((1, 2), (1, 2)), (1, 1), 40),
    ("dw3x3_dilated", (1, 8, 12, 12), (8, 1, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 8),
    ("conv3x3_s2", (2, 5, 17, 13), (7, 5, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
    ("conv3x3_s2_wide", (1, 4, 21, 40), (8, 4, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
    ("conv3x3_dilated", (1, 6, 20, 20), (5, 6, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 1),
    ("grouped", (1, 6, 10, 10), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2),
    ("long_k", (1, 300, 6, 6), (5, 300, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]


def _conv_case(rng, xs, ws, kind):
    x = _code_input(rng, xs, kind)
    w = rng.integers(-127, 127, ws, endpoint=True).astype(np.int8)
    return x, w


@pytest.mark.parametrize("name,xs,ws,stride,padding,dilation,groups", CONV,
                         ids=[c[0] for c in CONV])
@pytest.mark.parametrize("kind", ["int8", "uint8"])
@pytest.mark.parametrize("out_range", RANGES[:3])
def test_qconv_codes_in_codes_out(rng, kernels, name, xs, ws, stride, padding, dilation, groups,
                                  kind, out_range):
    x, w = _conv_case(rng, xs, ws, kind)
    in_scale = np.array([0.03], np.float32)
    acc = _conv_acc(x, w, stride, padding, dilation, groups)
    w_scale, bias, out_scale = _scales(rng, ws[0], acc, 0.03, out_range[1], 1)
    geometry = (stride, padding, dilation, groups)
    args = [_t(a) for a in (x, w, w_scale, bias, in_scale, out_scale)]
    kernels.clear()
    y = qconv2d(*args[:5], *geometry, out_scale=args[5], out_range=out_range)
    assert kernels == ["em_qconv"]
    v = _requant_v(acc, w_scale, bias, in_scale, out_scale, 1)
    assert_codes(y.numpy(), v, *out_range)
    ref = qconv2d(*[_t(a, "numpy") for a in (x, w, w_scale, bias, in_scale)], *geometry,
                  out_scale=_t(out_scale, "numpy"), out_range=out_range)
    assert np.abs(y.numpy().astype(int) - ref.numpy().astype(int)).max() <= 1


@pytest.mark.parametrize("name,xs,ws,stride,padding,dilation,groups", CONV,
                         ids=[c[0] for c in CONV])
@pytest.mark.parametrize("kind", ["int8", "uint8"])
def test_qconv_codes_in_float_out(rng, name, xs, ws, stride, padding, dilation, groups, kind):
    x, w = _conv_case(rng, xs, ws, kind)
    w_scale = rng.uniform(0.002, 0.02, ws[0]).astype(np.float32)
    bias = rng.uniform(-1, 1, ws[0]).astype(np.float32) if name != "grouped" else None
    in_scale = np.array([0.03], np.float32)
    geometry = (stride, padding, dilation, groups)
    y = qconv2d(_t(x), _t(w), _t(w_scale), None if bias is None else _t(bias), _t(in_scale),
                *geometry)
    assert y.dtype == ember.float32
    want = _conv_acc(x, w, *geometry) * _along(0.03 * w_scale.astype(np.float64), 1, 4)
    if bias is not None:
        want = want + _along(bias, 1, 4)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=2e-6 * np.abs(want).max())


@pytest.mark.parametrize("name,xs,ws,stride,padding,dilation,groups",
                         [c for c in CONV if c[0] in ("1x1_project_odd", "dw3x3_s2",
                                                      "conv3x3_s2")],
                         ids=["1x1", "dw3x3_s2", "conv3x3_s2"])
@pytest.mark.parametrize("unsigned,out_range", [(False, (-127, 127)), (True, (0, 40))])
def test_qconv_float_in_codes_out(rng, name, xs, ws, stride, padding, dilation, groups,
                                  unsigned, out_range):
    x, q = _float_input(rng, xs, 0.0625, unsigned)
    w = rng.integers(-127, 127, ws, endpoint=True).astype(np.int8)
    in_scale = np.array([0.0625], np.float32)
    acc = _conv_acc(q, w, stride, padding, dilation, groups)
    w_scale, bias, out_scale = _scales(rng, ws[0], acc, 0.0625, out_range[1], 1)
    y = qconv2d(*map(_t, (x, w, w_scale, bias, in_scale)), stride, padding, dilation, groups,
                unsigned=unsigned, out_scale=_t(out_scale), out_range=out_range)
    assert_codes(y.numpy(), _requant_v(acc, w_scale, bias, in_scale, out_scale, 1), *out_range)


def test_an_inverted_residual_block_runs_on_codes(rng):
    """EfficientNet-Lite's expand 1x1 -> depthwise 3x3 -> project 1x1, each layer's uint8 or
    int8 codes fed to the next as they are (ReLU6 folded into the clamps)."""
    q = _code_input(rng, (1, 8, 12, 12), "uint8")
    layers = [((32, 8, 1, 1), (1, 1), ((0, 0), (0, 0)), 1, (0, 42)),
              ((32, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), 32, (0, 255)),
              ((8, 32, 1, 1), (1, 1), ((0, 0), (0, 0)), 1, (-127, 127))]
    x, in_scale = _t(q), np.array([0.02], np.float32)
    for ws, stride, padding, groups, out_range in layers:
        w = rng.integers(-127, 127, ws, endpoint=True).astype(np.int8)
        acc = _conv_acc(x.numpy(), w, stride, padding, (1, 1), groups)
        w_scale, bias, out_scale = _scales(rng, ws[0], acc, in_scale[0], out_range[1], 1)
        y = qconv2d(x, *map(_t, (w, w_scale, bias, in_scale)), stride, padding, (1, 1), groups,
                    out_scale=_t(out_scale), out_range=out_range)
        assert_codes(y.numpy(), _requant_v(acc, w_scale, bias, in_scale, out_scale, 1),
                     *out_range)
        x, in_scale = y, out_scale
    assert x.dtype == ember.int8 and x.shape == (1, 8, 12, 12)


def test_float64_scales_take_the_default_body(rng):
    """Codes with float64 scales: the contract's composite body (no float64 kernel)."""
    x = _code_input(rng, (2, 9), "int8")
    w = rng.integers(-127, 127, (3, 9), endpoint=True).astype(np.int8)
    y = qlinear(_t(x), _t(w), _t(np.ones(3)), None, _t(np.ones(1)),
                out_scale=_t(np.array([4.0])), out_range=(-127, 127))
    assert_codes(y.numpy(), _linear_acc(x, w) / 4.0, -127, 127)


@pytest.mark.parametrize("out_range", [(-127, 127), (0, 255)])
def test_exact_half_integers_round_away_from_zero(rng, out_range):
    """Unit scales and out_scale 2: v = sum / 2 exactly, so odd sums are ties, rounded away
    from zero in the SIMD epilogue and in the scalar tail (13 columns: 8 + 5) alike."""
    x = rng.integers(-3, 3, (9, 6), endpoint=True).astype(np.int8)
    w = rng.integers(-3, 3, (13, 6), endpoint=True).astype(np.int8)
    one = np.ones(1, np.float32)
    y = qlinear(_t(x), _t(w), _t(np.ones(13, np.float32)), None, _t(one),
                out_scale=_t(np.array([2.0], np.float32)), out_range=out_range)
    v = _linear_acc(x, w) / 2
    assert (v % 1 == 0.5).sum() > 20
    np.testing.assert_array_equal(y.numpy(), np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5),
                                                     *out_range))


@pytest.mark.parametrize("groups", [1, 8])  # the pair GEMM's tiles, the depthwise rows
def test_exact_half_integers_round_away_from_zero_in_convs(rng, groups):
    x = rng.integers(-3, 3, (1, 8, 9, 9), endpoint=True).astype(np.int8)
    w = rng.integers(-3, 3, (8, 8 // groups, 3, 3), endpoint=True).astype(np.int8)
    y = qconv2d(_t(x), _t(w), _t(np.ones(8, np.float32)), None, _t(np.ones(1, np.float32)),
                (1, 1), SAME3, (1, 1), groups, out_scale=_t(np.array([2.0], np.float32)))
    v = _conv_acc(x, w, (1, 1), SAME3, (1, 1), groups) / 2
    assert (v % 1 == 0.5).sum() > 20
    np.testing.assert_array_equal(y.numpy(), np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5),
                                                     -127, 127))


@pytest.mark.parametrize("groups", [1, 6])
def test_int8_codes_use_all_256_values(rng, groups):
    """-128 is no code a quantizer writes, but an int8 tensor may hold it: used as it is."""
    x = rng.integers(-128, 127, (2, 6, 9, 9), endpoint=True).astype(np.int8)
    x[0, 0, 0, :] = -128
    w = rng.integers(-127, 127, (6, 6 // groups, 3, 3), endpoint=True).astype(np.int8)
    one = np.ones(1, np.float32)
    y = qconv2d(_t(x), _t(w), _t(np.ones(6, np.float32)), None, _t(one), (1, 1), SAME3,
                (1, 1), groups)
    np.testing.assert_array_equal(y.numpy(), _conv_acc(x, w, (1, 1), SAME3, (1, 1), groups))
    xl = x.reshape(-1, 81)
    wl = rng.integers(-127, 127, (5, 81), endpoint=True).astype(np.int8)
    y = qlinear(_t(xl), _t(wl), _t(np.ones(5, np.float32)), None, _t(one))
    np.testing.assert_array_equal(y.numpy(), _linear_acc(xl, wl))
