"""The wgpu backend's WGSL module/activation overrides (conv, conv_transpose, pooling,
softmax, layer norm) against the independent numpy float64 references of test_functional.py,
in float32 on a real adapter (Mesa lavapipe on CPU-only machines)."""

from __future__ import annotations

import ember
import pytest
from _wgpu import B, np
from ember.autodiff import Autodiff
from ember.contract import Backend
from ember.backends.wgpu import WgpuBackend
from ember.backends.wgpu.nn import WgpuNNOps
from ember.nn import functional as F
from test_functional import (
    CONV2D,
    MAX_POOL2D,
    avg_pool_ref,
    conv_pads,
    conv_ref,
    conv_transpose_ref,
    max_pool_ref,
    pair,
)

rng = np.random.default_rng(7)


def T(a, dtype="float32", backend=None):
    return ember.tensor(np.asarray(a, dtype=dtype), backend=backend or B)


def close(t, expected, tol=2e-5):
    got = t.numpy().astype(np.float64)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def f32(*shape):
    """float32 samples, returned as float64 for the reference (the same values)."""
    return rng.standard_normal(shape).astype(np.float32).astype(np.float64)


def test_overrides_are_installed_with_the_composite_signatures():
    import inspect

    for name, fn in vars(WgpuNNOps).items():
        if callable(fn) and not name.startswith("_"):
            assert getattr(WgpuBackend, name) is fn
            assert inspect.signature(fn) == inspect.signature(getattr(Backend, name)), name


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", CONV2D)
def test_conv2d(stride, padding, dilation, groups, bias):
    x = f32(2, 4, 7, 6)
    k = (3, 2) if padding != "same" else (3, 4)
    w = f32(4, 4 // groups, *k)
    b = f32(4) if bias else None
    s2, d2 = pair(stride), pair(dilation)
    y = F.conv2d(T(x), T(w), None if b is None else T(b), stride, padding, dilation, groups)
    close(y, conv_ref(x, w, b, s2, conv_pads(padding, k, d2), d2, groups))


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 2, 1, 3), (1, "same", 3, 1), (2, 1, 2, 1),
])
def test_conv1d(stride, padding, dilation, groups):
    x, w, b = f32(2, 6, 11), f32(3, 6 // groups, 4), f32(3)
    y = F.conv1d(T(x), T(w), T(b), stride, padding, dilation, groups)
    pads = conv_pads(padding, (4,), (dilation,))
    close(y, conv_ref(x, w, b, (stride,), pads, (dilation,), groups))


def test_conv2d_strided_input_and_float16():
    x = f32(3, 5, 9, 8)
    w = f32(4, 5, 3, 3)
    xt = T(x.transpose(0, 1, 3, 2)).transpose(2, 3)  # a non-contiguous view
    close(F.conv2d(xt, T(w), padding=1), conv_ref(x, w, None, (1, 1), [(1, 1)] * 2, (1, 1), 1))
    close(F.conv2d(T(x), T(w), stride=(1, 2)),
          conv_ref(x, w, None, (1, 2), [(0, 0)] * 2, (1, 1), 1))
    if ember.float16 in B.caps.dtypes:
        y = F.conv2d(T(x, "float16"), T(w, "float16"), padding=1)
        assert y.dtype == ember.float16
        ref = conv_ref(x.astype(np.float16).astype(np.float64),
                       w.astype(np.float16).astype(np.float64), None, (1, 1), [(1, 1)] * 2,
                       (1, 1), 1)
        close(y, ref, tol=3e-2)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (1, 0, 0, 1, 1),
    (2, 1, 1, 1, 1),
    ((3, 2), (2, 0), (1, 1), (1, 2), 2),
    (1, (2, 1), 0, 1, 1),
    (2, 0, 1, 2, 1),
])
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups):
    x, w = f32(2, 4, 4, 5), f32(4, 6 // groups, 3, 2)
    b = f32(6 // groups * groups)
    y = F.conv_transpose2d(T(x), T(w), T(b), stride, padding, output_padding, groups, dilation)
    close(y, conv_transpose_ref(x, w, b, pair(stride), pair(padding), pair(output_padding),
                                pair(dilation), groups))


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 2), (3, 2, 2, 1, 1), (2, 3, 0, 2, 1),
])
def test_conv_transpose1d(stride, padding, output_padding, dilation, groups):
    x, w = f32(2, 4, 7), f32(4, 3, 4)
    y = F.conv_transpose1d(T(x), T(w), None, stride, padding, output_padding, groups, dilation)
    close(y, conv_transpose_ref(x, w, None, (stride,), (padding,), (output_padding,),
                                (dilation,), groups))


# depthwise (groups == C_in) convs run the direct kernels: (stride, (lo, hi) padding per dim,
# dilation, channel multiplier C_out / C_in, bias)
DEPTHWISE = [
    ((1, 1), ((1, 1), (1, 1)), (1, 1), 1, True),
    ((2, 2), ((1, 1), (1, 1)), (1, 1), 1, False),
    ((2, 2), ((0, 1), (0, 1)), (1, 1), 1, True),  # TF-style "same" for stride 2
    ((1, 2), ((2, 2), (0, 1)), (2, 2), 1, True),
    ((1, 1), ((0, 0), (2, 1)), (2, 1), 2, True),
    ((2, 1), ((1, 0), (1, 1)), (1, 1), 2, False),
]


