"""ember.nn.functional: conv, conv-transpose, pooling, interpolate, activations, norms."""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t
from . import nn_refs as R

g = rng(7)

# --------------------------------------------------------------------- conv1d / conv2d
CONV1D = [
    ("basic", (2, 3, 8), (4, 3, 3), True, {}),
    ("stride2_pad1", (1, 2, 9), (3, 2, 3), True, {"stride": 2, "padding": 1}),
    ("same", (1, 2, 7), (2, 2, 4), False, {"padding": "same"}),
    ("valid", (1, 2, 7), (2, 2, 3), True, {"padding": "valid"}),
    ("dilation2", (1, 2, 10), (2, 2, 3), True, {"dilation": 2, "padding": 2}),
    ("groups2", (2, 4, 6), (6, 2, 3), True, {"groups": 2}),
    ("depthwise", (1, 3, 6), (3, 1, 3), False, {"groups": 3, "padding": 1}),
]
for name, xs, ws, bias, kw in CONV1D:
    args = (t(rand(g, xs)), t(rand(g, ws, "float32", -1, 1)))
    args += (t(rand(g, (ws[0],))),) if bias else (None,)
    case(
        f"conv1d/{name}",
        "F.conv1d",
        *args,
        kwargs=kw,
        ref=lambda x, w, b, kw=kw: R.conv(x, w, b, **kw),
        diff=True,
        tol=5,
    )

CONV2D = [
    ("basic", (2, 3, 6, 5), (4, 3, 3, 3), True, {}),
    ("stride_pad_tuple", (1, 2, 7, 6), (3, 2, 3, 2), True, {"stride": (2, 1), "padding": (1, 0)}),
    ("same", (1, 2, 5, 6), (2, 2, 3, 3), True, {"padding": "same"}),
    ("same_even_kernel", (1, 1, 5, 5), (2, 1, 2, 4), False, {"padding": "same"}),
    ("dilation", (1, 2, 7, 7), (2, 2, 3, 3), False, {"dilation": 2, "padding": 1}),
    ("groups", (1, 4, 5, 5), (4, 2, 3, 3), True, {"groups": 2, "stride": 2}),
    ("1x1", (2, 3, 4, 4), (5, 3, 1, 1), True, {}),
]
for name, xs, ws, bias, kw in CONV2D:
    args = (t(rand(g, xs)), t(rand(g, ws, "float32", -1, 1)))
    args += (t(rand(g, (ws[0],))),) if bias else (None,)
    case(
        f"conv2d/{name}",
        "F.conv2d",
        *args,
        kwargs=kw,
        ref=lambda x, w, b, kw=kw: R.conv(x, w, b, **kw),
        diff=True,
        tol=5,
    )
case(
    "conv2d/f64",
    "F.conv2d",
    t(rand(g, (1, 2, 5, 5), "float64")),
    t(rand(g, (3, 2, 3, 3), "float64")),
    kwargs={"padding": 1},
    ref=lambda x, w: R.conv(x, w, None, padding=1),
    diff=True,
    tol=5,
)
case(
    "conv2d/f16",
    "F.conv2d",
    t(rand(g, (1, 2, 4, 4), "float16", -1, 1)),
    t(rand(g, (2, 2, 3, 3), "float16", -1, 1)),
    ref=lambda x, w: R.conv(x, w),
    tol=5,
)
case(
    "conv2d/noncontig_input",
    "F.conv2d",
    t(rand(g, (1, 2, 5, 4)), "transpose"),
    t(rand(g, (2, 2, 3, 3))),
    ref=lambda x, w: R.conv(x, w),
    diff=True,
    tol=5,
)

