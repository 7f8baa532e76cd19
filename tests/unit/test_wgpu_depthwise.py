"""The register-blocked depthwise convolution (ember.backends.wgpu.depthwise) against torch's
CPU conv in float64, on a real adapter (Mesa lavapipe on CPU-only machines): odd and even
sizes, channel counts that are not multiples of the lane blocks, kernels 3/5/7, strides,
paddings (symmetric and not), dilations, bias, channel multipliers, strided inputs, 1-d; and
the weight gradient and the transposed conv (the input gradient) of this module, and the
depthwise gradients through the autodiff backend, against torch."""

from __future__ import annotations

import ember
import pytest
from _wgpu import B, down, np, up
from ember.autodiff import Autodiff
from ember.backends.wgpu.depthwise import (
    depthwise_conv,
    depthwise_conv_transpose,
    depthwise_weight_grad,
    supports,
    supports_transpose,
    supports_weight_grad,
)
from ember.nn import functional as F

torch = pytest.importorskip("torch")
rng = np.random.default_rng(14)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def torch_ref(x, w, b, stride, pads, dilation):
    """torch's conv in float64 (asymmetric padding applied with F.pad first)."""
    t = torch.tensor(x, dtype=torch.float64)
    nd = x.ndim - 2
    flat = [p for lo_hi in reversed(pads) for p in lo_hi]  # F.pad wants the last dim first
    t = torch.nn.functional.pad(t, flat)
    conv = torch.nn.functional.conv1d if nd == 1 else torch.nn.functional.conv2d
    y = conv(t, torch.tensor(w, dtype=torch.float64),
             None if b is None else torch.tensor(b, dtype=torch.float64), stride, 0, dilation,
             x.shape[1])
    return y.numpy()


def torch_weight_grad(x, w, g, stride, pads, dilation):
    """d(sum(conv(x, w) · g)) / dw by torch's autograd in float64."""
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    t = torch.nn.functional.pad(torch.tensor(x, dtype=torch.float64),
                                [p for lo_hi in reversed(pads) for p in lo_hi])
    conv = torch.nn.functional.conv1d if x.ndim == 3 else torch.nn.functional.conv2d
    (conv(t, wt, None, stride, 0, dilation, x.shape[1]) * torch.tensor(g)).sum().backward()
    return wt.grad.numpy()


def check(x, w, b, stride, pads, dilation, xp=None, tol=2e-5):
    assert supports(B.rt, x.shape, w.shape, x.shape[1], stride, pads, dilation)
    y = depthwise_conv(B.rt, up(x) if xp is None else xp, up(w), None if b is None else up(b),
                       stride, pads, dilation)
    ref = torch_ref(x, w, b, stride, pads, dilation)
    got = down(y).astype(np.float64)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


CASES = [  # n, c, (h, w), k, stride, padding, dilation, bias, multiplier
    (1, 1, (7, 7), 3, 1, 1, 1, True, 1),
    (4, 3, (14, 14), 3, 2, 1, 1, False, 1),
    (1, 16, (15, 15), 5, 1, 2, 1, True, 1),
    (4, 16, (15, 14), 5, 2, 2, 1, False, 1),
    (1, 32, (28, 28), 3, 1, 0, 2, True, 1),
    (1, 96, (14, 14), 5, 2, 2, 1, True, 1),
    (32, 16, (7, 7), 5, 1, 2, 1, True, 1),
    (32, 3, (7, 7), 3, 2, 0, 1, False, 1),
    (1, 3, (56, 56), 3, 2, 1, 1, True, 1),
    (1, 16, (56, 56), 5, 1, 2, 1, False, 1),
    (4, 16, (28, 15), 7, 1, 2, 1, True, 1),
    (1, 32, (15, 28), 7, 2, 0, 2, True, 1),
    (4, 3, (22, 13), 7, 1, 1, 2, False, 1),  # 3 output columns
    (2, 5, (9, 3), 3, 2, 0, 1, True, 1),  # one output column
    (1, 3, (15, 15), 3, 1, 2, 2, True, 2),
    (4, 16, (14, 14), 5, 2, 1, 1, False, 2),
    (2, 1, (28, 28), 7, 1, 0, 1, True, 2),
    (1, 96, (7, 7), 3, 1, 1, 1, False, 1),
]


