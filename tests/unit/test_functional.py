"""ember.nn.functional against independent numpy float64 references (direct loops), on the
numpy backend (its fast numpy.nn overrides), on the composite default bodies, and on the
pure-Python backend. PyTorch, when installed, adds cross-checks."""

from __future__ import annotations

import itertools
import math

import ember
import numpy as np
import pytest
from ember.contract import Backend
from ember.backends.numpy import NumpyBackend
from ember.backends.numpy.nn import NumpyNNOps
from ember.errors import DTypeError, ShapeError
from ember.nn import functional as F


class Composite(NumpyBackend):
    """The numpy primitives with every numpy.nn override removed: the default bodies."""

    name = "numpy-composite"


for _name, _value in vars(NumpyNNOps).items():
    if callable(_value) and not _name.startswith("_"):
        setattr(Composite, _name, getattr(Backend, _name))


def _python_backend():
    try:
        b = ember.get_backend("python")
    except (ImportError, ember.EmberError) as e:  # being written by another engineer
        pytest.skip(f"python backend unavailable: {e}")
    if b.missing_ops():
        pytest.skip(f"python backend lacks {b.missing_ops()}")
    return b


@pytest.fixture(params=["numpy", "composite", "python"])
def backend(request):
    if request.param == "numpy":
        return ember.get_backend("numpy")
    if request.param == "composite":
        return Composite()
    return _python_backend()


@pytest.fixture(params=["numpy", "composite"])
def fast_backend(request):
    """For the larger cases the pure-Python backend would take too long on."""
    return ember.get_backend("numpy") if request.param == "numpy" else Composite()


rng = np.random.default_rng(1234)


def pair(v):
    return (v, v) if isinstance(v, int) else v


def T(b, a, dtype="float64"):
    return ember.tensor(np.asarray(a, dtype=dtype), backend=b)


def close(t, expected, tol=1e-10):
    got = t.numpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


# ---------------------------------------------------------------------- references
def conv_pads(padding, kernel, dilation) -> list[tuple[int, int]]:
    """The (low, high) padding per spatial dim that a conv's ``padding`` argument means
    ('same', 'valid', an int or a tuple), for ``conv_ref``."""
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in totals]
    if padding == "valid":
        return [(0, 0)] * len(kernel)
    per_dim = (padding,) * len(kernel) if isinstance(padding, int) else padding
    return [(p, p) for p in per_dim]


def conv_ref(x, w, b, stride, pads, dil, groups):
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    n, c = x.shape[:2]
    co, k = w.shape[0], w.shape[2:]
    cg, cog = c // groups, co // groups
    out = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros((n, co, *out))
    for g in range(groups):
        cin, cout = slice(g * cg, (g + 1) * cg), slice(g * cog, (g + 1) * cog)
        for o in itertools.product(*map(range, out)):
            for kk in itertools.product(*map(range, k)):
                idx = tuple(o[i] * stride[i] + kk[i] * dil[i] for i in range(nd))
                y[(slice(None), cout) + o] += (
                    xp[(slice(None), cin) + idx] @ w[(cout, slice(None)) + kk].T
                )
    if b is not None:
        y += b.reshape((1, co) + (1,) * nd)
    return y


