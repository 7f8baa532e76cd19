"""The wgpu quantized kernels (shaders/quant.wgsl) on a real adapter (Mesa lavapipe on
CPU-only machines), against float64 references from the same integer codes: both dot paths
(dot4I8Packed and the unpacked bytes), tile edges, K not a multiple of 4, groups, depthwise,
strided inputs, and a quantized model on wgpu against numpy."""

from __future__ import annotations

import pytest
from _wgpu import B, np

import ember
from ember import nn
from ember.backends.wgpu import quant
from ember.quantize.functional import qconv2d, qlinear

rng = np.random.default_rng(71)


@pytest.fixture(params=["dot4I8Packed", "dot4_unpacked"])
def dot(request, monkeypatch):
    if request.param == "dot4I8Packed" and quant.dot_mode(B.rt) != "dot4I8Packed":
        pytest.skip("the adapter has no packed_4x8_integer_dot_product")
    monkeypatch.setitem(quant._DOT, B.rt, request.param)
    return request.param


def _codes(x, s, unsigned=False):
    v = np.asarray(x, np.float64) / s
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), 0 if unsigned else -127,
                   255 if unsigned else 127)


def _inputs(shape, s):
    ints = rng.integers(-140, 140, size=shape)
    return ((ints + rng.uniform(-0.4, 0.4, size=shape)) * s).astype(np.float32)


def _t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, backend="wgpu")


# K <= quant._EXACT_K: the float matmul's sums exact in f32; longer: moved into int32 on the way
@pytest.mark.parametrize("m,k,n", [(1, 3, 1), (33, 70, 65), (64, 256, 40), (5, 1031, 7),
                                   (3, 1100, 9), (2, 2100, 5)])
def test_qlinear_matches_the_float64_product(dot, m, k, n):
    s = 0.25
    x = _inputs((m, k), s)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    ws = rng.uniform(0.001, 0.02, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    y = qlinear(_t(x), _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s]))).numpy()
    want = (_codes(x, s) @ w.T.astype(np.float64)) * (s * ws.astype(np.float64)) + b
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("unsigned", [False, True])
def test_the_longest_float_sum_of_extreme_codes_is_exact(unsigned):
    # every product at its largest (127 · 127, unsigned 255 · 127): the longest sum the float
    # path takes in one part
    k, top = quant._EXACT_K[unsigned], 255 if unsigned else 127
    s = 0.5
    x = np.full((2, k), top * s, np.float32)
    x[1] *= -1  # unsigned: clamped to code 0
    w = np.full((3, k), 127, np.int8)
    y = qlinear(_t(x), _t(w, ember.int8), _t(np.full(3, 2.0, np.float32)),
                _t(np.zeros(3, np.float32)), _t(np.float32([s])), unsigned=unsigned).numpy()
    # sum · in_scale · w_scale = k · top · 127 · 0.5 · 2: exact when the sum is
    np.testing.assert_array_equal(y, [[k * top * 127] * 3, [0 if unsigned else -k * top * 127] * 3])
    assert k * top * 127 < 2 ** 24