def weight_grad_ref(x, g, wshape, stride, pads, dil, groups):
    """dW[o, j, k] = sum over n, p of g[n, o, p] * xpad[n, group(o)·cg + j, p·s + k·d]."""
    import itertools

    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    cg, cog = wshape[1], wshape[0] // groups
    out = g.shape[2:]
    dw = np.zeros(wshape)
    for o, j in itertools.product(range(wshape[0]), range(cg)):
        c = o // cog * cg + j
        for kk in itertools.product(*map(range, wshape[2:])):
            win = tuple(slice(kk[i] * dil[i], kk[i] * dil[i] + (out[i] - 1) * stride[i] + 1,
                              stride[i]) for i in range(len(out)))
            dw[(o, j) + kk] = (g[:, o] * xp[(slice(None), c) + win]).sum()
    return dw


@pytest.mark.parametrize("stride,pads,dilation,mult,bias", DEPTHWISE)
def test_depthwise_conv2d_and_its_adjoints(stride, pads, dilation, mult, bias):
    c = 5
    x, w = f32(2, c, 9, 8), f32(c * mult, 1, 3, 3)
    b = f32(c * mult) if bias else None
    xt = T(x.transpose(0, 1, 3, 2)).transpose(2, 3)  # a strided input view
    y = B.conv(xt._prim, T(w)._prim, None if b is None else T(b)._prim, stride, pads, dilation, c)
    want = conv_ref(x, w, b, stride, pads, dilation, c)
    close(ember.Tensor(y, B), want)
    # backward: the input gradient is a transposed depthwise conv (cig = mult, cog = 1) ...
    g = f32(*want.shape)
    gx = F.conv_transpose2d(T(g), T(w), None, stride, 0, 0, c, dilation)
    gx_ref = conv_transpose_ref(g, w, None, stride, (0, 0), (0, 0), dilation, c)
    close(gx, gx_ref)
    # ... and the weight gradient a direct reduction over samples and positions
    dw = B.conv_weight_grad(xt._prim, T(g)._prim, w.shape, stride, pads, dilation, c)
    close(ember.Tensor(dw, B), weight_grad_ref(x, g, w.shape, stride, pads, dilation, c),
          tol=1e-4)


def test_depthwise_conv1d_transpose_with_bias_and_float16():
    x, w, b = f32(2, 4, 10), f32(4, 2, 3), f32(8)  # transposed: C_in 4, groups 4, cog 2
    y = F.conv_transpose1d(T(x), T(w), T(b), 2, 1, 1, 4, 2)
    close(y, conv_transpose_ref(x, w, b, (2,), (1,), (1,), (2,), 4))
    y = F.conv1d(T(x), T(w.reshape(8, 1, 3)), T(b), 2, 1, 1, 4)
    close(y, conv_ref(x, w.reshape(8, 1, 3), b, (2,), [(1, 1)], (1,), 4))
    if ember.float16 in B.caps.dtypes:
        y = F.conv1d(T(x, "float16"), T(w.reshape(8, 1, 3), "float16"), None, 1, 1, 1, 4)
        assert y.dtype == ember.float16
        ref = conv_ref(x.astype(np.float16).astype(np.float64),
                       w.reshape(8, 1, 3).astype(np.float16).astype(np.float64), None, (1,),
                       [(1, 1)], (1,), 4)
        close(y, ref, tol=3e-2)


def test_depthwise_gradients_match_numpy():
    x, w, b = f32(2, 6, 9, 9), f32(12, 1, 3, 3), f32(12)
    grads = []
    for inner, dtype in ((B, "float32"), (ember.get_backend("numpy"), "float64")):
        ad = Autodiff(inner)
        tx, tw, tb = (T(v, dtype, ad).require_grad() for v in (x, w, b))
        y = F.conv2d(tx, tw, tb, stride=2, padding=1, groups=6)
        loss = (F.relu(y) * y).sum() * 0.1
        g = loss.backward()
        grads.append([g.get(t).numpy().astype(np.float64) for t in (tx, tw, tb)])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", MAX_POOL2D)
def test_max_pool2d(kernel, stride, padding, dilation, ceil_mode):
    x = f32(2, 3, 7, 8)
    y = F.max_pool2d(T(x), kernel, stride, padding, dilation, ceil_mode)
    close(y, max_pool_ref(x, pair(kernel), pair(stride or kernel), pair(padding),
                          pair(dilation), ceil_mode), tol=0)