def conv_transpose_ref(x, w, b, stride, pad, out_pad, dil, groups):
    nd = x.ndim - 2
    n, cin = x.shape[:2]
    cog, k = w.shape[1], w.shape[2:]
    cig = cin // groups
    out = [
        (x.shape[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (k[i] - 1) + out_pad[i] + 1
        for i in range(nd)
    ]
    y = np.zeros((n, cog * groups, *out))
    for g in range(groups):
        ci, co = slice(g * cig, (g + 1) * cig), slice(g * cog, (g + 1) * cog)
        for i in itertools.product(*(range(s) for s in x.shape[2:])):
            for kk in itertools.product(*map(range, k)):
                pos = tuple(i[d] * stride[d] + kk[d] * dil[d] - pad[d] for d in range(nd))
                if all(0 <= pos[d] < out[d] for d in range(nd)):
                    y[(slice(None), co) + pos] += (
                        x[(slice(None), ci) + i] @ w[(ci, slice(None)) + kk]
                    )
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def pool_len(size, k, s, p, d, ceil):
    num = size + 2 * p - d * (k - 1) - 1
    o = (math.ceil(num / s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def max_pool_ref(x, k, s, p, d, ceil):
    nd = x.ndim - 2
    out = [pool_len(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil) for i in range(nd)]
    y = np.full(x.shape[:2] + tuple(out), -np.inf)
    for o in itertools.product(*map(range, out)):
        for kk in itertools.product(*map(range, k)):
            idx = tuple(o[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd))
            if all(0 <= idx[i] < x.shape[2 + i] for i in range(nd)):
                y[(Ellipsis,) + o] = np.maximum(y[(Ellipsis,) + o], x[(Ellipsis,) + idx])
    return y


def avg_pool_ref(x, k, s, p, ceil, include_pad, divisor=None):
    nd = x.ndim - 2
    out = [pool_len(x.shape[2 + i], k[i], s[i], p[i], 1, ceil) for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*map(range, out)):
        sl, full, kept = [], 1, 1
        for i in range(nd):
            start = o[i] * s[i] - p[i]
            end = min(start + k[i], x.shape[2 + i] + p[i])
            full *= end - start
            start, end = max(start, 0), min(end, x.shape[2 + i])
            kept *= end - start
            sl.append(slice(start, end))
        total = x[(Ellipsis,) + tuple(sl)].sum(axis=tuple(range(2, 2 + nd)))
        y[(Ellipsis,) + o] = total / (divisor or (full if include_pad else kept))
    return y


def adaptive_ref(x, out):
    nd = x.ndim - 2
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*map(range, out)):
        sl = []
        for i in range(nd):
            L = x.shape[2 + i]
            sl.append(slice(math.floor(o[i] * L / out[i]), math.ceil((o[i] + 1) * L / out[i])))
        y[(Ellipsis,) + o] = x[(Ellipsis,) + tuple(sl)].mean(axis=tuple(range(2, 2 + nd)))
    return y


def linear_taps(L, O, sf, align):
    """Per output index: [(src index, weight), ...] from PyTorch's documented mapping."""
    taps = []
    for o in range(O):
        if align:
            src = o * (L - 1) / (O - 1) if O > 1 else 0.0
        else:
            scale = 1 / sf if sf else L / O
            src = max((o + 0.5) * scale - 0.5, 0.0)
        i0 = min(int(np.floor(src)), L - 1)
        i1 = min(i0 + 1, L - 1)
        lam = src - i0
        taps.append([(i0, 1 - lam), (i1, lam)])
    return taps


def nearest_taps(L, O, sf, exact):
    scale = np.float32(1 / sf if sf else L / O)
    shift = np.float32(0.5 if exact else 0.0)
    return [
        [(min(int(np.floor(np.float32((np.float32(o) + shift) * scale))), L - 1), 1.0)]
        for o in range(O)
    ]


def interp_ref(x, out, mode, align, sfs=None):
    nd = x.ndim - 2
    taps = []
    for i in range(nd):
        sf = sfs[i] if sfs else None
        if mode.startswith("nearest"):
            taps.append(nearest_taps(x.shape[2 + i], out[i], sf, mode == "nearest-exact"))
        else:
            taps.append(linear_taps(x.shape[2 + i], out[i], sf, align))
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*map(range, out)):
        for combo in itertools.product(*(taps[i][o[i]] for i in range(nd))):
            idx = tuple(c[0] for c in combo)
            wgt = np.prod([c[1] for c in combo])
            y[(Ellipsis,) + o] += wgt * x[(Ellipsis,) + idx]
    return y


_erf = np.vectorize(math.erf)


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(
        x * beta > threshold, x, np.log1p(np.exp(np.minimum(x * beta, threshold))) / beta
    )


ACTIVATIONS = {
    "relu": (F.relu, {}, lambda x: np.maximum(x, 0)),
    "relu6": (F.relu6, {}, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (F.leaky_relu, {"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (
        F.elu,
        {"alpha": 1.3},
        lambda x: np.where(x > 0, x, 1.3 * (np.exp(np.minimum(x, 0)) - 1)),
    ),
    "gelu": (F.gelu, {}, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": (
        F.gelu,
        {"approximate": "tanh"},
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
    "silu": (F.silu, {}, lambda x: x / (1 + np.exp(-x))),
    "softplus": (F.softplus, {}, softplus_ref),
    "softplus_beta": (
        F.softplus,
        {"beta": 2.0, "threshold": 5.0},
        lambda x: softplus_ref(x, 2.0, 5.0),
    ),
    "hardsigmoid": (F.hardsigmoid, {}, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hard_swish": (F.hard_swish, {}, lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "mish": (F.mish, {}, lambda x: x * np.tanh(softplus_ref(x))),
    "sigmoid": (F.sigmoid, {}, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (F.tanh, {}, np.tanh),
}


# ---------------------------------------------------------------------- convolution
CONV2D = [  # stride, padding, dilation, groups, bias
    (1, 0, 1, 1, True),
    (2, 1, 1, 1, False),
    ((2, 1), (1, 2), (1, 2), 2, True),
    (1, "same", (2, 1), 1, True),
    (1, "valid", 1, 4, True),
    (3, (0, 1), 2, 2, False),
]


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", CONV2D)
def test_conv2d(backend, stride, padding, dilation, groups, bias):
    x = rng.standard_normal((2, 4, 7, 6))
    k = (3, 2) if padding != "same" else (3, 4)
    w = rng.standard_normal((4, 4 // groups) + k)
    b = rng.standard_normal(4) if bias else None
    s2, d2 = pair(stride), pair(dilation)
    y = F.conv2d(
        T(backend, x),
        T(backend, w),
        None if b is None else T(backend, b),
        stride,
        padding,
        dilation,
        groups,
    )
    expected = conv_ref(x, w, b, s2, conv_pads(padding, k, d2), d2, groups)
    close(y, expected)
    if padding == "same":
        assert y.shape[2:] == x.shape[2:]


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [
        (1, 0, 1, 1),
        (2, 2, 1, 3),
        (3, "same", 1, 1),
        (1, "same", 3, 1),
        (2, 1, 2, 1),
    ],
)
def test_conv1d(backend, stride, padding, dilation, groups):
    if padding == "same" and stride != 1:
        with pytest.raises(ValueError, match="same"):
            F.conv1d(
                T(backend, np.ones((1, 3, 9))),
                T(backend, np.ones((2, 3, 3))),
                stride=stride,
                padding="same",
            )
        return
    x = rng.standard_normal((2, 6, 11))
    w = rng.standard_normal((3, 6 // groups, 4))
    b = rng.standard_normal(3)
    y = F.conv1d(T(backend, x), T(backend, w), T(backend, b), stride, padding, dilation, groups)
    pads = conv_pads(padding, (4,), (dilation,))
    close(y, conv_ref(x, w, b, (stride,), pads, (dilation,), groups))


def test_conv2d_unbatched_and_float32(backend):
    x = rng.standard_normal((3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    y = F.conv2d(T(backend, x, "float32"), T(backend, w, "float32"), padding=1)
    assert y.dtype == ember.float32
    close(
        y,
        conv_ref(
            x[None].astype(np.float64), w.astype(np.float64), None, (1, 1), [(1, 1)] * 2, (1, 1), 1
        )[0],
        tol=1e-5,
    )


@pytest.mark.parametrize(
    "stride,padding,output_padding,dilation,groups",
    [
        (1, 0, 0, 1, 1),
        (2, 1, 1, 1, 1),
        ((3, 2), (2, 0), (1, 1), (1, 2), 2),
        (1, (2, 1), 0, 1, 1),
        (2, 0, 1, 2, 1),
    ],
)
def test_conv_transpose2d(backend, stride, padding, output_padding, dilation, groups):
    x = rng.standard_normal((2, 4, 4, 5))
    w = rng.standard_normal((4, 6 // groups, 3, 2))
    b = rng.standard_normal(6 // groups * groups)
    y = F.conv_transpose2d(
        T(backend, x),
        T(backend, w),
        T(backend, b),
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
    close(
        y,
        conv_transpose_ref(
            x, w, b, pair(stride), pair(padding), pair(output_padding), pair(dilation), groups
        ),
    )


@pytest.mark.parametrize(
    "stride,padding,output_padding,dilation,groups",
    [
        (1, 0, 0, 1, 1),
        (2, 1, 1, 1, 2),
        (3, 2, 2, 1, 1),
        (2, 3, 0, 2, 1),
    ],
)
def test_conv_transpose1d(backend, stride, padding, output_padding, dilation, groups):
    x = rng.standard_normal((2, 4, 7))
    w = rng.standard_normal((4, 3, 4))
    y = F.conv_transpose1d(
        T(backend, x), T(backend, w), None, stride, padding, output_padding, groups, dilation
    )
    close(
        y,
        conv_transpose_ref(
            x, w, None, (stride,), (padding,), (output_padding,), (dilation,), groups
        ),
    )


def test_conv2d_larger_float32(fast_backend):
    x = rng.standard_normal((2, 16, 20, 18)).astype(np.float32)
    w = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
    y = F.conv2d(T(fast_backend, x, "float32"), T(fast_backend, w, "float32"), padding=1)
    close(
        y,
        conv_ref(x.astype(np.float64), w.astype(np.float64), None, (1, 1), [(1, 1)] * 2, (1, 1), 1),
        tol=1e-4,
    )


# ---------------------------------------------------------------------- pooling
MAX_POOL2D = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    ((3, 2), (2, 3), (1, 1), (1, 2), True),
    (2, 2, 0, 1, True),
    ((2, 3), 1, (1, 0), 2, False),
]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", MAX_POOL2D)
def test_max_pool2d(backend, kernel, stride, padding, dilation, ceil_mode):
    x = rng.standard_normal((2, 3, 7, 8))
    y = F.max_pool2d(T(backend, x), kernel, stride, padding, dilation, ceil_mode)
    close(
        y,
        max_pool_ref(
            x, pair(kernel), pair(stride or kernel), pair(padding), pair(dilation), ceil_mode
        ),
        tol=0,
    )


@pytest.mark.parametrize(
    "kernel,stride,padding,dilation,ceil_mode",
    [
        (2, None, 0, 1, False),
        (3, 2, 1, 1, True),
        (4, 3, 2, 2, True),
        (2, 2, 0, 1, True),
    ],
)
def test_max_pool1d(backend, kernel, stride, padding, dilation, ceil_mode):
    x = rng.standard_normal((2, 3, 11))
    y = F.max_pool1d(T(backend, x), kernel, stride, padding, dilation, ceil_mode)
    close(
        y,
        max_pool_ref(x, (kernel,), (stride or kernel,), (padding,), (dilation,), ceil_mode),
        tol=0,
    )


def test_max_pool_nan_propagates(backend):
    x = np.arange(8.0).reshape(1, 1, 8)
    x[0, 0, 3] = np.nan
    got = F.max_pool1d(T(backend, x), 2).numpy()[0, 0]
    assert np.isnan(got[1]) and got[0] == 1 and got[2] == 5


@pytest.mark.parametrize(
    "kernel,stride,padding,ceil_mode,include_pad,divisor",
    [
        (2, None, 0, False, True, None),
        (3, 2, 1, False, True, None),
        (3, 2, 1, False, False, None),
        (3, 2, 1, True, True, None),
        (3, 2, 1, True, False, None),
        ((3, 2), (2, 1), (1, 1), True, True, None),
        (2, 2, 1, True, False, None),
        (3, 2, 1, False, True, 5),
    ],
)
def test_avg_pool2d(backend, kernel, stride, padding, ceil_mode, include_pad, divisor):
    x = rng.standard_normal((2, 3, 7, 6))
    y = F.avg_pool2d(T(backend, x), kernel, stride, padding, ceil_mode, include_pad, divisor)
    close(
        y,
        avg_pool_ref(
            x, pair(kernel), pair(stride or kernel), pair(padding), ceil_mode, include_pad, divisor
        ),
    )


@pytest.mark.parametrize(
    "kernel,stride,padding,ceil_mode,include_pad",
    [
        (3, None, 0, False, True),
        (4, 3, 2, True, False),
        (4, 3, 2, True, True),
        (2, 1, 1, False, False),
    ],
)
def test_avg_pool1d(backend, kernel, stride, padding, ceil_mode, include_pad):
    x = rng.standard_normal((2, 2, 10))
    y = F.avg_pool1d(T(backend, x), kernel, stride, padding, ceil_mode, include_pad)
    close(y, avg_pool_ref(x, (kernel,), (stride or kernel,), (padding,), ceil_mode, include_pad))


@pytest.mark.parametrize(
    "size,out", [((7, 6), (3, 4)), ((5, 5), 1), ((4, 7), (None, 3)), ((3, 2), (5, 4))]
)
def test_adaptive_avg_pool2d(backend, size, out):
    x = rng.standard_normal((2, 3) + size)
    y = F.adaptive_avg_pool2d(T(backend, x), out)
    o = (
        (out, out)
        if isinstance(out, int)
        else tuple(s if v is None else v for v, s in zip(out, size))
    )
    close(y, adaptive_ref(x, o))


def test_adaptive_avg_pool1d(backend):
    x = rng.standard_normal((2, 3, 10))
    close(F.adaptive_avg_pool1d(T(backend, x), 4), adaptive_ref(x, (4,)))
    close(F.adaptive_avg_pool1d(T(backend, x[0]), 3), adaptive_ref(x, (3,))[0])  # unbatched


# ---------------------------------------------------------------------- interpolate
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
@pytest.mark.parametrize("align", [None, False, True])
@pytest.mark.parametrize(
    "size,scale", [((11, 4), None), ((3, 9), None), (None, 1.5), (None, (0.6, 2.0)), (None, 1.7)]
)
def test_interpolate2d(backend, mode, align, size, scale):
    if mode != "bilinear" and align is not None:
        with pytest.raises(ValueError, match="align_corners"):
            F.interpolate(
                T(backend, np.ones((1, 1, 2, 2))), size=(3, 3), mode=mode, align_corners=align
            )
        return
    x = rng.standard_normal((1, 2, 5, 7))
    y = F.interpolate(T(backend, x), size=size, scale_factor=scale, mode=mode, align_corners=align)
    sfs = None
    if scale is not None:
        sfs = (scale, scale) if isinstance(scale, float) else scale
        out = tuple(math.floor(s * f) for s, f in zip(x.shape[2:], sfs))
    else:
        out = size
    close(y, interp_ref(x, out, mode, bool(align), sfs))


@pytest.mark.parametrize("mode,align", [("nearest", None), ("linear", False), ("linear", True)])
@pytest.mark.parametrize("size,scale", [(13, None), (4, None), (1, None), (None, 2.5)])
def test_interpolate1d(backend, mode, align, size, scale):
    x = rng.standard_normal((2, 3, 6))
    y = F.interpolate(T(backend, x), size=size, scale_factor=scale, mode=mode, align_corners=align)
    out = (size,) if size else (math.floor(6 * scale),)
    close(y, interp_ref(x, out, mode, bool(align), None if size else (scale,)))


def test_interpolate_recompute_and_area(backend):
    x = rng.standard_normal((1, 2, 5, 7))
    y = F.interpolate(T(backend, x), scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)
    close(y, interp_ref(x, (7, 10), "bilinear", False))  # scale from the rounded sizes
    close(F.interpolate(T(backend, x), size=(2, 3), mode="area"), adaptive_ref(x, (2, 3)))


def test_interpolate_errors():
    x = ember.ones(1, 1, 4, 4)
    with pytest.raises(ShapeError, match="linear"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(ValueError, match="exactly one"):
        F.interpolate(x, mode="nearest")
    with pytest.raises(ValueError, match="mode"):
        F.interpolate(x, size=2, mode="cubic")


# ---------------------------------------------------------------------- activations
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(backend, name):
    fn, kwargs, ref = ACTIVATIONS[name]
    x = np.concatenate([rng.standard_normal(40) * 4, [0.0, -3.0, 3.0, 25.0, -25.0, 1e-3]])
    close(fn(T(backend, x), **kwargs), ref(x), tol=1e-12)
    x32 = x.astype(np.float32)
    y32 = fn(T(backend, x32, "float32"), **kwargs)
    assert y32.dtype == ember.float32
    close(y32, ref(x32.astype(np.float64)), tol=2e-6)


def test_activation_nan_and_inplace(backend):
    for name in ("relu", "gelu", "silu", "elu", "leaky_relu", "mish", "softplus"):
        fn, kwargs, _ = ACTIVATIONS[name]
        assert np.isnan(fn(T(backend, [np.nan]), **kwargs).numpy()[0]), name
    x = T(backend, [-1.0, 2.0])
    out = F.relu(x, inplace=True)
    assert out is x and x.tolist() == [0.0, 2.0]


def test_relu_int_and_methods(backend):
    assert F.relu(ember.tensor([-2, 3], backend=backend)).tolist() == [0, 3]
    x = rng.standard_normal((3, 5))
    t = T(backend, x)
    close(t.relu(), np.maximum(x, 0))
    e = np.exp(x - x.max(1, keepdims=True))
    close(t.softmax(1), e / e.sum(1, keepdims=True))
    close(t.log_softmax(-1), np.log(e / e.sum(1, keepdims=True)))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(backend, dim):
    x = rng.standard_normal((3, 4, 5)) * 3
    x[0, 0, 0] = 1000.0  # overflows a naive exp
    m = x.max(axis=dim, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=dim, keepdims=True))
    close(F.softmax(T(backend, x), dim), np.exp(x - lse))
    close(F.log_softmax(T(backend, x), dim), x - lse)
    y = F.softmax(T(backend, x, "float32"), dim=dim)
    assert y.dtype == ember.float32
    close(y, np.exp(x - lse), tol=1e-5)


def test_softmax_dtype_and_errors():
    y = F.softmax(ember.tensor([1, 2, 3]), dim=0, dtype=ember.float64)
    e = np.exp([1.0, 2.0, 3.0])
    close(y, e / e.sum())
    with pytest.raises(DTypeError, match="int64"):
        F.softmax(ember.tensor([1, 2, 3]), dim=0)
    with pytest.raises(ember.DimensionError):
        F.softmax(ember.ones(2, 3), dim=2)


# ---------------------------------------------------------------------- normalisation
def test_layer_norm(backend):
    x = rng.standard_normal((2, 3, 4, 5)) * 3 + 1
    w, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    mean = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    norm = (x - mean) / np.sqrt(var + 1e-5)
    close(F.layer_norm(T(backend, x), (4, 5), T(backend, w), T(backend, b)), norm * w + b)
    norm5 = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
    close(F.layer_norm(T(backend, x), 5, eps=1e-3), norm5)
    with pytest.raises(ShapeError, match=r"\(4,\)"):
        F.layer_norm(T(backend, x), (4,))


def test_batch_norm_inference(backend):
    x = rng.standard_normal((4, 3, 5, 2))
    m, v = rng.standard_normal(3), rng.random(3) + 0.5
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    s = (1, 3, 1, 1)
    expected = (x - m.reshape(s)) / np.sqrt(v.reshape(s) + 1e-5) * w.reshape(s) + b.reshape(s)
    close(
        F.batch_norm(T(backend, x), T(backend, m), T(backend, v), T(backend, w), T(backend, b)),
        expected,
    )


def test_batch_norm_training_updates_running_stats(backend):
    x = rng.standard_normal((4, 3, 5))
    rm, rv = T(backend, np.zeros(3)), T(backend, np.ones(3))
    y = F.batch_norm(T(backend, x), rm, rv, training=True, momentum=0.2)
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))
    close(y, (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5))
    close(rm, 0.2 * mean)
    close(rv, 0.8 + 0.2 * x.var(axis=(0, 2), ddof=1))


# ---------------------------------------------------------------------- linear, dropout
def test_linear(backend):
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    close(F.linear(T(backend, x), T(backend, w), T(backend, b)), x @ w.T + b)
    close(F.linear(T(backend, x[0, 0]), T(backend, w)), x[0, 0] @ w.T)
    with pytest.raises(ShapeError, match=r"\(2, 3, 4\).*\(4, 5\)"):
        F.linear(T(backend, x), T(backend, w.T))


def test_dropout(backend):
    x = rng.standard_normal(1000) + 5
    t = T(backend, x)
    assert F.dropout(t, 0.3, training=False) is t
    y = F.dropout(t, 0.3, generator=ember.Generator(seed=7)).numpy()
    # the mask follows the Philox stream of seed 7: element i is kept where u_i >= p
    from ember.random import philox_uniform

    keep = np.asarray(np.float32(philox_uniform(1000, 7, 0))) >= np.float32(0.3)
    np.testing.assert_allclose(y, np.where(keep, x / 0.7, 0.0), rtol=1e-12)
    assert 0.6 < keep.mean() < 0.8
    again = F.dropout(t, 0.3, generator=ember.Generator(seed=7)).numpy()
    np.testing.assert_array_equal(y, again)
    assert not F.dropout(t, 1.0).numpy().any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(t, 1.5)


def test_pad_and_one_hot_reexports():
    assert F.pad(ember.tensor([[1.0, 2.0]]), (1, 2), value=9.0).tolist() == [
        [9.0, 1.0, 2.0, 9.0, 9.0]
    ]
    assert F.one_hot(ember.tensor([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]


# ---------------------------------------------------------------------- argument checking
def test_conv_errors_name_shapes():
    x = ember.ones(1, 3, 8, 8)
    with pytest.raises(ShapeError, match=r"\(1, 3, 8, 8\).*\(4, 2, 3, 3\)"):
        F.conv2d(x, ember.ones(4, 2, 3, 3))
    with pytest.raises(ShapeError, match="divisible"):
        F.conv2d(ember.ones(1, 4, 8, 8), ember.ones(3, 2, 3, 3), groups=2)
    with pytest.raises(ShapeError, match="smaller than"):
        F.conv2d(ember.ones(1, 3, 2, 2), ember.ones(4, 3, 3, 3))
    with pytest.raises(ShapeError, match="4-d input"):
        F.conv2d(ember.ones(8, 8), ember.ones(4, 3, 3, 3))
    with pytest.raises(ShapeError, match="bias"):
        F.conv2d(x, ember.ones(4, 3, 3, 3), ember.ones(3))
    with pytest.raises(DTypeError, match="float64"):
        F.conv2d(x, ember.ones(4, 3, 3, 3, dtype=ember.float64))
    with pytest.raises(DTypeError, match="floating point"):
        F.conv2d(ember.tensor(np.ones((1, 3, 4, 4), np.int64)), ember.ones(4, 3, 3, 3))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(x, ember.ones(3, 2, 3, 3), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="stride"):
        F.avg_pool2d(x, 2, stride=0)


# ---------------------------------------------------------------------- PyTorch cross-checks
def test_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = rng.standard_normal((2, 4, 9, 8))
    w = rng.standard_normal((6, 2, 3, 3))
    wt = rng.standard_normal((4, 3, 3, 2))
    tx = torch.from_numpy(x)
    for b in (ember.get_backend("numpy"), Composite()):
        ex = T(b, x)
        close(
            F.conv2d(ex, T(b, w), stride=2, padding="valid", dilation=(1, 2), groups=2),
            tf.conv2d(tx, torch.from_numpy(w), stride=2, dilation=(1, 2), groups=2).numpy(),
        )
        close(
            F.conv_transpose2d(
                ex, T(b, wt), stride=(2, 3), padding=1, output_padding=(1, 2), dilation=(1, 3)
            ),
            tf.conv_transpose2d(
                tx,
                torch.from_numpy(wt),
                stride=(2, 3),
                padding=1,
                output_padding=(1, 2),
                dilation=(1, 3),
            ).numpy(),
        )
        close(
            F.max_pool2d(ex, 3, 2, 1, ceil_mode=True),
            tf.max_pool2d(tx, 3, 2, 1, ceil_mode=True).numpy(),
        )
        close(
            F.avg_pool2d(ex, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            tf.avg_pool2d(tx, 3, 2, 1, ceil_mode=True, count_include_pad=False).numpy(),
        )
        close(F.adaptive_avg_pool2d(ex, (4, 5)), tf.adaptive_avg_pool2d(tx, (4, 5)).numpy())
        for mode, align in (
            ("nearest", None),
            ("nearest-exact", None),
            ("bilinear", False),
            ("bilinear", True),
        ):
            for kw in ({"size": (13, 5)}, {"scale_factor": 1.7}, {"scale_factor": (0.5, 2.3)}):
                close(
                    F.interpolate(ex, mode=mode, align_corners=align, **kw),
                    tf.interpolate(tx, mode=mode, align_corners=align, **kw).numpy(),
                )


# ---------------------------------------------------------------------- gradients for free
GRAD_CASES = {
    "conv2d": (
        lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=2),
        [(1, 4, 5, 5), (4, 2, 3, 3)],
    ),
    "conv_transpose2d": (
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        [(1, 2, 3, 3), (2, 3, 3, 3)],
    ),
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(1, 2, 5, 5)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), [(1, 2, 5, 5)]),
    "interpolate": (lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"), [(1, 1, 3, 4)]),
    "layer_norm": (lambda x, w: F.layer_norm(x, (4,), w), [(3, 4), (4,)]),
    "log_softmax": (lambda x: F.log_softmax(F.gelu(x), 1), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_autodiff_gradients_through_composites(name):
    """Autodiff(numpy) differentiates the composite default bodies: compare with central
    finite differences of the float64 forward."""
    autodiff = getattr(ember, "Autodiff", None)
    if autodiff is None:
        pytest.skip("ember.Autodiff not available")
    ad = autodiff(ember.get_backend("numpy"))
    fn, shapes = GRAD_CASES[name]
    arrays = [rng.standard_normal(s) for s in shapes]
    tracked = [ember.tensor(a, backend=ad).require_grad() for a in arrays]
    out = fn(*tracked)
    weights = rng.standard_normal(out.shape)
    grads = (out * ember.tensor(weights, backend=ad)).sum().backward()
    eps = 1e-6
    for i, (a, t) in enumerate(zip(arrays, tracked)):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            for sign in (1, -1):
                moved = a.copy()
                moved[idx] += sign * eps
                args = [ember.tensor(moved if j == i else arrays[j]) for j in range(len(arrays))]
                numeric[idx] += sign * float((fn(*args).numpy() * weights).sum()) / (2 * eps)
        np.testing.assert_allclose(grads.get(t).numpy(), numeric, rtol=1e-6, atol=1e-6)
