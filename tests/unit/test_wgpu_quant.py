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


# K <= quant._EXACT_K: the float matmul on codes in one part; longer: in exact parts
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
    ((1, 1100, 2, 3), (6, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),  # 1x1 in two exact parts
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


# unsigned input codes: K <= 518 one float part, longer: two and three parts
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
    ((2, 600, 3, 2), (7, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),  # 1x1 in two float parts
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
