"""Reductions with dim (int, negative, tuple, None) and keepdim; scans; norms."""

from __future__ import annotations

import numpy as np

from ..build import SHORT, case, rand, rng, t

g = rng(3)
nan, inf = float("nan"), float("inf")


def _axis(dim):
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _lse(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


X3 = rand(g, (2, 3, 4))
DIMS = [(None, False), (1, False), (-1, True), ((0, 2), False), ((0, -1), True), (0, True)]


def _dim_id(dim, keep) -> str:
    d = (
        "all"
        if dim is None
        else ("x".join(str(i) for i in dim) if isinstance(dim, tuple) else str(dim))
    )
    return f"dim{d}" + ("_keep" if keep else "")


def _kw(dim, keep) -> dict:
    kw = {} if dim is None else {"dim": dim}
    if keep:
        kw["keepdim"] = True
    return kw


FLOAT_REDUCE = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "logsumexp": _lse,
}
for name, fn in FLOAT_REDUCE.items():
    for dim, keep in DIMS:
        if name == "logsumexp" and dim is None:
            continue
        case(
            f"{name}/f32/{_dim_id(dim, keep)}",
            f"Tensor.{name}",
            t(X3),
            kwargs=_kw(dim, keep),
            ref=lambda x, fn=fn, dim=dim, keep=keep: fn(x, axis=_axis(dim), keepdims=keep),
            diff=True,
            tol=3,
        )
    case(
        f"{name}/f16",
        f"Tensor.{name}",
        t(rand(g, (3, 4), "float16", -1, 1)),
        kwargs={"dim": 1},
        ref=lambda x, fn=fn: fn(x, axis=1),
        tol=4,
    )
    case(
        f"{name}/f64",
        f"ember.{name}",
        t(rand(g, (3, 4), "float64")),
        kwargs={"dim": 0},
        ref=lambda x, fn=fn: fn(x, axis=0),
        diff=True,
    )
    case(
        f"{name}/f32/noncontig",
        f"Tensor.{name}",
        t(rand(g, (3, 4)), "transpose"),
        kwargs={"dim": -1},
        ref=lambda x, fn=fn: fn(x, axis=-1),
        diff=True,
        tol=3,
    )

case(
    "sum/i32_gives_i64",
    "Tensor.sum",
    t(rand(g, (3, 4), "int32", -100, 100)),
    ref=np.sum,
    out="int64",
)
case(
    "sum/i32_dim_gives_i64",
    "Tensor.sum",
    t(rand(g, (3, 4), "int32", -100, 100)),
    kwargs={"dim": 1},
    ref=lambda x: np.sum(x, axis=1),
    out="int64",
)
case(
    "sum/u8_gives_i64", "Tensor.sum", t(np.array([200, 100, 255], "uint8")), ref=np.sum, out="int64"
)
case(
    "sum/bool_gives_i64",
    "ember.sum",
    t(np.array([True, False, True, True])),
    ref=np.sum,
    out="int64",
)
case(
    "sum/f32/empty",
    "Tensor.sum",
    t(np.zeros((0, 3), "float32")),
    kwargs={"dim": 0},
    ref=lambda x: np.sum(x, axis=0),
)
case("sum/f32/empty_all", "Tensor.sum", t(np.zeros((0,), "float32")), ref=np.sum)
case("sum/f32/0d", "Tensor.sum", t(np.float32(2.5)), ref=np.sum)
case("sum/f32/nan", "Tensor.sum", t(np.array([1.0, nan, 2.0], "float32")), ref=np.sum)
case(
    "sum/f32/dtype_kw",
    "Tensor.sum",
    t(rand(g, (4,))),
    kwargs={"dtype": "float64"},
    ref=np.sum,
    out="float64",
)
case(
    "prod/i32_gives_i64",
    "Tensor.prod",
    t(np.array([[2, -3], [4, 5]], "int32")),
    kwargs={"dim": 1},
    ref=lambda x: np.prod(x, axis=1),
    out="int64",
)
case("prod/f32/empty", "Tensor.prod", t(np.zeros((0,), "float32")), ref=np.prod)
case("mean/f32/0d", "Tensor.mean", t(np.float32(-1.0)), ref=np.mean)