CONVS = [
    # x shape, (c_out, kh, kw), stride, padding, groups
    ((2, 3, 9, 9), (5, 3, 3), (2, 2), ((0, 1), (0, 1)), 1),  # the implicit GEMM on codes
    ((1, 16, 6, 6), (40, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),  # 1x1: the float matmul
    ((1, 1100, 2, 3), (6, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),  # 1x1, K past the f32 sums: int32 totals
    ((1, 117, 4, 4), (3, 3, 3), (1, 1), ((1, 1), (1, 1)), 1),  # K = 1053: integer, repacked
    ((1, 8, 7, 7), (8, 3, 3), (1, 1), ((1, 1), (1, 1)), 2),
    ((2, 12, 8, 8), (12, 5, 5), (2, 2), ((1, 2), (1, 2)), 12),  # depthwise
]


@pytest.mark.parametrize("xs,wk,stride,pad,groups", CONVS)
def test_qconv_matches_the_float64_conv(dot, xs, wk, stride, pad, groups):
    torch = pytest.importorskip("torch")
    s = 0.125
    x = _inputs(xs, s)
    c_out, kh, kw = wk
    w = rng.integers(-127, 128, (c_out, xs[1] // groups, kh, kw)).astype(np.int8)
    ws = rng.uniform(0.001, 0.02, c_out).astype(np.float32)
    b = rng.uniform(-1, 1, c_out).astype(np.float32)
    # a strided input view: the kernels read it through its offset and strides (or a copy)
    big = np.zeros(xs[:3] + (xs[3] * 2,), np.float32)
    big[..., ::2] = x
    xv = _t(big)[..., ::2]
    y = qconv2d(xv, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), stride, pad, (1, 1),
                groups).numpy()
    q = np.pad(_codes(x, s), ((0, 0), (0, 0), pad[0], pad[1]))
    acc = torch.nn.functional.conv2d(torch.from_numpy(q), torch.from_numpy(w.astype(np.float64)),
                                     stride=stride, groups=groups).numpy()
    want = acc * (s * ws.astype(np.float64)).reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("kernel,groups", [(1, 1), (3, 1), (3, 4)])
def test_qconv_without_a_bias(kernel, groups):
    s = 0.5
    x = _inputs((1, 4, 5, 5), s)
    w = rng.integers(-127, 128, (4, 4 // groups, kernel, kernel)).astype(np.int8)
    ws = rng.uniform(0.01, 0.02, 4).astype(np.float32)
    y = qconv2d(_t(x), _t(w, ember.int8), _t(ws), None, _t(np.float32([s])), (1, 1),
                ((0, 0), (0, 0)), (1, 1), groups).numpy()
    want = qconv2d(ember.tensor(x), ember.tensor(w, dtype=ember.int8), ember.tensor(ws), None,
                   ember.tensor(np.float32([s])), (1, 1), ((0, 0), (0, 0)), (1, 1),
                   groups).numpy()  # numpy's integer kernels
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-6)


# unsigned input codes: K <= 518 plain float sums, longer: centred, past 1032 int32 totals
@pytest.mark.parametrize("m,k,n", [(4, 300, 6), (3, 700, 5), (2, 1100, 3)])
def test_qlinear_u8_matches_the_float64_product(m, k, n):
    s = 0.25
    x = _inputs((m, k), s) + np.float32(120 * s)  # mostly codes 0..255, some clamped
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    ws = rng.uniform(0.001, 0.02, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    y = qlinear(_t(x), _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])),
                unsigned=True).numpy()
    want = (_codes(x, s, True) @ w.T.astype(np.float64)) * (s * ws.astype(np.float64)) + b
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("xs,wk,stride,pad,groups", [
    ((2, 600, 3, 2), (7, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),  # 1x1, centred codes
    ((2, 6, 7, 7), (6, 3, 3), (2, 2), ((1, 1), (1, 1)), 6),  # depthwise kernel
    ((1, 4, 5, 5), (3, 3, 3), (1, 1), ((1, 1), (1, 1)), 1),  # the implicit GEMM on codes
    ((1, 60, 3, 3), (2, 3, 3), (1, 1), ((1, 1), (1, 1)), 1),  # K = 540: the contract's body
])
def test_qconv_u8_matches_the_float64_conv(xs, wk, stride, pad, groups):
    torch = pytest.importorskip("torch")
    s = 0.125
    x = _inputs(xs, s) + np.float32(100 * s)
    c_out, kh, kw = wk
    w = rng.integers(-127, 128, (c_out, xs[1] // groups, kh, kw)).astype(np.int8)
    ws = rng.uniform(0.001, 0.02, c_out).astype(np.float32)
    b = rng.uniform(-1, 1, c_out).astype(np.float32)
    y = qconv2d(_t(x), _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), stride, pad,
                (1, 1), groups, unsigned=True).numpy()
    q = np.pad(_codes(x, s, True), ((0, 0), (0, 0), pad[0], pad[1]))
    acc = torch.nn.functional.conv2d(torch.from_numpy(q), torch.from_numpy(w.astype(np.float64)),
                                     stride=stride, groups=groups).numpy()
    want = acc * (s * ws.astype(np.float64)).reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-5)


def test_a_quantized_model_on_wgpu_matches_numpy():
    ember.seed(4)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(),
                          nn.Conv2d(8, 12, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(12, 4)).eval()
    x = ember.tensor(rng.normal(0, 1, (4, 3, 8, 8)).astype(np.float32))
    q = ember.quantize(model, x)
    want = q(x).numpy()
    got = q.to("wgpu")(x.to("wgpu")).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # quantized where it lives: the copy's tensors are new GPU buffers, the model's untouched
    on_gpu = model.to("wgpu")
    q2 = ember.quantize(on_gpu, x.to("wgpu"))
    np.testing.assert_allclose(q2(x.to("wgpu")).numpy(), want, rtol=1e-5, atol=1e-5)
    assert q2[0].bias._prim is not on_gpu[0].bias._prim
    np.testing.assert_allclose(on_gpu(x.to("wgpu")).numpy(), model.to("numpy")(x).numpy(),
                               rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- codes between layers
# qlinear_q / qconv_q end in int8/uint8 codes (four per u32 word on wgpu); every op also
# takes codes as x. References: numpy float64 from the same integer codes.

_RANGES = {"relu6": (0, 48), "u8": (0, 255), "i8": (-127, 127), "narrow": (-20, 90)}


def _input_codes(shape, kind):
    """``(wgpu x, its codes as float64, in_scale)``: int8/uint8 codes, or a float32 input."""
    s = 0.0625
    if kind == "float32":
        x = _inputs(shape, s)
        return _t(x), _codes(x, s), s
    lo, hi = (0, 255) if kind == "uint8" else (-127, 127)
    q = rng.integers(lo, hi + 1, shape)
    return _t(q.astype(kind), getattr(ember, kind)), q.astype(np.float64), s


def _layer(c_out, w_shape):
    w = rng.integers(-127, 128, w_shape).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
    b = rng.uniform(-2, 2, c_out).astype(np.float32)
    return w, ws, b


def _requant(acc, s, ws, b, o, lo, hi, axis):
    """The contract's codes out in float64, and v (``acc`` with channels along ``axis``)."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    ws64, b64 = ws.astype(np.float64).reshape(shape), b.astype(np.float64).reshape(shape)
    v = acc * (np.float64(np.float32(s)) * ws64 / np.float64(np.float32(o))) + b64 / np.float32(o)
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), lo, hi), v


def _assert_codes(y, want, v, dtype):
    assert y.dtype == dtype, (y.dtype, dtype)
    got = y.numpy().astype(np.int64)
    off = np.abs(got - want)
    # a code may differ by one only where v is within 1e-3 of a half-integer
    near_half = np.abs(np.abs(v - np.floor(v)) - 0.5) < 1e-3
    bad = (off > 1) | ((off == 1) & ~near_half)
    assert not bad.any(), (f"{bad.sum()} codes of {bad.size} differ: got {got[bad][:8]}, "
                           f"want {want[bad][:8]}")


def _dtype_of(lo):
    return ember.uint8 if lo >= 0 else ember.int8


# (m, k, n): tails (n % 4 != 0), one row, and k past the exact float sums (int32 totals)
@pytest.mark.parametrize("kind", ["uint8", "int8", "float32"])
@pytest.mark.parametrize("m,k,n,rng_", [(5, 70, 12, "u8"), (3, 33, 10, "i8"), (1, 3, 1, "relu6"),
                                        (33, 130, 67, "narrow"), (4, 1100, 9, "i8"),
                                        (3, 700, 6, "relu6"), (2, 2100, 5, "i8")])
def test_qlinear_codes_in_and_out(kind, m, k, n, rng_):
    x, q, s = _input_codes((m, k), kind)
    w, ws, b = _layer(n, (n, k))
    lo, hi = _RANGES[rng_]
    o = 0.11
    y = qlinear(x, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), unsigned=True,
                out_scale=_t(np.float32([o])), out_range=(lo, hi))
    q = q if kind != "float32" else _codes(x.numpy(), s, True)
    want, v = _requant(q @ w.T.astype(np.float64), s, ws, b, o, lo, hi, 1)
    _assert_codes(y, want, v, _dtype_of(lo))
    assert y.tolist() == y.numpy().tolist()


@pytest.mark.parametrize("kind", ["uint8", "int8"])
def test_qlinear_codes_in_float_out(kind):
    x, q, s = _input_codes((6, 45), kind)
    w, ws, b = _layer(7, (7, 45))
    y = qlinear(x, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s]))).numpy()
    want = (q @ w.T.astype(np.float64)) * (s * ws.astype(np.float64)) + b
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("kind", ["uint8", "int8"])
@pytest.mark.parametrize("wk,pad,groups", [((6, 1, 1), 0, 1), ((8, 3, 3), 1, 8),
                                           ((5, 3, 3), 1, 1)])
def test_qconv_codes_in_float_out(kind, wk, pad, groups):
    torch = pytest.importorskip("torch")
    x, q, s = _input_codes((2, 8, 9, 9), kind)
    w, ws, b = _layer(wk[0], (wk[0], 8 // groups, wk[1], wk[2]))
    y = qconv2d(x, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), (1, 1),
                ((pad, pad), (pad, pad)), (1, 1), groups)
    assert y.dtype == ember.float32
    acc = torch.nn.functional.conv2d(torch.from_numpy(q), torch.from_numpy(w.astype(np.float64)),
                                     padding=pad, groups=groups).numpy()
    want = acc * (s * ws.astype(np.float64)).reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("top,wv", [(255, 127), (0, 127), (255, -127), (0, -127)])
def test_the_longest_sum_of_centred_unsigned_codes_is_exact(top, wv):
    # uint8 codes past quant._EXACT_K[True] are read less 128 (products within ±128·127) and
    # 128 × the weight's sums added back: the longest sum in one part at the extremes
    k = quant._CENTRED_K
    x = _t(np.full((2, k), top, np.uint8), ember.uint8)
    w = np.full((3, k), wv, np.int8)
    one = _t(np.float32([1.0]))
    y = qlinear(x, _t(w, ember.int8), _t(np.ones(3, np.float32)), _t(np.zeros(3, np.float32)),
                one).numpy()
    np.testing.assert_array_equal(y, np.full((2, 3), float(np.float32(k * top * wv))))
    assert k * 128 * 127 < 2 ** 24


@pytest.mark.parametrize("k", [1032, 1040])
def test_int8_codes_of_minus_128_sum_exactly(k):
    # int8 codes are used as they are, -128 too: past 1032 such sums leave float32's exact
    # integers, so they are moved into int32 sums
    x = _t(np.full((2, k), -128, np.int8), ember.int8)
    one = _t(np.float32([1.0]))
    y = qlinear(x, _t(np.full((3, k), 127, np.int8), ember.int8), _t(np.ones(3, np.float32)),
                _t(np.zeros(3, np.float32)), one).numpy()
    np.testing.assert_array_equal(y, np.full((2, 3), float(np.float32(-128 * 127 * k))))


CODE_CONVS = [
    # x shape, (c_out, kh, kw), stride, padding, groups
    ((2, 8, 7, 7), (6, 1, 1), 1, 0, 1),  # 1x1, 49 positions: planes padded to 52
    ((2, 16, 14, 14), (12, 1, 1), 1, 0, 1),  # 1x1, whole words
    ((1, 600, 3, 3), (5, 1, 1), 1, 0, 1),  # 1x1, centred unsigned codes
    ((2, 8, 14, 14), (8, 3, 3), 1, 1, 8),  # depthwise 3x3 s1
    ((2, 8, 15, 13), (8, 3, 3), 2, 1, 8),  # depthwise 3x3 s2, odd sizes
    ((2, 6, 7, 7), (6, 5, 5), 1, 2, 6),  # depthwise 5x5 s1 on 7x7
    ((1, 4, 28, 28), (4, 5, 5), 2, 2, 4),  # depthwise 5x5 s2
    ((1, 2, 37, 37), (2, 3, 3), 1, 1, 2),  # depthwise, tiles of 24 rows (24·37: whole words)
    ((1, 3, 64, 64), (3, 3, 3), 2, 1, 3),  # depthwise s2, 32 wide: codes via workgroup memory
    ((1, 3, 72, 72), (3, 5, 5), 2, 2, 3),  # the same, 36 wide: a partial last tile
    ((1, 3, 7, 7), (3, 3, 3), 1, 1, 3),  # two planes a workgroup: the last one has none
    ((1, 2, 40, 40), (2, 5, 5), 1, 2, 2),  # depthwise, tiles of 25 rows
    ((1, 1, 5, 1500), (1, 5, 5), 1, 2, 1),  # depthwise rows too wide to stage: conv, requant
    ((1, 3, 12, 12), (8, 3, 3), 2, 1, 1),  # the stem: the implicit GEMM storing codes
    ((1, 4, 10, 9), (6, 3, 3), 2, 1, 1),  # general, 5x5 outputs: float, then requantized
    ((1, 8, 7, 7), (8, 3, 3), 1, 1, 2),  # grouped
]


@pytest.mark.parametrize("kind", ["uint8", "int8", "float32"])
@pytest.mark.parametrize("xs,wk,stride,pad,groups", CODE_CONVS)
@pytest.mark.parametrize("rng_", ["relu6", "i8"])
def test_qconv_codes_in_and_out(kind, xs, wk, stride, pad, groups, rng_):
    _check_qconv_codes(kind, xs, wk, stride, pad, groups, rng_)


@pytest.mark.parametrize("kind", ["int8", "float32"])
def test_qconv_codes_through_the_integer_gemm(dot, kind):
    # K = 1053 (int8 codes past float32's exact sums): packed patches, the integer GEMM
    _check_qconv_codes(kind, (1, 117, 4, 4), (3, 3, 3), 1, 1, 1, "relu6")


@pytest.mark.parametrize("kind", ["uint8", "int8"])
@pytest.mark.parametrize("out", ["float", "codes"])
def test_depthwise_stages_code_words_at_any_alignment(kind, out):
    # int8/uint8 codes are staged a u32 word per load: rows starting at any byte of a word
    # (a view at an odd offset, rows of 13), the image's edges inside a word
    torch = pytest.importorskip("torch")
    big, q, s = _input_codes((2, 6, 12, 13), kind)
    x, q = big[:, :, 1:, 2:], q[:, :, 1:, 2:]
    w, ws, b = _layer(6, (6, 1, 3, 3))
    o = 0.37
    extra = dict(out_scale=_t(np.float32([o])), out_range=(-127, 127)) if out == "codes" else {}
    y = qconv2d(x, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), (1, 1),
                ((1, 1), (1, 1)), (1, 1), 6, **extra)
    acc = torch.nn.functional.conv2d(torch.from_numpy(q), torch.from_numpy(w.astype(np.float64)),
                                     padding=1, groups=6).numpy()
    if out == "codes":
        want, v = _requant(acc, s, ws, b, o, -127, 127, 1)
        _assert_codes(y, want, v, ember.int8)
    else:
        want = acc * (s * ws.astype(np.float64)).reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
        np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=1e-5)


# dispatches at plane sizes 7, 16 (each a whole plane in one tile) and 64 (rows of whole
# words over several tiles)
@pytest.mark.parametrize("size", [7, 16, 64])
@pytest.mark.parametrize("variant,dispatches", [("none", (2, 2, 2)), ("wide", (2, 1, 1)),
                                                ("words", (2, 2, 2)),
                                                ("words,ctile", (2, 2, 1)),
                                                ("words,cplane", (1, 1, 2)), ("", (2, 1, 1))])
def test_the_depthwise_variants_agree(monkeypatch, size, variant, dispatches):
    # EMBER_WGPU_Q8_DEPTHWISE (for comparing them on a device): the same codes either way,
    # in one dispatch, or two (float sums, then requantized)
    monkeypatch.setenv("EMBER_WGPU_Q8_DEPTHWISE", variant)
    torch = pytest.importorskip("torch")
    x, q, s = _input_codes((2, 6, size, size), "uint8")
    w, ws, b = (_t(a, d) for a, d in zip(_layer(6, (6, 1, 5, 5)), (ember.int8, None, None)))
    scales = _t(np.float32([s])), _t(np.float32([0.3]))
    x.numpy(), w.numpy(), ws.numpy(), b.numpy()  # uploads done
    before = B.rt.engine.dispatches
    y = qconv2d(x, w, ws, b, scales[0], (1, 1), ((2, 2), (2, 2)), (1, 1), 6,
                out_scale=scales[1], out_range=(0, 48))
    assert B.rt.engine.dispatches - before == dispatches[(7, 16, 64).index(size)]
    acc = torch.nn.functional.conv2d(torch.from_numpy(q), torch.from_numpy(
        w.numpy().astype(np.float64)), padding=2, groups=6).numpy()
    want, v = _requant(acc, s, ws.numpy(), b.numpy(), 0.3, 0, 48, 1)
    _assert_codes(y, want, v, ember.uint8)


def test_an_unknown_depthwise_variant_warns_and_uses_the_default(monkeypatch):
    from ember.backends.wgpu import depthwise

    monkeypatch.setenv("EMBER_WGPU_Q8_DEPTHWISE", "words,fast")
    with pytest.warns(UserWarning, match="not a list of words, wide, ctile, cplane"):
        assert depthwise._variants() == ("words", "wide", "ctile")


def _check_qconv_codes(kind, xs, wk, stride, pad, groups, rng_):
    torch = pytest.importorskip("torch")
    x, q, s = _input_codes(xs, kind)
    c_out, kh, kw = wk
    w, ws, b = _layer(c_out, (c_out, xs[1] // groups, kh, kw))
    lo, hi = _RANGES[rng_]
    o = 0.37
    y = qconv2d(x, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), (stride, stride),
                ((pad, pad), (pad, pad)), (1, 1), groups, out_scale=_t(np.float32([o])),
                out_range=(lo, hi))
    acc = torch.nn.functional.conv2d(torch.from_numpy(q), torch.from_numpy(w.astype(np.float64)),
                                     stride=stride, padding=pad, groups=groups).numpy()
    want, v = _requant(acc, s, ws, b, o, lo, hi, 1)
    _assert_codes(y, want, v, _dtype_of(lo))


def test_codes_flow_through_a_chain_of_layers():
    # each layer's codes (the padded planes of 7x7 included) are the next one's input, as
    # in EfficientNet's blocks: 1x1 expand, depthwise 5x5, 1x1 project, then a Linear
    torch = pytest.importorskip("torch")
    x, q, s = _input_codes((2, 8, 7, 7), "uint8")
    layers = [((24, 8, 1, 1), 1, 1, (0, 48)), ((24, 1, 5, 5), 24, 2, (0, 48)),
              ((10, 24, 1, 1), 1, 0, (-127, 127))]
    for shape, groups, pad, (lo, hi) in layers:
        w, ws, b = _layer(shape[0], shape)
        o = 0.29
        y = qconv2d(x, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])), (1, 1),
                    ((pad, pad), (pad, pad)), (1, 1), groups, out_scale=_t(np.float32([o])),
                    out_range=(lo, hi))
        acc = torch.nn.functional.conv2d(torch.from_numpy(q),
                                         torch.from_numpy(w.astype(np.float64)), padding=pad,
                                         groups=groups).numpy()
        want, v = _requant(acc, s, ws, b, o, lo, hi, 1)
        _assert_codes(y, want, v, _dtype_of(lo))
        x, q, s = y, y.numpy().astype(np.float64), o
    flat = x.flatten(1)
    w, ws, b = _layer(5, (5, flat.shape[1]))
    y = qlinear(flat, _t(w, ember.int8), _t(ws), _t(b), _t(np.float32([s])),
                out_scale=_t(np.float32([0.5])), out_range=(-127, 127))
    want, v = _requant(q.reshape(2, -1) @ w.T.astype(np.float64), s, ws, b, 0.5, -127, 127, 1)
    _assert_codes(y, want, v, ember.int8)


@pytest.mark.parametrize("xs,wk,pad,groups,dispatches", [
    ((2, 8, 7, 7), (6, 8, 1, 1), 0, 1, 1),  # 1x1 (padded planes)
    ((2, 16, 16, 16), (16, 1, 3, 3), 1, 16, 1),  # depthwise: rows of whole words
    # depthwise, 7-wide rows: a whole plane a tile (codes in the tile off by default:
    # float, requant)
    ((2, 8, 7, 7), (8, 1, 5, 5), 2, 8, 2),
    ((1, 2, 37, 37), (2, 1, 3, 3), 1, 2, 2),  # depthwise, words across tiles: float, requant
    ((2, 3, 16, 16), (8, 3, 3, 3), 1, 1, 1),  # the stem's implicit GEMM (whole words)
])
def test_a_layer_of_codes_takes_its_dispatches(xs, wk, pad, groups, dispatches):
    x, _, s = _input_codes(xs, "uint8")
    w, ws, b = (_t(a, d) for a, d in zip(_layer(wk[0], wk), (ember.int8, None, None)))
    scales = _t(np.float32([s])), _t(np.float32([0.3]))
    x.numpy(), w.numpy(), ws.numpy(), b.numpy()  # uploads done
    before = B.rt.engine.dispatches
    y = qconv2d(x, w, ws, b, scales[0], (1, 1), ((pad, pad), (pad, pad)), (1, 1), groups,
                out_scale=scales[1], out_range=(0, 20))
    assert B.rt.engine.dispatches - before == dispatches
    assert y.dtype == ember.uint8


@pytest.mark.parametrize("dtype,lo,hi", [("uint8", 0, 255), ("int8", -127, 127)])
def test_ops_a_chain_passes_codes_through(dtype, lo, hi):
    # zero padding (SamePad2d), max pooling, reshape/flatten and reads of packed codes, also
    # of a padded-planes layout (qconv_q's 7x7 output)
    torch = pytest.importorskip("torch")
    from ember.nn import functional as F
    from ember.tensor import Tensor

    a = rng.integers(lo, hi + 1, (2, 4, 7, 7)).astype(dtype)
    eye = np.eye(4, dtype=np.int8).reshape(4, 4, 1, 1)
    one = _t(np.float32([1.0]))
    if dtype == "uint8":
        x = qconv2d(_t(a, ember.uint8), _t(eye, ember.int8), _t(np.ones(4, np.float32)), None,
                    one, (1, 1), ((0, 0), (0, 0)), (1, 1), 1, out_scale=one, out_range=(0, 255))
        assert x._prim.strides == (208, 52, 7, 1)  # planes padded to whole words
    else:
        x = _t(a, ember.int8)
    assert x.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.tolist() == a.tolist()
    np.testing.assert_array_equal(F.pad(x, (1, 2, 0, 1)).numpy(),
                                  np.pad(a, ((0, 0), (0, 0), (0, 1), (1, 2))))
    np.testing.assert_array_equal(x.flatten(1).numpy(), a.reshape(2, -1))
    np.testing.assert_array_equal(x.reshape(8, 49).numpy(), a.reshape(8, 49))
    pooled = Tensor(x.backend.max_pool(x._prim, (3, 3), (2, 2), (1, 1), (1, 1), False), x.backend)
    want = torch.nn.functional.max_pool2d(torch.from_numpy(a.astype(np.float32)), 3, 2, 1)
    assert pooled.dtype == x.dtype
    np.testing.assert_array_equal(pooled.numpy(), want.numpy().astype(dtype))


# ---------------------------------------------------------------- sums past float32's integers
# K past the float accumulators' exact integers (the last stages' 1x1 convs have K = 1152):
# the matmul moves its f32 sums into int32 ones as it goes, in the same single dispatch, and
# converts the total once: the contract's float(acc), bit for bit. The codes are large and
# mostly of one sign, so the sums pass 2^24 and their float32 is rounded.

_LONG_KINDS = ["int8", "uint8", "float32", "float32u"]


def _long_input(shape, kind):
    """``(wgpu x, its codes as int64, unsigned)``: codes near the top of their range (a few
    at the extremes, -128 for int8), x at in_scale 1."""
    lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "float32": (-127, 127),
              "float32u": (0, 255)}[kind]
    q = np.clip(rng.integers(hi - 15, hi + 1, shape) * np.where(rng.random(shape) < 0.97, 1, -1),
                lo, hi)
    q.flat[::7] = lo
    if kind.startswith("float32"):
        return _t(q.astype(np.float32)), q.astype(np.int64), kind == "float32u"
    return _t(q.astype(kind), getattr(ember, kind)), q.astype(np.int64), False


def _long_weight(c_out, k):
    w = rng.integers(90, 128, (c_out, k)) * np.where(np.arange(c_out) % 2, -1, 1)[:, None]
    return w.astype(np.int8)


def _one_dispatch(run, *tensors):
    for t in tensors:
        t.numpy()  # uploads done
    before = B.rt.engine.dispatches
    y = run()
    assert B.rt.engine.dispatches - before == 1
    return y


@pytest.mark.parametrize("kind", _LONG_KINDS)
@pytest.mark.parametrize("k", [1152, 2500])
@pytest.mark.parametrize("layer", ["linear", "conv1x1"])
def test_long_sums_are_exact_in_one_dispatch(kind, k, layer):
    c_out = 6
    shape = (5, k) if layer == "linear" else (2, k, 3, 3)
    x, q, unsigned = _long_input(shape, kind)
    w = _long_weight(c_out, k)
    ones, zeros = _t(np.ones(c_out, np.float32)), _t(np.zeros(c_out, np.float32))
    one = _t(np.float32([1.0]))
    wt = _t(w if layer == "linear" else w.reshape(c_out, k, 1, 1), ember.int8)
    if layer == "linear":
        acc = q @ w.T.astype(np.int64)
        y = _one_dispatch(lambda: qlinear(x, wt, ones, zeros, one, unsigned=unsigned),
                          x, wt, ones, zeros, one)
    else:
        acc = np.einsum("nchw,oc->nohw", q, w.astype(np.int64))
        y = _one_dispatch(lambda: qconv2d(x, wt, ones, zeros, one, (1, 1), ((0, 0), (0, 0)),
                                          (1, 1), 1, unsigned=unsigned), x, wt, ones, zeros, one)
    if k > 2000:  # past float32's exact integers: rounded
        assert np.abs(acc).max() > 2 ** 24
    np.testing.assert_array_equal(y.numpy(), acc.astype(np.float32))


@pytest.mark.parametrize("kind", _LONG_KINDS)
@pytest.mark.parametrize("k", [1152, 2500])
@pytest.mark.parametrize("layer,rng_", [("linear", "i8"), ("conv1x1", "u8"),
                                        ("conv1x1", "i8")])
def test_long_sums_end_in_codes_in_one_dispatch(kind, k, layer, rng_):
    c_out = 7
    shape = (5, k) if layer == "linear" else (2, k, 7, 7)
    x, q, unsigned = _input_codes(shape, "float32" if kind == "float32u" else kind)
    unsigned = kind == "float32u"
    if kind.startswith("float32"):
        q = _codes(x.numpy(), 0.0625, unsigned)
    w, ws, b = _layer(c_out, (c_out, k))
    lo, hi = _RANGES[rng_]
    o = 2.5
    s = _t(np.float32([0.0625]))
    out_scale, wsb, bt = _t(np.float32([o])), _t(ws), _t(b)
    wt = _t(w if layer == "linear" else w.reshape(c_out, k, 1, 1), ember.int8)
    if layer == "linear":
        acc = q @ w.T.astype(np.float64)
        y = _one_dispatch(lambda: qlinear(x, wt, wsb, bt, s, unsigned=unsigned,
                                          out_scale=out_scale, out_range=(lo, hi)),
                          x, wt, wsb, bt, s, out_scale)
    else:
        acc = np.einsum("nchw,oc->nohw", q, w.astype(np.float64))
        y = _one_dispatch(lambda: qconv2d(x, wt, wsb, bt, s, (1, 1), ((0, 0), (0, 0)), (1, 1),
                                          1, unsigned=unsigned, out_scale=out_scale,
                                          out_range=(lo, hi)), x, wt, wsb, bt, s, out_scale)
    want, v = _requant(acc, 0.0625, ws, b, o, lo, hi, 1)
    _assert_codes(y, want, v, _dtype_of(lo))
    assert len(np.unique(want)) > 10  # the codes span the range, not all clamped