@pytest.mark.parametrize("n,c,hw,k,stride,padding,dilation,bias,mult", CASES)
def test_depthwise_conv2d_matches_torch(n, c, hw, k, stride, padding, dilation, bias, mult):
    x = f32(n, c, *hw)
    w = f32(c * mult, 1, k, k)
    b = f32(c * mult) if bias else None
    check(x, w, b, (stride, stride), ((padding, padding),) * 2, (dilation, dilation))


def test_asymmetric_kernel_stride_dilation_and_padding():
    x = f32(2, 5, 13, 11)
    check(x, f32(5, 1, 3, 5), f32(5), (2, 1), ((1, 2), (0, 3)), (1, 2))


def test_strided_and_offset_input_view():
    base = f32(3, 10, 17, 16)
    # a channel slice of an NHWC-ordered buffer: offset, non-contiguous channel/spatial strides
    nhwc = np.ascontiguousarray(base.transpose(0, 2, 3, 1))
    full = up(nhwc)
    xp = full.view((3, 6, 17, 16), (17 * 16 * 10, 1, 16 * 10, 10), offset=2)
    x = base[:, 2:8]
    check(x, f32(6, 1, 3, 3), f32(6), (1, 1), ((1, 1), (1, 1)), (1, 1), xp=xp)


def test_depthwise_conv1d():
    x = f32(3, 6, 29)
    check(x, f32(12, 1, 5), f32(12), (2,), ((2, 1),), (2,))