def _argk(ifn, x, dim, keep):
    i = ifn(x, axis=dim)
    return np.expand_dims(i, dim) if keep else i


# max/min/argmax/argmin
for name, vfn, ifn in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
    case(f"{name}/f32/all", f"Tensor.{name}", t(X3), ref=vfn)
    case(f"{name}/i32/all", f"ember.{name}", t(rand(g, (3, 4), "int32")), ref=vfn)
    for dim, keep in ((1, False), (-1, True), (0, False)):
        case(
            f"{name}/f32/{_dim_id(dim, keep)}",
            f"Tensor.{name}",
            t(X3),
            kwargs=_kw(dim, keep),
            ref=lambda x, dim=dim, keep=keep, vfn=vfn, ifn=ifn: (
                vfn(x, axis=dim, keepdims=keep),
                _argk(ifn, x, dim, keep),
            ),
            multi=True,
            fields=("values", "indices"),
            out=("float32", "int64"),
            diff=True,
        )
    case(
        f"{name}/i8/dim",
        f"Tensor.{name}",
        t(np.array([[-128, 5, 127], [3, 2, 1]], "int8")),
        1,
        ref=lambda x, d, vfn=vfn, ifn=ifn: (vfn(x, axis=1), ifn(x, axis=1)),
        multi=True,
        fields=("values", "indices"),
        out=("int8", "int64"),
    )
    case(f"{name}/f32/nan", f"Tensor.{name}", t(np.array([1.0, nan, 3.0], "float32")), ref=vfn)
    case(f"{name}/f16/all", f"Tensor.{name}", t(rand(g, (5,), "float16")), ref=vfn)
    case(f"arg{name}/f32/all", f"Tensor.arg{name}", t(X3), ref=ifn, out="int64")
    case(
        f"arg{name}/f32/dim1",
        f"ember.arg{name}",
        t(X3),
        kwargs={"dim": 1},
        ref=lambda x, ifn=ifn: ifn(x, axis=1),
        out="int64",
    )
    case(
        f"arg{name}/f32/dim-1_keep",
        f"Tensor.arg{name}",
        t(X3),
        kwargs={"dim": -1, "keepdim": True},
        ref=lambda x, ifn=ifn: _argk(ifn, x, -1, True),
        out="int64",
    )
    case(
        f"arg{name}/i32/dim0",
        f"Tensor.arg{name}",
        t(np.array([[3, 9, -1], [7, 2, 5]], "int32")),
        kwargs={"dim": 0},
        ref=lambda x, ifn=ifn: ifn(x, axis=0),
        out="int64",
    )


# var/std with correction
for name, fn in (("var", np.var), ("std", np.std)):
    case(
        f"{name}/f32/all_default",
        f"Tensor.{name}",
        t(X3),
        ref=lambda x, fn=fn: fn(x, ddof=1),
        diff=True,
        tol=3,
    )
    case(
        f"{name}/f32/dim1_corr0",
        f"Tensor.{name}",
        t(X3),
        kwargs={"dim": 1, "correction": 0},
        ref=lambda x, fn=fn: fn(x, axis=1, ddof=0),
        diff=True,
        tol=3,
    )
    case(
        f"{name}/f32/dim-1_corr1_keep",
        f"Tensor.{name}",
        t(X3),
        kwargs={"dim": -1, "correction": 1, "keepdim": True},
        ref=lambda x, fn=fn: fn(x, axis=-1, ddof=1, keepdims=True),
        diff=True,
        tol=3,
    )
    case(
        f"{name}/f32/dim02",
        f"ember.{name}",
        t(X3),
        kwargs={"dim": (0, 2)},
        ref=lambda x, fn=fn: fn(x, axis=(0, 2), ddof=1),
        diff=True,
        tol=3,
    )
    case(
        f"{name}/f64/positional_dim",
        f"Tensor.{name}",
        t(rand(g, (3, 5), "float64")),
        0,
        ref=lambda x, d, fn=fn: fn(x, axis=0, ddof=1),
        diff=True,
    )