def test_max_pool1d_and_nan():
    x = f32(2, 3, 11)
    y = F.max_pool1d(T(x), 4, 3, 2, 2, True)
    close(y, max_pool_ref(x, (4,), (3,), (2,), (2,), True), tol=0)
    x = np.arange(8.0).reshape(1, 1, 8)
    x[0, 0, 3] = np.nan
    got = F.max_pool1d(T(x), 2).numpy()[0, 0]
    assert np.isnan(got[1]) and got[0] == 1 and got[2] == 5


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,include_pad,divisor", [
    (2, None, 0, False, True, None),
    (3, 2, 1, False, False, None),
    (3, 2, 1, True, True, None),
    (3, 2, 1, True, False, None),
    ((3, 2), (2, 1), (1, 1), True, True, None),
    (2, 2, 1, True, False, None),
    (3, 2, 1, False, True, 5),
])
def test_avg_pool2d(kernel, stride, padding, ceil_mode, include_pad, divisor):
    x = f32(2, 3, 7, 6)
    y = F.avg_pool2d(T(x), kernel, stride, padding, ceil_mode, include_pad, divisor)
    close(y, avg_pool_ref(x, pair(kernel), pair(stride or kernel), pair(padding), ceil_mode,
                          include_pad, divisor))


def test_avg_pool1d():
    x = f32(2, 2, 10)
    y = F.avg_pool1d(T(x), 4, 3, 2, True, False)
    close(y, avg_pool_ref(x, (4,), (3,), (2,), True, False))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim):
    x = f32(3, 4, 5) * 3
    x[0, 0, 0] = 1000.0  # overflows a naive exp
    m = x.max(axis=dim, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=dim, keepdims=True))
    close(F.softmax(T(x), dim), np.exp(x - lse))
    close(F.log_softmax(T(x), dim), x - lse, tol=5e-5)
    # a strided (transposed) input
    close(F.softmax(T(x.transpose(2, 1, 0)).permute(2, 1, 0), dim), np.exp(x - lse))
    y = F.softmax(T([[0.0, np.nan, 1.0], [1.0, 2.0, 3.0]]), -1).numpy()
    assert np.isnan(y[0]).all() and np.isfinite(y[1]).all()


def test_layer_norm():
    x = f32(2, 3, 4, 5) * 3 + 1
    w, b = f32(4, 5), f32(4, 5)
    mean = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    close(F.layer_norm(T(x), (4, 5), T(w), T(b)), (x - mean) / np.sqrt(var + 1e-5) * w + b,
          tol=1e-4)
    norm5 = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
    close(F.layer_norm(T(x), 5, eps=1e-3), norm5, tol=1e-4)


def test_gradients_through_overrides_match_numpy():
    """Autodiff(wgpu) runs the overrides forward (and conv_transpose / conv in conv's backward);
    its gradients must match Autodiff(numpy) in float64 on the same values."""
    x, w, b = f32(2, 3, 8, 8), f32(4, 3, 3, 3), f32(4)
    grads = []
    for inner, dtype in ((B, "float32"), (ember.get_backend("numpy"), "float64")):
        ad = Autodiff(inner)
        tx, tw, tb = (T(v, dtype, ad).require_grad() for v in (x, w, b))
        y = F.conv2d(tx, tw, tb, stride=1, padding=1)
        y = F.max_pool2d(F.relu(y), 2)
        y = F.avg_pool2d(y, 2, ceil_mode=True) * 0.5
        loss = F.log_softmax(y.reshape(2, -1), -1).sum() * -0.1 + F.softmax(y, 1).max()
        g = loss.backward()
        grads.append([g.get(t).numpy().astype(np.float64) for t in (tx, tw, tb)])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("n,k,m,batch", [(8, 2048, 8, ()), (3, 1000, 70, (2,)), (64, 600, 5, ())])
def test_matmul_split_k(n, k, m, batch):
    """Few output tiles and a long k: the kernel splits k and adds the parts."""
    from ember.backends.wgpu.compute import split_k

    assert split_k(1, k, 16)[0] > 1
    a, b = f32(*batch, n, k), f32(*batch, k, m)
    close(T(a) @ T(b), a @ b, tol=1e-4)
    ai = rng.integers(-3, 4, (n, k))
    bi = rng.integers(-3, 4, (k, m))
    got = (T(ai, "int32") @ T(bi, "int32")).numpy()
    np.testing.assert_array_equal(got, ai @ bi)
    # a conv with few output channels and positions but many input channels (its matmul
    # writes into a slice of the output buffer)
    x, w = f32(2, 64, 6, 6), f32(2, 64, 3, 3)
    close(F.conv2d(T(x), T(w)), conv_ref(x, w, None, (1, 1), [(0, 0)] * 2, (1, 1), 1), tol=1e-4)


def test_matmul_large_tile():
    """Enough output tiles select the 128×128 kernel where the device allows it; ragged edges
    and a transposed operand included."""
    from ember.backends.wgpu.compute import choose_tile

    rt = B.rt
    if rt.large_tile is None:
        pytest.skip("this device has no room for the large tile")
    assert choose_tile(rt, 100, 130, 260) is rt.large_tile
    a, b = f32(260, 100, 40), f32(260, 130, 40)
    close(T(a) @ T(b).transpose(1, 2), a @ b.transpose(0, 2, 1), tol=1e-4)
