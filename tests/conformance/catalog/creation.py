"""Deterministic creation ops (random draws are checked in test_random.py)."""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t

g = rng(8)


def _c(id, op, *args, ref, out, kwargs=None, check_values=True):
    case(
        id, op, *args, ref=ref, out=out, kwargs=kwargs, pass_backend=True, check_values=check_values
    )


_c("zeros/varargs", "ember.zeros", 2, 3, ref=lambda *s: np.zeros(s), out="float32")
_c(
    "zeros/tuple_i32",
    "ember.zeros",
    (4,),
    kwargs={"dtype": "int32"},
    ref=lambda s: np.zeros(s),
    out="int32",
)
_c("zeros/0d", "ember.zeros", (), ref=lambda s: np.zeros(()), out="float32")
_c("zeros/empty", "ember.zeros", 0, 3, ref=lambda *s: np.zeros(s), out="float32")
_c(
    "ones/f16",
    "ember.ones",
    2,
    2,
    kwargs={"dtype": "float16"},
    ref=lambda *s: np.ones(s),
    out="float16",
)
_c(
    "ones/bool",
    "ember.ones",
    (3,),
    kwargs={"dtype": "bool"},
    ref=lambda s: np.ones(s, bool),
    out="bool",
)
_c("full/float", "ember.full", (2, 3), 1.5, ref=lambda s, v: np.full(s, v), out="float32")
_c("full/int_infers_i64", "ember.full", (2,), 7, ref=lambda s, v: np.full(s, v), out="int64")
_c("full/bool_infers_bool", "ember.full", (2,), True, ref=lambda s, v: np.full(s, v), out="bool")
_c(
    "full/dtype",
    "ember.full",
    (3,),
    -2,
    kwargs={"dtype": "int8"},
    ref=lambda s, v: np.full(s, v),
    out="int8",
)
_c("full/inf", "ember.full", (2,), float("-inf"), ref=lambda s, v: np.full(s, v), out="float32")
_c(
    "empty/shape_dtype",
    "ember.empty",
    2,
    3,
    ref=lambda *s: np.zeros(s),
    out="float32",
    check_values=False,
)
_c(
    "empty/i64",
    "ember.empty",
    (4,),
    kwargs={"dtype": "int64"},
    ref=lambda s: np.zeros(s),
    out="int64",
    check_values=False,
)

_c("arange/end", "ember.arange", 5, ref=lambda n: np.arange(n), out="int64")
_c(
    "arange/start_end_step",
    "ember.arange",
    2,
    11,
    3,
    ref=lambda a, b, s: np.arange(a, b, s),
    out="int64",
)
_c(
    "arange/negative_step",
    "ember.arange",
    5,
    -3,
    -2,
    ref=lambda a, b, s: np.arange(a, b, s),
    out="int64",
)
_c(
    "arange/float",
    "ember.arange",
    0.0,
    1.0,
    0.25,
    ref=lambda a, b, s: np.arange(a, b, s),
    out="float32",
)
_c(
    "arange/dtype",
    "ember.arange",
    4,
    kwargs={"dtype": "float64"},
    ref=lambda n: np.arange(n),
    out="float64",
)
_c("arange/empty", "ember.arange", 3, 3, ref=lambda a, b: np.arange(a, b), out="int64")
_c(
    "linspace/basic",
    "ember.linspace",
    0.0,
    1.0,
    5,
    ref=lambda a, b, n: np.linspace(a, b, n),
    out="float32",
)
_c(
    "linspace/reverse_int_args",
    "ember.linspace",
    10,
    -2,
    7,
    ref=lambda a, b, n: np.linspace(a, b, n),
    out="float32",
)
_c(
    "linspace/one",
    "ember.linspace",
    3.0,
    9.0,
    1,
    ref=lambda a, b, n: np.linspace(a, b, n),
    out="float32",
)
_c(
    "linspace/f64",
    "ember.linspace",
    -1.0,
    1.0,
    4,
    kwargs={"dtype": "float64"},
    ref=lambda a, b, n: np.linspace(a, b, n),
    out="float64",
)
_c("eye/square", "ember.eye", 3, ref=lambda n: np.eye(n), out="float32")
_c("eye/rect", "ember.eye", 2, 4, ref=lambda n, m: np.eye(n, m), out="float32")
_c("eye/i64", "ember.eye", 3, kwargs={"dtype": "int64"}, ref=lambda n: np.eye(n), out="int64")

X = rand(g, (2, 3), "int32")
for name, fn in (("zeros_like", np.zeros_like), ("ones_like", np.ones_like)):
    case(f"{name}/keeps_dtype", f"ember.{name}", t(X), ref=fn, out="int32")
    case(f"{name}/dtype", f"ember.{name}", t(X), kwargs={"dtype": "float16"}, ref=fn, out="float16")
case(
    "full_like/keeps_dtype",
    "ember.full_like",
    t(X),
    4,
    ref=lambda x, v: np.full_like(x, v),
    out="int32",
)
case(
    "full_like/float_value_f32",
    "ember.full_like",
    t(rand(g, (3,))),
    2.5,
    ref=lambda x, v: np.full_like(x, v),
)
case(
    "empty_like/shape_dtype",
    "ember.empty_like",
    t(rand(g, (2, 2), "float64")),
    ref=np.zeros_like,
    check_values=False,
)
case("zeros_like/noncontig", "ember.zeros_like", t(rand(g, (2, 3)), "transpose"), ref=np.zeros_like)

_c(
    "tensor/nested_floats",
    "ember.tensor",
    [[1.0, 2.0], [3.0, 4.5]],
    ref=lambda v: np.array(v),
    out="float32",
)
_c(
    "tensor/nested_ints_i64",
    "ember.tensor",
    [[1, 2], [3, -4]],
    ref=lambda v: np.array(v),
    out="int64",
)
_c("tensor/mixed_int_float", "ember.tensor", [1, 2.5, 3], ref=lambda v: np.array(v), out="float32")
_c("tensor/bools", "ember.tensor", [True, False], ref=lambda v: np.array(v), out="bool")
_c("tensor/scalar_0d", "ember.tensor", 3.5, ref=lambda v: np.array(v), out="float32")
_c("tensor/empty_list", "ember.tensor", [], ref=lambda v: np.zeros(0), out="float32")
_c(
    "tensor/dtype_kw",
    "ember.tensor",
    [1, 2, 255],
    kwargs={"dtype": "uint8"},
    ref=lambda v: np.array(v),
    out="uint8",
)
_c(
    "tensor/nan_inf",
    "ember.tensor",
    [float("nan"), float("inf"), -1.0],
    ref=lambda v: np.array(v),
    out="float32",
)