case(
    "logsumexp/f32/large",
    "ember.logsumexp",
    t(np.array([[1000.0, 1000.0], [-1000.0, -1000.5]], "float32")),
    1,
    ref=lambda x, d: _lse(x, axis=1),
)
case(
    "logsumexp/f32/neg_inf",
    "Tensor.logsumexp",
    t(np.array([[-inf, -inf], [-inf, 0.0]], "float32")),
    1,
    ref=lambda x, d: _lse(x, axis=1),
)

# any/all
B = np.array([[True, False, False], [True, True, True]])
for name, fn in (("any", np.any), ("all", np.all)):
    case(f"{name}/bool/all", f"Tensor.{name}", t(B), ref=fn, out="bool")
    case(
        f"{name}/bool/dim1",
        f"ember.{name}",
        t(B),
        kwargs={"dim": 1},
        ref=lambda x, fn=fn: fn(x, axis=1),
        out="bool",
    )
    case(
        f"{name}/bool/dim0_keep",
        f"Tensor.{name}",
        t(B),
        kwargs={"dim": 0, "keepdim": True},
        ref=lambda x, fn=fn: fn(x, axis=0, keepdims=True),
        out="bool",
    )
    case(
        f"{name}/f32/nonzero",
        f"Tensor.{name}",
        t(np.array([0.0, nan, 2.0], "float32")),
        ref=fn,
        out="bool",
    )
    case(
        f"{name}/i32/dim-1",
        f"Tensor.{name}",
        t(np.array([[0, 0], [0, 3]], "int32")),
        -1,
        ref=lambda x, d, fn=fn: fn(x, axis=-1),
        out="bool",
    )
    case(f"{name}/bool/empty", f"Tensor.{name}", t(np.zeros((0,), bool)), ref=fn, out="bool")

# cumsum / cumprod
for name, fn in (("cumsum", np.cumsum), ("cumprod", np.cumprod)):
    for dim in (0, 1, -1):
        case(
            f"{name}/f32/dim{dim}",
            f"Tensor.{name}",
            t(rand(g, (3, 4), "float32", -1.5, 1.5)),
            dim,
            ref=lambda x, d, fn=fn: fn(x, axis=d),
            diff=True,
            tol=3,
        )
    case(
        f"{name}/i32_gives_i64",
        f"ember.{name}",
        t(np.array([[1, -2, 3], [4, 5, -6]], "int32")),
        kwargs={"dim": 1},
        ref=lambda x, fn=fn: fn(x, axis=1),
        out="int64",
    )
    case(
        f"{name}/f64",
        f"ember.{name}",
        t(rand(g, (5,), "float64")),
        0,
        ref=lambda x, d, fn=fn: fn(x, axis=0),
        diff=True,
    )
    case(
        f"{name}/f16",
        f"Tensor.{name}",
        t(rand(g, (4,), "float16", -1, 1)),
        0,
        ref=lambda x, d, fn=fn: fn(x, axis=0),
        tol=3,
    )

# norm
NX = rand(g, (3, 4))
case("norm/f32/fro", "Tensor.norm", t(NX), ref=lambda x: np.sqrt(np.sum(x * x)), diff=True)
case(
    "norm/f32/p2_dim1",
    "Tensor.norm",
    t(NX),
    kwargs={"p": 2, "dim": 1},
    ref=lambda x: np.sqrt(np.sum(x * x, axis=1)),
    diff=True,
)
case(
    "norm/f32/p1_dim0_keep",
    "Tensor.norm",
    t(NX),
    kwargs={"p": 1, "dim": 0, "keepdim": True},
    ref=lambda x: np.sum(np.abs(x), axis=0, keepdims=True),
    diff=True,
)
case("norm/f32/pinf", "Tensor.norm", t(NX), kwargs={"p": inf}, ref=lambda x: np.max(np.abs(x)))
case(
    "norm/f64/p3_dim-1",
    "ember.norm",
    t(rand(g, (2, 3), "float64")),
    kwargs={"p": 3, "dim": -1},
    ref=lambda x: np.sum(np.abs(x) ** 3, axis=-1) ** (1 / 3),
    diff=True,
)
for d in ("float16",):
    case(
        f"norm/{SHORT[d]}",
        "Tensor.norm",
        t(rand(g, (4,), d, -1, 1)),
        ref=lambda x: np.sqrt(np.sum(x * x)),
        tol=3,
    )
