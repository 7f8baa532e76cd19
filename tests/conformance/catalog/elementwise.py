"""Arithmetic and Python operators, integer wrap-around, // and % signs, promotion, casts."""

from __future__ import annotations

import numpy as np

from ..build import FLOATS, NUMERIC, SHORT, case, rand, rng, t

g = rng(1)
nan, inf = float("nan"), float("inf")

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
OPERATOR = {"add": "operator.add", "sub": "operator.sub", "mul": "operator.mul"}

# --------------------------------------------------------------------- add/sub/mul per dtype
for name, fn in BINARY.items():
    for d in NUMERIC:
        lo, hi = (0, 9) if d == "uint8" else (-9, 9)
        a, b = rand(g, (3, 4), d, lo, hi), rand(g, (3, 4), d, lo, hi)
        case(f"{name}/{SHORT[d]}", f"ember.{name}", t(a), t(b), ref=fn, diff=d in FLOATS)
    a, b = rand(g, (2, 1, 4)), rand(g, (3, 1))
    case(f"{name}/f32/broadcast", OPERATOR[name], t(a), t(b), ref=fn, diff=True)
    case(
        f"{name}/f32/size1_broadcast",
        OPERATOR[name],
        t(rand(g, (1,))),
        t(rand(g, (2, 3))),
        ref=fn,
        diff=True,
    )
    case(
        f"{name}/f32/0d",
        OPERATOR[name],
        t(np.float32(1.5)),
        t(np.float32(-2.25)),
        ref=fn,
        diff=True,
    )
    case(
        f"{name}/f32/empty",
        OPERATOR[name],
        t(np.zeros((0, 3), "float32")),
        t(rand(g, (1, 3))),
        ref=fn,
    )
    case(
        f"{name}/f32/transposed",
        OPERATOR[name],
        t(rand(g, (3, 4)), "transpose"),
        t(rand(g, (3, 4))),
        ref=fn,
        diff=True,
    )
    case(
        f"{name}/f32/sliced",
        OPERATOR[name],
        t(rand(g, (2, 3)), "slice"),
        t(rand(g, (2, 3))),
        ref=fn,
        diff=True,
    )
    case(
        f"{name}/f32/expanded",
        OPERATOR[name],
        t(rand(g, (3, 1)), expand=(3, 4)),
        t(rand(g, (3, 4))),
        ref=fn,
        diff=True,
    )
    case(f"{name}/i32/scalar", OPERATOR[name], t(rand(g, (4,), "int32")), 3, ref=fn)
    case(
        f"{name}/f32/scalar_reflected",
        OPERATOR[name],
        2.5,
        t(rand(g, (4,))),
        ref=fn,
        out="float32",
        diff=True,
        grad=(1,),
    )
    case(
        f"{name}/i64/scalar_reflected",
        OPERATOR[name],
        7,
        t(rand(g, (4,), "int64")),
        ref=fn,
        out="int64",
    )

case(
    "add/alpha",
    "ember.add",
    t(rand(g, (3,))),
    t(rand(g, (3,))),
    kwargs={"alpha": 2},
    ref=lambda a, b: a + 2 * b,
    diff=True,
)
case(
    "sub/alpha",
    "Tensor.sub",
    t(rand(g, (3,))),
    t(rand(g, (3,))),
    kwargs={"alpha": 0.5},
    ref=lambda a, b: a - 0.5 * b,
    diff=True,
)

# --------------------------------------------------------------------- integer wrap-around
case(
    "add/i8/overflow",
    "operator.add",
    t(np.array([100, -100, 127], "int8")),
    t(np.array([100, -100, 1], "int8")),
    ref=np.add,
)
case(
    "sub/u8/underflow",
    "operator.sub",
    t(np.array([0, 1, 5], "uint8")),
    t(np.array([1, 2, 3], "uint8")),
    ref=np.subtract,
)
case(
    "mul/i32/overflow",
    "operator.mul",
    t(np.array([1 << 20, -(1 << 20), 65537], "int32")),
    t(np.array([1 << 12, 1 << 12, 65537], "int32")),
    ref=np.multiply,
)
case(
    "add/i64/overflow",
    "operator.add",
    t(np.array([2**63 - 1, -(2**63)], "int64")),
    t(np.array([1, -1], "int64")),
    ref=lambda a, b: np.add(a, b),
)
case("neg/i8/min_wraps", "operator.neg", t(np.array([-128, 127, 0], "int8")), ref=np.negative)
case("abs/i8/min_wraps", "builtins.abs", t(np.array([-128, -5, 7], "int8")), ref=np.abs)

# --------------------------------------------------------------------- true division
for d in FLOATS:
    a, b = rand(g, (3, 4), d), rand(g, (3, 4), d, 0.5, 3) * np.where(rand(g, (3, 4), "bool"), 1, -1)
    case(f"div/{SHORT[d]}", "operator.truediv", t(a), t(b.astype(d)), ref=np.divide, diff=True)
