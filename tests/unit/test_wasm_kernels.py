"""The wasm backend's fast kernels (wasm/matmul.c, conv.c, pool.c, nn.c) against float64
references (numpy, and torch CPU for convolutions and pooling): many shapes with odd sizes,
strided views, padding/stride/dilation/groups, empty dims, NaN/inf."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("wasmtime")
torch = pytest.importorskip("torch")

from ember.backends.wasm.backend import WasmBackend  # noqa: E402
from ember.tensordata import TensorData  # noqa: E402

FLOATS = (np.float32, np.float64)


@pytest.fixture(scope="module")
def b():
    return WasmBackend()


@pytest.fixture
def rng():
    return np.random.default_rng(15)


def up(b, a):
    return b.from_data(TensorData.from_numpy(np.ascontiguousarray(a)))


def down(b, t) -> np.ndarray:
    return b.to_data(t).to_numpy()


def close(got, ref, dtype, scale=1.0):
    """float32 results within a few ulps of a float64 reference (sums grow with ``scale``)."""
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape
    tol = (1e-5 if dtype == np.float32 else 1e-12) * max(scale, 1.0)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def t64(a):
    if isinstance(a, torch.Tensor):
        return a
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


# ---------------------------------------------------------------------- matmul
MATMUL_SHAPES = [(1, 1, 1), (3, 5, 7), (4, 8, 8), (17, 33, 9), (65, 300, 70), (5, 257, 1030),
                 (130, 64, 3), (4, 0, 5), (0, 3, 4), (3, 4, 0)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,k,n", MATMUL_SHAPES)
def test_float_matmul_vs_float64(b, rng, dtype, m, k, n):
    a = rng.standard_normal((m, k)).astype(dtype)
    c = rng.standard_normal((k, n)).astype(dtype)
    got = down(b, b.float_matmul(up(b, a), up(b, c)))
    close(got, a.astype(np.float64) @ c.astype(np.float64), dtype, np.sqrt(k))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows", [1, 3, 6])  # below 4 rows: the unpacked (thin) paths
def test_matmul_reads_transposed_and_sliced_views(b, rng, dtype, rows):
    # x @ W.T with W (out, in) stored row-major: a permuted view, packed from its strides
    x = rng.standard_normal((rows, 37)).astype(dtype)
    w = rng.standard_normal((19, 37)).astype(dtype)
    xt = b.permute(up(b, x.T), (1, 0))  # a transposed view of x, too
    got = down(b, b.float_matmul(xt, b.permute(up(b, w), (1, 0))))
    close(got, x.astype(np.float64) @ w.T.astype(np.float64), dtype, 6)
    big = rng.standard_normal((20, 50)).astype(dtype)
    view = b.slice(up(b, big), ((2, 2 + 2 * rows, 2), (1, 38, 1)))  # every other row
    got = down(b, b.float_matmul(view, b.permute(up(b, w), (1, 0))))
    ref = big[2 : 2 + 2 * rows : 2, 1:38].astype(np.float64) @ w.T.astype(np.float64)
    close(got, ref, dtype, 6)
    got = down(b, b.float_matmul(view, up(b, w.T)))  # rows of B contiguous
    close(got, ref, dtype, 6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_batched_matmul_with_expanded_operand(b, rng, dtype):
    a = rng.standard_normal((2, 3, 5, 9)).astype(dtype)
    w = rng.standard_normal((9, 4)).astype(dtype)
    wb = b.expand(b.reshape(up(b, w), (1, 1, 9, 4)), (2, 3, 9, 4))  # batch strides 0
    got = down(b, b.float_matmul(up(b, a), wb))
    close(got, a.astype(np.float64) @ w.astype(np.float64), dtype, 3)
    empty = down(b, b.float_matmul(up(b, a[:0]), b.expand(b.reshape(up(b, w), (1, 1, 9, 4)),
                                                          (0, 3, 9, 4))))
    assert empty.shape == (0, 3, 5, 4)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 17, 5), (9, 40, 13), (2, 0, 3)])
def test_int_matmul_wraps_like_numpy(b, rng, dtype, m, k, n):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (m, k), endpoint=True).astype(dtype)
    c = rng.integers(info.min, info.max, (k, n), endpoint=True).astype(dtype)
    got = down(b, b.int_matmul(up(b, a), b.permute(up(b, c.T), (1, 0))))
    np.testing.assert_array_equal(got, a @ c)  # numpy wraps around in the dtype


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 16, 4), (5, 47, 9), (8, 64, 33), (2, 0, 3)])
def test_int8_gemm_accumulates_in_int32(b, rng, m, k, n):
    a = rng.integers(-128, 127, (m, k), endpoint=True).astype(np.int8)
    bt = rng.integers(-128, 127, (n, k), endpoint=True).astype(np.int8)
    ta, tb = up(b, a), up(b, bt)
    out = b.rt.empty((m, n), b.dtype(up(b, np.zeros(1, np.int32))), "test")
    b.rt.call("em_gemm_i8_i32", ta.ptr, tb.ptr, out.ptr, m, n, k)
    np.testing.assert_array_equal(down(b, out), a.astype(np.int32) @ bt.T.astype(np.int32))


# ---------------------------------------------------------------------- convolution
# (n, c, spatial, c_out, kernel, stride, padding pairs, dilation, groups)
CONV_CASES = [
    (2, 3, (9, 11), 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    (1, 16, (5, 7), 32, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # pointwise
    (1, 6, (8, 8), 10, (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 2),  # strided 1x1, groups
    (2, 6, (5, 5), 6, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 3),  # 2 rows: thin GEMM
    (2, 6, (10, 9), 4, (3, 2), (2, 1), ((0, 1), (2, 0)), (2, 1), 2),  # asymmetric pads
    (1, 3, (17, 16), 5, (3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1), 1),  # TF "SAME" stride 2
    (1, 3, (9, 45), 6, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 2), 1),  # stride-2 SIMD packing
    (1, 8, (7, 7), 8, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 8),  # depthwise
    (1, 8, (12, 21), 8, (5, 5), (2, 2), ((2, 2), (2, 2)), (1, 1), 8),  # depthwise stride 2
    (2, 4, (13, 14), 4, (3, 3), (1, 3), ((2, 0), (1, 3)), (2, 1), 4),  # depthwise odd
    (1, 3, (10, 19), 3, (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 3),  # depthwise dilated
    (1, 5, (15, 23), 5, (3, 3), (2, 2), ((2, 1), (2, 1)), (2, 2), 5),  # ... at stride 2
    (1, 4, (6, 6), 8, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 4),  # channel multiplier 2
    (1, 5, (3, 4), 3, (5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1),  # kernel > input
    (1, 300, (4, 4), 9, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # K past one panel
    (1, 40, (6, 5), 7, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # K = 360: two panels
    (3, 2, (11,), 5, (3,), (2,), ((1, 2),), (2,), 1),  # 1-D
    (1, 4, (9,), 4, (5,), (1,), ((2, 2),), (1,), 4),  # 1-D depthwise
    (0, 3, (5, 5), 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # empty batch
]


def _torch_conv(x, w, bias, stride, pairs, dilation, groups):
    pad = [p for lo_hi in reversed(pairs) for p in lo_hi]
    xp = torch.nn.functional.pad(t64(x), pad)
    conv = torch.nn.functional.conv1d if x.ndim == 3 else torch.nn.functional.conv2d
    return conv(xp, t64(w), None if bias is None else t64(bias), stride, 0, dilation, groups)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_vs_torch(b, rng, dtype, case):
    n, c, spatial, c_out, kernel, stride, pairs, dilation, groups = case
    x = rng.standard_normal((n, c, *spatial)).astype(dtype)
    w = rng.standard_normal((c_out, c // groups, *kernel)).astype(dtype)
    bias = rng.standard_normal(c_out).astype(dtype)
    ref = _torch_conv(x, w, bias, stride, pairs, dilation, groups).numpy()
    got = down(b, b.conv(up(b, x), up(b, w), up(b, bias), stride, pairs, dilation, groups))
    close(got, ref, dtype, np.sqrt(w[0].size))
    nobias = down(b, b.conv(up(b, x), up(b, w), None, stride, pairs, dilation, groups))
    close(nobias, _torch_conv(x, w, None, stride, pairs, dilation, groups).numpy(), dtype,
          np.sqrt(w[0].size))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_weight_grad_vs_torch(b, rng, dtype, case):
    n, c, spatial, c_out, kernel, stride, pairs, dilation, groups = case
    x = rng.standard_normal((n, c, *spatial)).astype(dtype)
    w = t64(rng.standard_normal((c_out, c // groups, *kernel))).requires_grad_()
    y = _torch_conv(x, w, None, stride, pairs, dilation, groups)
    g = rng.standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(t64(g))
    got = down(b, b.conv_weight_grad(up(b, x), up(b, g), tuple(w.shape), stride, pairs,
                                     dilation, groups))
    close(got, w.grad.numpy(), dtype, np.sqrt(max(g[:, 0].size, 1)))


@pytest.mark.parametrize("pairs", [((-1, 2), (0, -2)), ((-2, -1), (-3, 1))])
def test_conv_with_negative_padding_crops(b, rng, pairs):
    x = rng.standard_normal((1, 2, 9, 10)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    crop = x[:, :, max(-pairs[0][0], 0):, max(-pairs[1][0], 0):]
    pos = tuple((max(lo, 0), hi) for lo, hi in pairs)
    end = tuple(s - max(-hi, 0) for s, (_, hi) in zip(crop.shape[2:], pos))
    crop = crop[:, :, : end[0], : end[1]]
    ref = _torch_conv(crop, w, None, (1, 1), tuple((lo, max(hi, 0)) for lo, hi in pos), (1, 1),
                      1).numpy()
    got = down(b, b.conv(up(b, x), up(b, w), None, (1, 1), pairs, (1, 1), 1))
    close(got, ref, np.float32, 4)


def test_conv_without_output_channels(b):
    x, w = up(b, np.ones((1, 3, 5, 5), np.float32)), up(b, np.ones((0, 3, 3, 3), np.float32))
    y = b.conv(x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert down(b, y).shape == (1, 0, 5, 5)


# (n, c_in, spatial, c_out/groups, kernel, stride, padding, output_padding, dilation, groups)
TRANSPOSE_CASES = [
    (2, 3, (5, 6), 4, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),
    (1, 4, (4, 5), 3, (3, 2), (2, 3), (1, 0), (1, 2), (1, 1), 2),
    (1, 6, (3, 3), 1, (5, 5), (2, 2), (2, 2), (1, 1), (1, 1), 6),  # depthwise
    (2, 2, (4, 4), 5, (2, 2), (2, 2), (0, 0), (0, 0), (2, 1), 1),
    (1, 3, (7,), 2, (4,), (3,), (1,), (2,), (1,), 1),  # 1-D
    (0, 3, (4, 4), 2, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),  # empty
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", TRANSPOSE_CASES, ids=str)
def test_conv_transpose_vs_torch(b, rng, dtype, case):
    n, c, spatial, cog, kernel, stride, pad, opad, dilation, groups = case
    x = rng.standard_normal((n, c, *spatial)).astype(dtype)
    w = rng.standard_normal((c, cog, *kernel)).astype(dtype)
    bias = rng.standard_normal(cog * groups).astype(dtype)
    fn = torch.nn.functional.conv_transpose1d if len(spatial) == 1 else \
        torch.nn.functional.conv_transpose2d
    ref = fn(t64(x), t64(w), t64(bias), stride, pad, opad, groups, dilation).numpy()
    got = down(b, b.conv_transpose(up(b, x), up(b, w), up(b, bias), stride, pad, opad,
                                   dilation, groups))
    close(got, ref, dtype, np.sqrt(w.size))


# ---------------------------------------------------------------------- pooling
# (shape, kernel, stride, padding, dilation, ceil_mode)
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((1, 2, 10, 11), (3, 2), (1, 2), (1, 0), (2, 1), False),
    ((1, 1, 5, 5), (2, 2), (2, 2), (0, 0), (1, 1), True),
    ((2, 3, 13), (3,), (2,), (1,), (1,), False),
    ((0, 3, 6, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
]


def _torch_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    fn = torch.nn.functional.max_pool1d if x.ndim == 3 else torch.nn.functional.max_pool2d
    return fn(x, kernel, stride, padding, dilation, ceil_mode)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool_and_grad_vs_torch(b, rng, dtype, case):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    x = rng.standard_normal(shape).astype(dtype)
    if x.size:
        x.flat[::7] = x.flat[1]  # ties: the first maximum takes the gradient
    tx = t64(x).requires_grad_()
    ref = _torch_max_pool(tx, kernel, stride, padding, dilation, ceil_mode)
    out = b.max_pool(up(b, x), kernel, stride, padding, dilation, ceil_mode)
    close(down(b, out), ref.detach().numpy(), dtype)
    g = rng.standard_normal(tuple(ref.shape)).astype(dtype)
    ref.backward(t64(g))
    gx = b.max_pool_grad(up(b, x), out, up(b, g), kernel, stride, padding, dilation, ceil_mode)
    close(down(b, gx), tx.grad.numpy(), dtype)


def test_max_pool_propagates_nan(b):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 1, 1] = np.nan
    got = down(b, b.max_pool(up(b, x), (2, 2), (2, 2), (0, 0), (1, 1), False))
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 1, 1] == 15


AVG_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), False, True, None),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), True, True, None),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), True, False, None),
    ((1, 2, 10, 11), (3, 2), (1, 2), (1, 0), False, False, None),
    ((1, 2, 6, 6), (3, 3), (2, 2), (1, 1), False, True, 5),
    ((2, 3, 13), (4,), (3,), (2,), True, False, None),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", AVG_CASES, ids=str)
def test_avg_pool_vs_torch(b, rng, dtype, case):
    shape, kernel, stride, padding, ceil_mode, include_pad, divisor = case
    x = rng.standard_normal(shape).astype(dtype)
    if len(kernel) == 1:
        ref = torch.nn.functional.avg_pool1d(t64(x), kernel, stride, padding, ceil_mode,
                                             include_pad)
    else:
        ref = torch.nn.functional.avg_pool2d(t64(x), kernel, stride, padding, ceil_mode,
                                             include_pad, divisor)
    got = b.avg_pool(up(b, x), kernel, stride, padding, ceil_mode, include_pad, divisor)
    close(down(b, got), ref.numpy(), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,size", [((2, 3, 7, 7), (1, 1)), ((1, 4, 10, 9), (3, 4)),
                                        ((1, 2, 5, 5), (7, 6)), ((2, 32, 14, 14), (1, 1)),
                                        ((2, 3, 11), (4,))])
def test_adaptive_avg_pool_vs_torch(b, rng, dtype, shape, size):
    x = rng.standard_normal(shape).astype(dtype)
    fn = torch.nn.functional.adaptive_avg_pool1d if len(size) == 1 else \
        torch.nn.functional.adaptive_avg_pool2d
    got = b.adaptive_avg_pool(up(b, x), size)
    close(down(b, got), fn(t64(x), size).numpy(), dtype, 4)


# ---------------------------------------------------------------------- softmax and norms
def _np_softmax(x, dim, log):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=dim, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
    return shifted - lse if log else np.exp(shifted - lse)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 1000), 1), ((3, 1000), 0),
                                       ((2, 5, 3, 6), 1), ((4, 9), -1), ((2, 3, 1), 2),
                                       ((0, 4), 1), ((1, 3), 1)])
def test_softmax_vs_float64(b, rng, dtype, log, shape, dim):
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    got = down(b, (b.log_softmax if log else b.softmax)(up(b, x), dim))
    close(got, _np_softmax(x, dim, log), dtype, 4)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_specials(b, log):
    x = np.array([[0.0, -np.inf, 1.0], [np.nan, 0.0, 1.0], [np.inf, 0.0, 0.0],
                  [-100.0, 0.0, -100.0], [-np.inf] * 3], dtype=np.float32)
    with np.errstate(all="ignore"):
        ref = _np_softmax(x, 1, log)
    got = down(b, (b.log_softmax if log else b.softmax)(up(b, x), 1))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,nd,affine", [((4, 10), 1, True), ((2, 3, 37), 1, False),
                                             ((2, 3, 4, 5), 2, True), ((3, 1), 1, True),
                                             ((0, 8), 1, True), ((5, 768), 1, True)])
def test_layer_norm_vs_float64(b, rng, dtype, shape, nd, affine):
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    w = rng.standard_normal(shape[-nd:]).astype(dtype) if affine else None
    bias = rng.standard_normal(shape[-nd:]).astype(dtype) if affine else None
    ref = torch.nn.functional.layer_norm(t64(x), shape[-nd:], None if w is None else t64(w),
                                         None if bias is None else t64(bias), 1e-5)
    got = b.layer_norm(up(b, x), nd, None if w is None else up(b, w),
                       None if bias is None else up(b, bias), 1e-5)
    close(down(b, got), ref.numpy(), dtype, 10)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,affine", [((2, 3, 5, 4), True), ((4, 6), True),
                                          ((1, 7, 9), False), ((0, 3, 2, 2), True)])
def test_batch_norm_vs_float64(b, rng, dtype, shape, affine):
    c = shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    mean, var = rng.standard_normal(c).astype(dtype), rng.random(c).astype(dtype) + 0.1
    w = rng.standard_normal(c).astype(dtype) if affine else None
    bias = rng.standard_normal(c).astype(dtype) if affine else None
    ref = torch.nn.functional.batch_norm(t64(x), t64(mean), t64(var),
                                         None if w is None else t64(w),
                                         None if bias is None else t64(bias), False, 0.0, 1e-3)
    got = b.batch_norm(up(b, x), up(b, mean), up(b, var), None if w is None else up(b, w),
                       None if bias is None else up(b, bias), 1e-3)
    close(down(b, got), ref.numpy(), dtype, 10)


def test_kernel_paths_agree_on_views(b, rng):
    # a permuted (non-contiguous) input gives the same result as its contiguous copy
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    view = b.permute(up(b, x), (0, 3, 1, 2))
    dense = up(b, np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    w = up(b, rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    a = down(b, b.conv(view, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1))
    c = down(b, b.conv(dense, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1))
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(down(b, b.softmax(view, 1)), down(b, b.softmax(dense, 1)))