CONVT = [
    ("conv_transpose1d", "basic", (1, 3, 5), (3, 2, 3), True, {}),
    (
        "conv_transpose1d",
        "stride2_pad1_outpad1",
        (2, 2, 4),
        (2, 3, 3),
        True,
        {"stride": 2, "padding": 1, "output_padding": 1},
    ),
    ("conv_transpose1d", "groups", (1, 4, 4), (4, 1, 3), False, {"groups": 2, "stride": 2}),
    ("conv_transpose1d", "dilation", (1, 2, 4), (2, 2, 3), False, {"dilation": 2}),
    ("conv_transpose2d", "basic", (1, 2, 3, 4), (2, 3, 3, 3), True, {}),
    (
        "conv_transpose2d",
        "stride2_pad1",
        (2, 2, 3, 3),
        (2, 2, 3, 3),
        True,
        {"stride": 2, "padding": 1},
    ),
    (
        "conv_transpose2d",
        "stride_tuple_outpad",
        (1, 1, 3, 3),
        (1, 2, 2, 3),
        False,
        {"stride": (2, 3), "output_padding": (1, 2)},
    ),
]
for op, name, xs, ws, bias, kw in CONVT:
    args = (t(rand(g, xs)), t(rand(g, ws, "float32", -1, 1)))
    args += (t(rand(g, (ws[1] * kw.get("groups", 1),))),) if bias else (None,)
    case(
        f"{op}/{name}",
        f"F.{op}",
        *args,
        kwargs=kw,
        ref=lambda x, w, b, kw=kw: R.conv_transpose(x, w, b, **kw),
        diff=True,
        tol=5,
    )

