"""Comparisons, logical ops, where, clamp, minimum/maximum."""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t

g = rng(11)
nan, inf = float("nan"), float("inf")

# --------------------------------------------------------------------- comparisons
CMP = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
PYOP = {
    "eq": "operator.eq",
    "ne": "operator.ne",
    "lt": "operator.lt",
    "le": "operator.le",
    "gt": "operator.gt",
    "ge": "operator.ge",
}
A = np.array([[1.0, 2.0, 3.0], [nan, -1.0, inf]], "float32")
B = np.array([2.0, 2.0, 1.0], "float32")
for name, fn in CMP.items():
    case(f"{name}/f32/nan_inf_broadcast", PYOP[name], t(A), t(B), ref=fn, out="bool")
    case(
        f"{name}/i32/scalar",
        f"ember.{name}",
        t(np.array([1, 2, 3, -4], "int32")),
        2,
        ref=fn,
        out="bool",
    )
    case(
        f"{name}/i32+f32/promote",
        f"Tensor.{name}",
        t(np.array([1, 2, 3], "int32")),
        t(np.array([1.5, 2.0, 2.5], "float32")),
        ref=fn,
        out="bool",
    )
case(
    "eq/bool",
    "operator.eq",
    t(np.array([True, False, True])),
    t(np.array([True, True, False])),
    ref=np.equal,
    out="bool",
)
case(
    "lt/u8_i8",
    "operator.lt",
    t(np.array([0, 200, 5], "uint8")),
    t(np.array([-1, 100, 5], "int8")),
    ref=np.less,
    out="bool",
)

# --------------------------------------------------------------------- logical
P, Q = np.array([True, True, False, False]), np.array([True, False, True, False])
for name, fn in {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}.items():
    case(f"{name}/bool", f"ember.{name}", t(P), t(Q), ref=fn, out="bool")
    case(
        f"{name}/f32_nonzero",
        f"Tensor.{name}",
        t(np.array([0.0, 1.5, -2.0, nan], "float32")),
        t(np.array([1.0, 0.0, 3.0, 1.0], "float32")),
        ref=fn,
        out="bool",
    )
case("logical_not/bool", "ember.logical_not", t(P), ref=np.logical_not, out="bool")
case(
    "logical_not/i32",
    "Tensor.logical_not",
    t(np.array([0, 3, -1], "int32")),
    ref=np.logical_not,
    out="bool",
)
case("and/bool_op", "operator.and_", t(P), t(Q), ref=np.logical_and, out="bool")
case("or/bool_op", "operator.or_", t(P), t(Q), ref=np.logical_or, out="bool")
case("xor/bool_op", "operator.xor", t(P), t(Q), ref=np.logical_xor, out="bool")
case("invert/bool_op", "operator.invert", t(P), ref=np.logical_not, out="bool")
case(
    "and/bool_broadcast", "operator.and_", t(P.reshape(4, 1)), t(Q), ref=np.logical_and, out="bool"
)

# --------------------------------------------------------------------- where
C = rand(g, (3, 4), "bool")
case(
    "where/f32",
    "ember.where",
    t(C),
    t(rand(g, (3, 4))),
    t(rand(g, (3, 4))),
    ref=np.where,
    out="float32",
    diff=True,
    grad=(1, 2),
)
case(
    "where/broadcast",
    "ember.where",
    t(C[:, :1]),
    t(rand(g, (1, 4))),
    t(rand(g, (3, 1))),
    ref=np.where,
    out="float32",
    diff=True,
    grad=(1, 2),
)
case(
    "where/scalar_x",
    "ember.where",
    t(C),
    0.0,
    t(rand(g, (3, 4))),
    ref=np.where,
    out="float32",
    diff=True,
    grad=(2,),
)
case(
    "where/promote_i32_f32",
    "ember.where",
    t(C),
    t(rand(g, (3, 4), "int32")),
    t(rand(g, (3, 4), "float32")),
    ref=np.where,
    out="float32",
)
case(
    "where/i64",
    "ember.where",
    t(C),
    t(rand(g, (3, 4), "int64")),
    t(rand(g, (4,), "int64")),
    ref=np.where,
    out="int64",
)
case(
    "where/method",
    "Tensor.where",
    t(rand(g, (4,))),
    t(np.array([True, False, True, False])),
    -1.0,
    ref=lambda x, c, o: np.where(c, x, o),
    out="float32",
)
case(
    "where/float_cond",
    "ember.where",
    t(np.array([0.0, 2.0, nan], "float32")),
    1,
    2,
    ref=lambda c, x, y: np.where(c != 0, x, y),
    out="int64",
)

# --------------------------------------------------------------------- clamp, minimum, maximum
X = np.array([-3.0, -0.5, 0.0, 0.7, 2.5, nan], "float32")
case(
    "clamp/f32",
    "Tensor.clamp",
    t(X),
    -1.0,
    1.0,
    ref=lambda x, lo, hi: np.clip(x, lo, hi),
    diff=True,
)
case(
    "clamp/f32/min_only",
    "ember.clamp",
    t(X),
    kwargs={"min": 0.0},
    ref=lambda x: np.maximum(x, 0.0),
    diff=True,
)
case(
    "clamp/f32/max_only",
    "Tensor.clamp",
    t(X),
    kwargs={"max": 0.5},
    ref=lambda x: np.minimum(x, 0.5),
    diff=True,
)
case(
    "clamp/i32",
    "Tensor.clamp",
    t(np.array([-9, -1, 0, 4, 9], "int32")),
    -2,
    5,
    ref=lambda x, lo, hi: np.clip(x, lo, hi),
)
case(
    "clamp/f32/tensor_bounds",
    "ember.clamp",
    t(rand(g, (2, 3))),
    t(rand(g, (3,), "float32", -3, -1)),
    t(rand(g, (2, 1), "float32", 0, 1)),
    ref=lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    diff=True,
    grad=(0,),
)
for name, fn in {"maximum": np.maximum, "minimum": np.minimum}.items():
    case(f"{name}/f32/nan", f"ember.{name}", t(X), t(np.zeros(6, "float32")), ref=fn, diff=True)
    case(
        f"{name}/i32/broadcast",
        f"Tensor.{name}",
        t(rand(g, (2, 3), "int32")),
        t(rand(g, (3,), "int32")),
        ref=fn,
    )
    case(
        f"{name}/f16",
        f"ember.{name}",
        t(rand(g, (5,), "float16")),
        t(rand(g, (5,), "float16")),
        ref=fn,
    )
    case(
        f"{name}/i32+f32",
        f"ember.{name}",
        t(rand(g, (4,), "int32")),
        t(rand(g, (4,))),
        ref=fn,
        out="float32",
    )