case(
    "div/i32_gives_f32",
    "operator.truediv",
    t(np.array([7, -7, 1, 0], "int32")),
    t(np.array([2, 2, 3, 5], "int32")),
    ref=np.divide,
    out="float32",
)
case(
    "div/i64_scalar_gives_f32",
    "operator.truediv",
    t(np.array([7, -7, 3], "int64")),
    2,
    ref=np.divide,
    out="float32",
)
case(
    "div/f32/by_zero",
    "ember.div",
    t(np.array([1.0, -1.0, 0.0], "float32")),
    t(np.zeros(3, "float32")),
    ref=np.divide,
)
case(
    "div/f32/reflected_scalar",
    "operator.truediv",
    1.0,
    t(rand(g, (3,), "float32", 1, 2)),
    ref=np.divide,
    out="float32",
    diff=True,
    grad=(1,),
)
case(
    "div/rounding_trunc",
    "ember.div",
    t(np.array([7.0, -7.0, 5.5], "float32")),
    t(np.array([2.0, 2.0, -2.0], "float32")),
    kwargs={"rounding_mode": "trunc"},
    ref=lambda a, b: np.trunc(a / b),
)
case(
    "div/rounding_floor",
    "ember.div",
    t(np.array([7.0, -7.0, 5.5], "float32")),
    t(np.array([2.0, 2.0, -2.0], "float32")),
    kwargs={"rounding_mode": "floor"},
    ref=lambda a, b: np.floor(a / b),
)

# --------------------------------------------------------------------- // and % (sign rules)
NEG_A = np.array([-7, 7, -7, 7, -1, 0, 9, -9], "int32")
NEG_B = np.array([2, 2, -2, -2, 3, 5, -4, 4], "int32")
for d in ("int32", "int64", "int8"):
    case(
        f"floor_divide/{SHORT[d]}/negatives",
        "operator.floordiv",
        t(NEG_A.astype(d)),
        t(NEG_B.astype(d)),
        ref=np.floor_divide,
    )
    case(
        f"remainder/{SHORT[d]}/negatives",
        "operator.mod",
        t(NEG_A.astype(d)),
        t(NEG_B.astype(d)),
        ref=np.remainder,
    )
case("floor_divide/i32/scalar", "operator.floordiv", t(NEG_A), 3, ref=np.floor_divide)
case("remainder/i32/scalar", "operator.mod", t(NEG_A), -3, ref=np.remainder)
case(
    "remainder/i32/reflected",
    "operator.mod",
    10,
    t(np.array([3, -3, 4, -4], "int32")),
    ref=np.remainder,
    out="int32",
)
case(
    "floor_divide/u8",
    "ember.floor_divide",
    t(np.array([7, 200, 255], "uint8")),
    t(np.array([2, 3, 16], "uint8")),
    ref=np.floor_divide,
)
for d in ("float32", "float64"):
    a = np.array([-7.5, 7.5, -7.5, 7.5, 5.0, -0.5], d)
    b = np.array([2.0, 2.0, -2.0, -2.0, 2.5, 2.0], d)
    case(f"floor_divide/{SHORT[d]}", "operator.floordiv", t(a), t(b), ref=np.floor_divide)
    case(f"remainder/{SHORT[d]}", "ember.remainder", t(a), t(b), ref=np.remainder)
case("remainder/f32/scalar", "operator.mod", t(rand(g, (5,))), 1.5, ref=np.remainder)

# --------------------------------------------------------------------- pow
case(
    "pow/f32",
    "ember.pow",
    t(rand(g, (3, 4), "float32", 0.1, 3)),
    t(rand(g, (3, 4), "float32", -2, 2)),
    ref=np.power,
    diff=True,
    tol=4,
)
case(
    "pow/f64",
    "operator.pow",
    t(rand(g, (5,), "float64", 0.1, 3)),
    t(rand(g, (5,), "float64")),
    ref=np.power,
    diff=True,
)
case("pow/f16", "operator.pow", t(rand(g, (5,), "float16", 0.5, 2)), 2.0, ref=np.power, diff=True)
case("pow/f32/scalar_square", "operator.pow", t(rand(g, (2, 3))), 2, ref=np.power, diff=True)
case(
    "pow/f32/reflected",
    "operator.pow",
    2.0,
    t(rand(g, (4,))),
    ref=lambda a, b: np.power(a, b),
    out="float32",
    diff=True,
    grad=(1,),
)
case(
    "pow/f32/neg_base",
    "operator.pow",
    t(np.array([-2.0, -2.0, -8.0, 0.0], "float32")),
    t(np.array([2.0, 3.0, 0.5, 0.0], "float32")),
    ref=np.power,
)
case(
    "pow/i32",
    "operator.pow",
    t(np.array([2, -3, 5, 0], "int32")),
    t(np.array([3, 3, 2, 0], "int32")),
    ref=np.power,
)
case("pow/i32/scalar", "operator.pow", t(np.array([2, -3, 7], "int32")), 2, ref=np.power)
case(
    "pow/i64/float_scalar",
    "operator.pow",
    t(np.array([4, 9], "int64")),
    0.5,
    ref=np.power,
    out="float32",
)