# --------------------------------------------------------------------- pooling
X1 = rand(g, (2, 3, 9))
X2 = rand(g, (2, 2, 7, 6))
POOL = [
    ("1d", "k2", X1, 1, {"kernel_size": 2}),
    ("1d", "k3_s2_p1", X1, 1, {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("2d", "k2", X2, 2, {"kernel_size": 2}),
    ("2d", "k3_s1", X2, 2, {"kernel_size": 3, "stride": 1}),
    ("2d", "tuple_p1", X2, 2, {"kernel_size": (3, 2), "stride": (2, 2), "padding": (1, 1)}),
]
for nd_name, name, x, nd, kw in POOL:
    for kind in ("max", "avg"):
        case(
            f"{kind}_pool{nd_name}/{name}",
            f"F.{kind}_pool{nd_name}",
            t(x),
            kwargs=kw,
            ref=lambda x, kw=kw, nd=nd, kind=kind: R.pool(
                x, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), nd, kind
            ),
            diff=True,
            tol=3,
        )
case(
    "avg_pool2d/exclude_pad",
    "F.avg_pool2d",
    t(X2),
    3,
    2,
    1,
    kwargs={"count_include_pad": False},
    ref=lambda x, k, s, p: R.pool(x, 3, 2, 1, 2, "avg", count_include_pad=False),
    diff=True,
)
case("max_pool2d/3d_input", "F.max_pool2d", t(X2[0]), 2, ref=lambda x, k: R.pool(x, 2, nd=2))
case(
    "max_pool2d/f16",
    "F.max_pool2d",
    t(X2.astype("float16")),
    2,
    ref=lambda x, k: R.pool(x, 2, nd=2),
)
# int8 codes between quantized layers (ember.quantize's chains): the same maxima, same dtype
_CODES = np.random.default_rng(23)
for dtype, lo, hi in (("uint8", 0, 255), ("int8", -127, 127)):
    codes = _CODES.integers(lo, hi, size=(2, 3, 7, 7), endpoint=True).astype(dtype)
    for pad in (0, 1):
        case(
            f"max_pool2d/{dtype}_codes_pad{pad}",
            "F.max_pool2d",
            t(codes),
            3,
            2,
            pad,
            ref=lambda x, k, s, p: R.pool(x.astype(np.float64), k, s, p, nd=2).astype(x.dtype),
        )
for out in (3, 1, 4):
    case(
        f"adaptive_avg_pool1d/out{out}",
        "F.adaptive_avg_pool1d",
        t(X1),
        out,
        ref=lambda x, o: R.adaptive_avg(x, o, 1),
        diff=True,
        tol=3,
    )
for out in ((1, 1), (3, 2), (5, 4), 2):
    oid = "x".join(map(str, out)) if isinstance(out, tuple) else str(out)
    case(
        f"adaptive_avg_pool2d/out{oid}",
        "F.adaptive_avg_pool2d",
        t(X2),
        out,
        ref=lambda x, o: R.adaptive_avg(x, o, 2),
        diff=True,
        tol=3,
    )

# --------------------------------------------------------------------- interpolate
IX = rand(g, (1, 2, 3, 4))
case(
    "interpolate/nearest_scale2",
    "F.interpolate",
    t(IX),
    kwargs={"scale_factor": 2},
    ref=lambda x: R.interp_nearest(x, (6, 8)),
    diff=True,
)
case(
    "interpolate/nearest_size",
    "F.interpolate",
    t(IX),
    kwargs={"size": (5, 7), "mode": "nearest"},
    ref=lambda x: R.interp_nearest(x, (5, 7)),
    diff=True,
)
case(
    "interpolate/nearest_down",
    "F.interpolate",
    t(rand(g, (1, 1, 6, 6))),
    kwargs={"size": (4, 3)},
    ref=lambda x: R.interp_nearest(x, (4, 3)),
)
case(
    "interpolate/nearest_1d",
    "F.interpolate",
    t(rand(g, (2, 2, 5))),
    kwargs={"size": 8},
    ref=lambda x: R.interp_nearest(x, (8,)),
)
case(
    "interpolate/bilinear_scale2",
    "F.interpolate",
    t(IX),
    kwargs={"scale_factor": 2, "mode": "bilinear"},
    ref=lambda x: R.interp_linear(x, (6, 8)),
    diff=True,
    tol=3,
)
case(
    "interpolate/bilinear_size",
    "F.interpolate",
    t(IX),
    kwargs={"size": (5, 3), "mode": "bilinear", "align_corners": False},
    ref=lambda x: R.interp_linear(x, (5, 3)),
    diff=True,
    tol=3,
)
case(
    "interpolate/bilinear_align_corners",
    "F.interpolate",
    t(IX),
    kwargs={"size": (5, 7), "mode": "bilinear", "align_corners": True},
    ref=lambda x: R.interp_linear(x, (5, 7), True),
    diff=True,
    tol=3,
)

# --------------------------------------------------------------------- softmax family
SX = rand(g, (2, 3, 4))
for fn_name, fn in (("softmax", R.softmax), ("log_softmax", R.log_softmax)):
    for dim in (-1, 1, 0):
        case(
            f"{fn_name}/dim{dim}",
            f"F.{fn_name}",
            t(SX),
            dim,
            ref=lambda x, d, fn=fn: fn(x, d),
            diff=True,
            tol=3,
        )
    case(
        f"{fn_name}/large",
        f"F.{fn_name}",
        t(np.array([[1000.0, 0.0, -1000.0]], "float32")),
        kwargs={"dim": -1},
        ref=lambda x, fn=fn: fn(x, -1),
    )
    case(
        f"{fn_name}/f16",
        f"F.{fn_name}",
        t(rand(g, (2, 5), "float16")),
        -1,
        ref=lambda x, d, fn=fn: fn(x, -1),
        tol=3,
    )
    case(
        f"{fn_name}/method",
        f"Tensor.{fn_name}",
        t(SX),
        -1,
        ref=lambda x, d, fn=fn: fn(x, -1),
        diff=True,
        tol=3,
    )
    case(
        f"{fn_name}/neg_inf",
        f"F.{fn_name}",
        t(np.array([[0.0, -np.inf, 1.0]], "float32")),
        -1,
        ref=lambda x, d, fn=fn: fn(x, -1),
    )

# --------------------------------------------------------------------- activations
AX = np.concatenate([rand(g, (10,), "float32", -4, 4), np.array([0.0, -30.0, 30.0], "float32")])
for name, fn in R.ACTIVATIONS.items():
    case(f"F.{name}/f32", f"F.{name}", t(AX), ref=fn, diff=True, tol=3)
    case(f"F.{name}/f16", f"F.{name}", t(rand(g, (6,), "float16", -4, 4)), ref=fn, tol=3)
    case(
        f"F.{name}/f64_2d",
        f"F.{name}",
        t(rand(g, (2, 3), "float64", -4, 4)),
        ref=fn,
        diff=True,
        tol=3,
    )
    case(f"F.{name}/nan", f"F.{name}", t(np.array([np.nan, 1.0], "float32")), ref=fn)
case(
    "leaky_relu/slope",
    "F.leaky_relu",
    t(AX),
    0.2,
    ref=lambda x, s: np.where(x > 0, x, 0.2 * x),
    diff=True,
)
case(
    "elu/alpha",
    "F.elu",
    t(AX),
    kwargs={"alpha": 0.5},
    ref=lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)),
    diff=True,
)
case(
    "gelu/tanh", "F.gelu", t(AX), kwargs={"approximate": "tanh"}, ref=R.gelu_tanh, diff=True, tol=3
)
case(
    "gelu/none",
    "F.gelu",
    t(AX),
    kwargs={"approximate": "none"},
    ref=R.ACTIVATIONS["gelu"],
    diff=True,
    tol=3,
)
case(
    "softplus/beta_threshold",
    "F.softplus",
    t(AX),
    kwargs={"beta": 2.0, "threshold": 5.0},
    ref=lambda x: R.softplus(x, 2.0, 5.0),
    diff=True,
    tol=3,
)
case("relu/i32", "F.relu", t(np.array([-3, 0, 5], "int32")), ref=lambda x: np.maximum(x, 0))
case("relu/method", "Tensor.relu", t(AX), ref=R.ACTIVATIONS["relu"], diff=True)

