"""Elementwise math: exp/log family, trig, erf, sigmoid, rounding, special-value tests."""

from __future__ import annotations

import numpy as np

from ..build import SHORT, case, erf, rand, rng, t

g = rng(2)
nan, inf = float("nan"), float("inf")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name → (reference, domain low, high, differentiable)
UNARY = {
    "exp": (np.exp, -3, 3, True),
    "expm1": (np.expm1, -2, 2, True),
    "log": (np.log, 0.1, 5, True),
    "log1p": (np.log1p, -0.5, 4, True),
    "log2": (np.log2, 0.1, 5, True),
    "sqrt": (np.sqrt, 0.01, 5, True),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), 0.1, 5, True),
    "reciprocal": (lambda x: 1.0 / x, 0.5, 3, True),
    "sin": (np.sin, -3, 3, True),
    "cos": (np.cos, -3, 3, True),
    "tan": (np.tan, -1.2, 1.2, True),
    "tanh": (np.tanh, -3, 3, True),
    "sinh": (np.sinh, -3, 3, True),
    "cosh": (np.cosh, -3, 3, True),
    "asin": (np.arcsin, -0.95, 0.95, True),
    "acos": (np.arccos, -0.95, 0.95, True),
    "atan": (np.arctan, -4, 4, True),
    "erf": (erf, -2.5, 2.5, True),
    "sigmoid": (_sigmoid, -6, 6, True),
    "sign": (np.sign, -3, 3, False),
    "floor": (np.floor, -3, 3, False),
    "ceil": (np.ceil, -3, 3, False),
    "round": (np.round, -3, 3, False),
    "trunc": (np.trunc, -3, 3, False),
    "log10": (np.log10, 0.1, 5, True),
}
# Special inputs per op and what numpy (= IEEE / PyTorch) gives.
SPECIAL = np.array([nan, inf, -inf, 0.0, -0.0], "float32")

for name, (fn, lo, hi, diff) in UNARY.items():
    # f32 through the method, f64 through ember.<name>, f16 through the method.
    case(
        f"{name}/f32",
        f"Tensor.{name}",
        t(rand(g, (3, 4), "float32", lo, hi)),
        ref=fn,
        diff=diff,
        tol=2,
    )
    case(
        f"{name}/f64",
        f"ember.{name}",
        t(rand(g, (2, 3), "float64", lo, hi)),
        ref=fn,
        diff=diff,
        tol=2,
    )
    case(
        f"{name}/f16",
        f"Tensor.{name}",
        t(rand(g, (5,), "float16", lo, hi)),
        ref=fn,
        diff=diff,
        tol=2,
    )
    if name != "sign":  # sign(nan): numpy gives nan, PyTorch 0; left undefined
        case(f"{name}/f32/special", f"ember.{name}", t(SPECIAL), ref=fn)
    case(
        f"{name}/f32/noncontig",
        f"ember.{name}",
        t(rand(g, (2, 3), "float32", lo, hi), "transpose"),
        ref=fn,
        tol=2,
    )

# Integer inputs: transcendental ops give the default float dtype; rounding ops keep the dtype.
INT_X = np.array([1, 2, 4, 9], "int32")
for name in ("exp", "log", "sqrt", "sin", "sigmoid", "reciprocal"):
    case(f"{name}/i32_gives_f32", f"ember.{name}", t(INT_X), ref=UNARY[name][0], out="float32")
for name in ("floor", "ceil", "round", "trunc", "sign"):
    case(
        f"{name}/i32_keeps_int",
        f"ember.{name}",
        t(np.array([-3, 0, 5], "int32")),
        ref=UNARY[name][0],
        out="int32",
    )

# Edge values.
case(
    "round/half_to_even",
    "ember.round",
    t(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997], "float32")),
    ref=np.round,
)
case(
    "round/decimals",
    "ember.round",
    t(np.array([1.2345, -2.5551, 10.05], "float64")),
    kwargs={"decimals": 2},
    ref=lambda x: np.round(x, 2),
)
case("log/f32/negative_nan", "ember.log", t(np.array([-1.0, 0.0, 1.0], "float32")), ref=np.log)
case("sqrt/f32/negative_nan", "ember.sqrt", t(np.array([-1.0, 4.0], "float32")), ref=np.sqrt)
case("exp/f16/overflow_inf", "ember.exp", t(np.array([12.0, -20.0], "float16")), ref=np.exp)
case("exp/f32/overflow_inf", "ember.exp", t(np.array([100.0, -200.0, 88.0], "float32")), ref=np.exp)
case(
    "sigmoid/f32/saturates",
    "ember.sigmoid",
    t(np.array([-100.0, 100.0, 0.0], "float32")),
    ref=_sigmoid,
)
case("tanh/f32/saturates", "ember.tanh", t(np.array([-50.0, 50.0], "float32")), ref=np.tanh)
case(
    "sign/f32/zero_inf",
    "ember.sign",
    t(np.array([-0.0, 0.0, -inf, inf, -2.0], "float32")),
    ref=np.sign,
)
case(
    "reciprocal/f32/zero",
    "ember.reciprocal",
    t(np.array([0.0, -0.0, 2.0], "float32")),
    ref=lambda x: 1.0 / x,
)
case("exp/f32/0d", "ember.exp", t(np.float32(0.5)), ref=np.exp, diff=True)
case("exp/f32/empty", "ember.exp", t(np.zeros((2, 0), "float32")), ref=np.exp)

# atan2 and pow as math functions.
case(
    "atan2/f32",
    "ember.atan2",
    t(rand(g, (3, 4))),
    t(rand(g, (3, 4))),
    ref=np.arctan2,
    diff=True,
    tol=2,
)
case(
    "atan2/f32/quadrants",
    "ember.atan2",
    t(np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0], "float32")),
    t(np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0], "float32")),
    ref=np.arctan2,
)
case(
    "atan2/f64/broadcast",
    "Tensor.atan2",
    t(rand(g, (2, 1), "float64")),
    t(rand(g, (3,), "float64")),
    ref=np.arctan2,
    diff=True,
)
case(
    "atan2/i32_gives_f32",
    "ember.atan2",
    t(np.array([1, -1], "int32")),
    t(np.array([2, 2], "int32")),
    ref=np.arctan2,
    out="float32",
)
case(
    "pow/f32/method",
    "Tensor.pow",
    t(rand(g, (4,), "float32", 0.5, 2)),
    3.0,
    ref=np.power,
    diff=True,
)

# isnan / isinf / isfinite / nan_to_num.
SV = np.array([nan, inf, -inf, 0.0, -1.5, 3.0], "float32")
for name, fn in {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}.items():
    case(f"{name}/f32", f"ember.{name}", t(SV), ref=fn, out="bool")
    case(f"{name}/f16", f"Tensor.{name}", t(SV.astype("float16")), ref=fn, out="bool")
    case(f"{name}/i32", f"ember.{name}", t(np.array([1, -2, 0], "int32")), ref=fn, out="bool")
for d in ("float32", "float16", "float64"):
    case(
        f"nan_to_num/{SHORT[d]}",
        "ember.nan_to_num",
        t(SV.astype(d)),
        ref=lambda x, d=d: np.nan_to_num(x.astype(d)),
    )
case(
    "nan_to_num/f32/values",
    "Tensor.nan_to_num",
    t(SV),
    kwargs={"nan": 0.5, "posinf": 100.0, "neginf": -100.0},
    ref=lambda x: np.nan_to_num(x, nan=0.5, posinf=100.0, neginf=-100.0),
)