def test_float16_comes_back_float16():
    if ember.float16 not in B.caps.dtypes:
        pytest.skip("no float16 on this adapter")
    x, w = f32(2, 4, 9, 9).astype(np.float16), f32(4, 1, 3, 3).astype(np.float16)
    y = depthwise_conv(B.rt, up(x), up(w), None, (1, 1), ((1, 1), (1, 1)), (1, 1))
    assert y.dtype == ember.float16
    ref = torch_ref(x.astype(np.float32), w.astype(np.float32), None, (1, 1), ((1, 1),) * 2,
                    (1, 1))
    np.testing.assert_allclose(down(y).astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def test_the_rule_for_what_it_runs():
    rt = B.rt
    pad1 = ((1, 1), (1, 1))
    assert supports(rt, (1, 8, 9, 9), (16, 1, 3, 3), 8, (1, 1), pad1, (1, 1))  # multiplier 2
    assert not supports(rt, (1, 8, 9, 9), (8, 2, 3, 3), 4, (1, 1), pad1, (1, 1))  # 2 per group
    assert not supports(rt, (1, 8, 9, 9), (8, 8, 3, 3), 1, (1, 1), pad1, (1, 1))  # dense
    assert not supports(rt, (1, 8, 5, 5, 5), (8, 1, 3, 3, 3), 8, (1,) * 3, ((1, 1),) * 3,
                        (1,) * 3)  # 3-d
    # a 2×1 output plane under a dilated 7×7: staging 195 values for 98 taps does not pay
    assert not supports(rt, (4, 3, 14, 11), (3, 1, 7, 7), 3, (2, 2), pad1, (2, 2))
    # a tile that cannot fit workgroup memory even at one output per lane
    assert not supports(rt, (1, 8, 900, 900), (8, 1, 63, 63), 8, (4, 4), pad1, (8, 8))
    with pytest.raises(ValueError, match="supports"):
        depthwise_conv(rt, up(f32(1, 8, 5, 5, 5)), up(f32(8, 1, 3, 3, 3)), None, (1,) * 3,
                       ((0, 0),) * 3, (1,) * 3)


@pytest.mark.parametrize("stride,padding,dilation,mult", [(1, 1, 1, 1), (2, 2, 1, 1),
                                                          (1, 2, 2, 2)])
def test_depthwise_gradients_match_torch(stride, padding, dilation, mult):
    x, w, b = f32(2, 5, 11, 10), f32(5 * mult, 1, 5, 5), f32(5 * mult)
    g = f32(*torch_ref(x, w, b, (stride,) * 2, ((padding, padding),) * 2, (dilation,) * 2).shape)
    ad = Autodiff(B)
    xs, ws, bs = (ember.tensor(a, backend=ad).require_grad() for a in (x, w, b))
    y = F.conv2d(xs, ws, bs, stride, padding, dilation, 5)
    grads = (y * ember.tensor(g, backend=ad)).sum().backward()
    xt, wt, bt = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.conv2d(xt, wt, bt, stride, padding, dilation, 5)
    (yt * torch.tensor(g, dtype=torch.float64)).sum().backward()
    for mine, ref in ((xs, xt), (ws, wt), (bs, bt)):
        np.testing.assert_allclose(grads.get(mine).numpy(), ref.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


WEIGHT_GRAD = [  # n, c, (h, w), k, stride, padding, dilation, multiplier
    (1, 1, (7, 7), 3, 1, 1, 1, 1),
    (4, 3, (15, 14), 5, 2, 2, 1, 1),
    (2, 16, (28, 28), 3, 1, 0, 2, 2),
    (32, 16, (7, 7), 5, 1, 2, 1, 1),
    (3, 96, (14, 15), 7, 2, 1, 1, 1),
    (4, 3, (56, 56), 3, 1, 1, 1, 1),  # 12544 positions: 7 chunks per channel
]


@pytest.mark.parametrize("n,c,hw,k,stride,padding,dilation,mult", WEIGHT_GRAD)
def test_depthwise_weight_grad_matches_torch(n, c, hw, k, stride, padding, dilation, mult):
    x, w = f32(n, c, *hw), f32(c * mult, 1, k, k)
    s2, p2, d2 = (stride,) * 2, ((padding, padding),) * 2, (dilation,) * 2
    g = f32(*torch_ref(x, w, None, s2, p2, d2).shape)
    assert supports_weight_grad(B.rt, x.shape, w.shape, c, s2, p2, d2)
    got = down(depthwise_weight_grad(B.rt, up(x), up(g), w.shape, s2, p2, d2))
    np.testing.assert_allclose(got, torch_weight_grad(x, w, g, s2, p2, d2), rtol=1e-4,
                               atol=1e-3)


def test_weight_grad_1d_asymmetric_and_strided_input():
    x, w = f32(3, 4, 31), f32(8, 1, 5)
    g = f32(*torch_ref(x, w, None, (2,), ((2, 1),), (2,)).shape)
    got = down(depthwise_weight_grad(B.rt, up(x), up(g), w.shape, (2,), ((2, 1),), (2,)))
    np.testing.assert_allclose(got, torch_weight_grad(x, w, g, (2,), ((2, 1),), (2,)),
                               rtol=1e-4, atol=1e-4)
    base = f32(2, 9, 8, 6)  # channels 1..4 of a channels-last buffer
    xp = up(np.ascontiguousarray(base.transpose(0, 2, 3, 1))).view(
        (2, 4, 8, 6), (8 * 6 * 9, 1, 6 * 9, 9), offset=1)
    x, w = base[:, 1:5], f32(4, 1, 3, 3)
    g = f32(*torch_ref(x, w, None, (1, 1), ((1, 0), (0, 2)), (1, 1)).shape)
    got = down(depthwise_weight_grad(B.rt, xp, up(g), w.shape, (1, 1), ((1, 0), (0, 2)),
                                     (1, 1)))
    np.testing.assert_allclose(got, torch_weight_grad(x, w, g, (1, 1), ((1, 0), (0, 2)),
                                                      (1, 1)), rtol=1e-4, atol=1e-4)
    assert not supports_weight_grad(B.rt, x.shape, (4, 1, 9, 9), 4, (1, 1), ((0, 0),) * 2,
                                    (1, 1))


TRANSPOSE = [  # n, groups, cig, (h, w), k, stride, padding, output_padding, dilation, bias
    (1, 1, 1, (7, 7), 3, 1, 1, 0, 1, True),
    (4, 3, 1, (7, 8), 3, 2, 1, 1, 1, False),  # the input gradient of a stride-2 conv on 14×15
    (2, 16, 1, (14, 14), 5, 2, 2, 1, 1, True),
    (32, 16, 1, (7, 7), 5, 1, 2, 0, 1, False),
    (1, 96, 1, (7, 7), 3, 2, 0, 0, 2, True),
    (2, 3, 2, (15, 14), 5, 1, 2, 0, 2, True),  # multiplier 2: two input channels per group
    (1, 8, 2, (28, 28), 7, 2, 3, 1, 1, False),
    (1, 3, 1, (28, 28), 3, 1, 0, 0, 1, True),
    (2, 4, 1, (9, 10), 3, 1, 3, 0, 1, True),  # stride 1 as a flipped conv with padding -1
    (2, 5, 1, (11, 9), 5, 1, 1, 0, 2, False),  # ... and with dilation: padding 7
]


@pytest.mark.parametrize("n,groups,cig,hw,k,stride,padding,out_pad,dilation,bias", TRANSPOSE)
def test_depthwise_conv_transpose_matches_torch(n, groups, cig, hw, k, stride, padding, out_pad,
                                                dilation, bias):
    x, w = f32(n, groups * cig, *hw), f32(groups * cig, 1, k, k)
    b = f32(groups) if bias else None
    args = ((stride,) * 2, (padding,) * 2, (out_pad,) * 2, (dilation,) * 2)
    assert supports_transpose(B.rt, x.shape, w.shape, groups, *args)
    y = depthwise_conv_transpose(B.rt, up(x), up(w), None if b is None else up(b), *args, groups)
    ref = torch.nn.functional.conv_transpose2d(
        torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
        None if b is None else torch.tensor(b, dtype=torch.float64), stride, padding, out_pad,
        groups, dilation).numpy()
    np.testing.assert_allclose(down(y).astype(np.float64), ref, rtol=2e-5, atol=2e-5)


def test_conv_transpose_1d_strided_input_and_rule():
    x, w = f32(2, 6, 12), f32(6, 1, 4)
    full = up(np.ascontiguousarray(x.transpose(0, 2, 1)))  # channels last
    xp = full.view(x.shape, (12 * 6, 1, 6))
    y = depthwise_conv_transpose(B.rt, xp, up(w), None, (3,), (1,), (2,), (2,), 3)
    ref = torch.nn.functional.conv_transpose1d(
        torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64), None, 3, 1,
        2, 3, 2).numpy()
    np.testing.assert_allclose(down(y), ref, rtol=2e-5, atol=2e-5)
    y = depthwise_conv_transpose(B.rt, xp, up(w), up(w[:, 0, 0]), (1,), (2,), (0,), (1,), 6)
    ref = torch.nn.functional.conv_transpose1d(
        torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
        torch.tensor(w[:, 0, 0], dtype=torch.float64), 1, 2, 0, 6, 1).numpy()
    np.testing.assert_allclose(down(y), ref, rtol=2e-5, atol=2e-5)
    one = ((1, 1), (1, 1), (0, 0), (1, 1))
    assert not supports_transpose(B.rt, (1, 8, 5, 5), (8, 2, 3, 3), 8, *one)  # 2 outs/group
    assert not supports_transpose(B.rt, (1, 8, 5, 5), (8, 1, 3, 3), 3, *one)  # 8 % 3
    assert not supports_transpose(B.rt, (1, 8, 5, 5, 5), (8, 1, 3, 3, 3), 8, *one)


def test_weight_grad_out_of_image_taps_add_nothing_even_next_to_inf():
    # the kernel reads a clamped in-image address for taps over the padding and must discard
    # it: at stride 2 the corner x[0, 0] is read by tap (1, 1) alone, while taps (0, 0),
    # (0, 1) and (1, 0) of output (0, 0) hang over the padding and clamp onto it
    x, w = f32(2, 3, 6, 6), f32(3, 1, 3, 3)
    x[0, 1, 0, 0] = np.inf
    g = f32(2, 3, 3, 3)
    args = ((2, 2), ((1, 1), (1, 1)), (1, 1))
    got = down(depthwise_weight_grad(B.rt, up(x), up(g), w.shape, *args))
    want = torch_weight_grad(x, w, g, *args)
    assert np.isinf(want[1, 0, 1, 1]) and np.isfinite(want).sum() == want.size - 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_backend_runs_depthwise_convs_and_their_gradients_on_these_kernels():
    """F.conv2d with groups == channels through Autodiff(wgpu): the depthwise kernels run for
    the forward, the input gradient and the weight gradient, and the results are torch's."""
    x, w = f32(2, 8, 15, 15), f32(8, 1, 3, 3)
    ad = Autodiff(B)
    xt = ember.tensor(x, backend=ad).require_grad()
    wt = ember.tensor(w, backend=ad).require_grad()
    engine, lib = B.rt.engine, B.rt.lib
    dispatched = []
    record = engine.dispatch
    engine.dispatch = lambda pipe, *a, **k: (dispatched.append(pipe), record(pipe, *a, **k))[1]
    try:
        y = F.conv2d(xt, wt, stride=1, padding=1, groups=8)
        grads = (y * y).sum().backward()
    finally:
        del engine.dispatch  # the instance attribute; the method shows through again
    sections = {key[1] for key, pipe in lib._pipelines.items()
                if key[0] == "depthwise" and any(pipe is d for d in dispatched)}
    assert {"conv", "weight_grad_partial"} <= sections, sections
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, padding=1, groups=8)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads.get(xt).numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(grads.get(wt).numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-2)