# --------------------------------------------------------------------- normalisation
LX = rand(g, (2, 3, 4))
case(
    "layer_norm/last",
    "F.layer_norm",
    t(LX),
    (4,),
    ref=lambda x, s: R.layer_norm(x, s),
    diff=True,
    tol=5,
)
case(
    "layer_norm/affine",
    "F.layer_norm",
    t(LX),
    (3, 4),
    t(rand(g, (3, 4))),
    t(rand(g, (3, 4))),
    ref=lambda x, s, w, b: R.layer_norm(x, s, w, b),
    diff=True,
    tol=5,
)
case(
    "layer_norm/eps",
    "F.layer_norm",
    t(LX),
    [4],
    kwargs={"eps": 0.1},
    ref=lambda x, s: R.layer_norm(x, s, eps=0.1),
    diff=True,
    tol=5,
)
case(
    "layer_norm/f64",
    "F.layer_norm",
    t(rand(g, (3, 5), "float64")),
    (5,),
    t(rand(g, (5,), "float64")),
    t(rand(g, (5,), "float64")),
    ref=lambda x, s, w, b: R.layer_norm(x, s, w, b),
    diff=True,
    tol=5,
)
case(
    "layer_norm/f16",
    "F.layer_norm",
    t(rand(g, (2, 8), "float16")),
    (8,),
    ref=lambda x, s: R.layer_norm(x, s),
    tol=5,
)
BX = rand(g, (2, 3, 4, 4))
MEAN, VAR = rand(g, (3,), "float32", -1, 1), rand(g, (3,), "float32", 0.5, 2)
case(
    "batch_norm/inference_affine",
    "F.batch_norm",
    t(BX),
    t(MEAN),
    t(VAR),
    t(rand(g, (3,))),
    t(rand(g, (3,))),
    kwargs={"training": False},
    ref=lambda x, m, v, w, b: R.batch_norm(x, m, v, w, b),
    diff=True,
    grad=(0, 3, 4),
    tol=5,
)
case(
    "batch_norm/inference_plain",
    "F.batch_norm",
    t(BX),
    t(MEAN),
    t(VAR),
    ref=lambda x, m, v: R.batch_norm(x, m, v),
    diff=True,
    grad=(0,),
    tol=5,
)
case(
    "batch_norm/1d_eps",
    "F.batch_norm",
    t(rand(g, (4, 3))),
    t(MEAN),
    t(VAR),
    kwargs={"eps": 0.01},
    ref=lambda x, m, v: R.batch_norm(x, m, v, eps=0.01),
    diff=True,
    grad=(0,),
    tol=5,
)
W3 = rand(g, (3,))
case(
    "batch_norm/weight_kw",
    "F.batch_norm",
    t(rand(g, (2, 3, 5))),
    t(MEAN),
    t(VAR),
    kwargs={"weight": t(W3), "bias": None},
    ref=lambda x, m, v: R.batch_norm(x, m, v, W3.astype(np.float64)),
    diff=True,
    grad=(0,),
    tol=5,
)