# --------------------------------------------------------------------- unary -, abs
for d in ("float32", "float16", "int32", "int64"):
    a = rand(g, (2, 3), d, -9, 9)
    case(f"neg/{SHORT[d]}", "operator.neg", t(a), ref=np.negative, diff=d in FLOATS)
    case(f"abs/{SHORT[d]}", "builtins.abs", t(a), ref=np.abs, diff=d in FLOATS)
case("abs/f32/method", "Tensor.abs", t(np.array([-0.0, -inf, nan, 2.0], "float32")), ref=np.abs)
case("neg/f32/noncontig", "Tensor.neg", t(rand(g, (3, 2)), "transpose"), ref=np.negative)

# --------------------------------------------------------------------- promotion
PROMO = [
    ("int32", "float32", "float32"),
    ("int64", "float16", "float16"),
    ("uint8", "int8", "int16"),  # skipped where int16 is missing (wasm, wgpu compute in int32)
    ("uint16", "int16", "int32"),
    ("uint32", "int8", "int64"),
    ("uint16", "uint64", "uint64"),
    ("int8", "int32", "int32"),
    ("uint8", "int64", "int64"),
    ("float16", "float32", "float32"),
    ("float32", "float64", "float64"),
    ("bool", "int32", "int32"),
    ("bool", "float16", "float16"),
    ("int32", "int64", "int64"),
    ("uint8", "float64", "float64"),
    ("bool", "uint8", "uint8"),
]
for da, db, dout in PROMO:
    a, b = rand(g, (2, 3), da, -5, 5), rand(g, (3,), db, 0, 5)
    case(f"promote/{SHORT[da]}+{SHORT[db]}", "operator.add", t(a), t(b), ref=np.add, out=dout)
    case(f"promote/{SHORT[db]}*{SHORT[da]}", "operator.mul", t(b), t(a), ref=np.multiply, out=dout)

SCALAR_PROMO = [
    ("int32", 2, "int32"),
    ("int32", 0.5, "float32"),
    ("float16", 0.5, "float16"),
    ("float16", 3, "float16"),
    ("uint8", 3, "uint8"),
    ("int8", True, "int8"),
    ("bool", 1, "int64"),
    ("bool", 1.5, "float32"),
    ("float64", 2, "float64"),
    ("int64", 1.5, "float32"),
]
for d, s, dout in SCALAR_PROMO:
    case(
        f"promote/weak_{SHORT[d]}*{type(s).__name__}",
        "operator.mul",
        t(rand(g, (4,), d, 0, 5)),
        s,
        ref=np.multiply,
        out=dout,
    )
    case(
        f"promote/weak_{type(s).__name__}+{SHORT[d]}",
        "operator.add",
        s,
        t(rand(g, (4,), d, 0, 5)),
        ref=np.add,
        out=dout,
    )

# --------------------------------------------------------------------- astype / to
CASTS = [
    ("float32", "int32", np.array([-2.7, -0.5, 0.0, 1.9, 100.2], "float32")),
    ("float32", "uint8", np.array([0.0, 1.9, 254.9, 7.5], "float32")),
    ("float32", "bool", np.array([0.0, -0.0, 0.1, nan], "float32")),
    ("float64", "float16", np.array([1.0, 1e-3, 65504.0, 1e6, -1e6], "float64")),
    ("int64", "int8", np.array([127, 128, -129, 255, 1000], "int64")),
    ("int32", "float16", np.array([1, -2048, 3], "int32")),
    ("bool", "float32", np.array([True, False])),
    ("uint8", "int64", np.array([0, 255, 17], "uint8")),
    ("int32", "bool", np.array([0, 3, -1], "int32")),
    ("float16", "float64", np.array([0.1, 65504.0, -inf], "float16")),
]
for src, dst, v in CASTS:
    case(
        f"astype/{SHORT[src]}->{SHORT[dst]}",
        "Tensor.astype",
        t(v),
        dst,
        ref=lambda x, d: x,
        out=dst,
    )
case("to/dtype_str", "Tensor.to", t(rand(g, (3,))), "float64", ref=lambda x, d: x, out="float64")
case(
    "to/dtype_kw",
    "Tensor.to",
    t(rand(g, (3,), "int32")),
    kwargs={"dtype": "float16"},
    ref=lambda x: x,
    out="float16",
)
case(
    "astype/noncontig",
    "Tensor.astype",
    t(rand(g, (2, 3)), "transpose"),
    "float64",
    ref=lambda x, d: x,
    out="float64",
)