# -------------------------------------------------------------------- float16
# float16 inputs are read packed into the f32 tile / registers, the sums stay f32 and the
# result is narrowed once: against float64 from the same f16-rounded values the error is that
# one rounding (≤ 2⁻¹¹ ≈ 4.9e-4 relative) plus the f32 sum's (≤ 1e-5 of the scale): rtol 1e-3,
# atol 1e-4 · scale. The same kernel on the same values in float32 sums in the same order, so
# the old widen path's result (that, rounded to f16) must be equal bit for bit.
def f16(*shape):
    return rng.standard_normal(shape).astype(np.float16)


def close16(got16, want, old32):
    got = down(got16)
    assert got.dtype == np.float16
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3, atol=1e-4 * scale)
    np.testing.assert_array_equal(got, down(old32).astype(np.float16))


def up32(a):
    return up(a.astype(np.float32))


needs_f16 = pytest.mark.skipif(ember.float16 not in B.caps.dtypes, reason="no shader-f16")


@needs_f16
@pytest.mark.parametrize("n,c,hw,k,stride,padding,dilation,mult", [
    (2, 5, (9, 11), 3, 1, 1, 1, 1),
    (1, 8, (14, 13), 5, 2, 2, 1, 2),
    (3, 3, (10, 10), 3, 1, 2, 2, 1),
    (2, 6, (17,), 7, 2, 3, 1, 1),
    (2, 4, (12, 16), 3, 1, 1, 1, 3),  # even widths: float16 pairs stored
])
def test_depthwise_float16_forward_and_gradients(n, c, hw, k, stride, padding, dilation, mult):
    nd = len(hw)
    x, w, b = f16(n, c, *hw), f16(c * mult, 1, *(k,) * nd), f16(c * mult)
    st, dil, pads = (stride,) * nd, (dilation,) * nd, ((padding, padding),) * nd
    ref = torch_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), st, pads,
                    dil)
    close16(depthwise_conv(B.rt, up(x), up(w), up(b), st, pads, dil), ref,
            depthwise_conv(B.rt, up32(x), up32(w), up32(b), st, pads, dil))
    g = f16(*ref.shape)
    close16(depthwise_weight_grad(B.rt, up(x), up(g), w.shape, st, pads, dil),
            torch_weight_grad(x.astype(np.float64), w.astype(np.float64),
                              g.astype(np.float64), st, pads, dil),
            depthwise_weight_grad(B.rt, up32(x), up32(g), w.shape, st, pads, dil))
    # the input gradient: the transposed conv of g with the same weight (groups = C_in)
    args = (st, (padding,) * nd, (0,) * nd, dil)
    tconv = torch.nn.functional.conv_transpose1d if nd == 1 else \
        torch.nn.functional.conv_transpose2d
    want = tconv(torch.tensor(g, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
                 None, stride, padding, 0, c, dilation).numpy()
    assert supports_transpose(B.rt, g.shape, w.shape, c, *args)
    close16(depthwise_conv_transpose(B.rt, up(g), up(w), None, *args, c), want,
            depthwise_conv_transpose(B.rt, up32(g), up32(w), None, *args, c))


@needs_f16
def test_depthwise_float16_has_no_widening(monkeypatch):
    """One kernel dispatch reading float16 and one narrowing: no casts of x, weight, bias."""
    dispatched = []
    record = B.rt.engine.dispatch
    monkeypatch.setattr(B.rt.engine, "dispatch",
                        lambda pipe, *a, **k: (dispatched.append(pipe), record(pipe, *a, **k))[1])
    x, w, b = up(f16(2, 4, 9, 9)), up(f16(4, 1, 3, 3)), up(f16(4))
    depthwise_conv(B.rt, x, w, b, (1, 1), ((1, 1), (1, 1)), (1, 1))
    assert len(dispatched) == 2
    assert any(key[:3] == ("depthwise", "conv", True) and pipe is dispatched[0]
               for key, pipe in B.rt.lib._pipelines.items())
    # an even output width (and two outputs per lane): float16 pairs stored, no narrowing
    dispatched.clear()
    y = depthwise_conv(B.rt, up(f16(2, 4, 12, 16)), w, b, (1, 1), ((1, 1), (1, 1)), (1, 1))
    assert len(dispatched) == 1 and y.dtype == ember.float16
