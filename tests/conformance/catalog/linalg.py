"""matmul (batched, broadcast, 1-d), dot, outer, tril, triu, einsum."""

from __future__ import annotations

import numpy as np

from ..build import SHORT, case, rand, rng, t

g = rng(4)

MATMUL = [
    ("2d", (3, 4), (4, 5)),
    ("batched", (2, 3, 4), (2, 4, 5)),
    ("broadcast_batch", (2, 1, 3, 4), (3, 4, 2)),
    ("vec_mat", (4,), (4, 3)),
    ("mat_vec", (3, 4), (4,)),
    ("vec_vec", (4,), (4,)),
    ("batch_vec", (2, 3, 4), (4,)),
    ("empty_inner", (2, 0), (0, 3)),
]
for name, sa, sb in MATMUL:
    case(
        f"matmul/f32/{name}",
        "operator.matmul",
        t(rand(g, sa)),
        t(rand(g, sb)),
        ref=np.matmul,
        diff=True,
        tol=3,
    )
for d in ("float64", "float16"):
    case(
        f"matmul/{SHORT[d]}",
        "ember.matmul",
        t(rand(g, (3, 4), d, -1, 1)),
        t(rand(g, (4, 2), d, -1, 1)),
        ref=np.matmul,
        diff=d == "float64",
        tol=3,
    )
case(
    "matmul/i32",
    "ember.matmul",
    t(rand(g, (2, 3), "int32", -5, 5)),
    t(rand(g, (3, 2), "int32", -5, 5)),
    ref=np.matmul,
)
case(
    "matmul/i64",
    "operator.matmul",
    t(rand(g, (2, 3), "int64", -5, 5)),
    t(rand(g, (3,), "int64", -5, 5)),
    ref=np.matmul,
)
case(
    "matmul/f32/transposed",
    "Tensor.matmul",
    t(rand(g, (3, 4)), "transpose"),
    t(rand(g, (4, 2))),
    ref=np.matmul,
    diff=True,
    tol=3,
)
case(
    "matmul/f32/sliced",
    "operator.matmul",
    t(rand(g, (2, 3))),
    t(rand(g, (3, 2)), "slice"),
    ref=np.matmul,
    diff=True,
    tol=3,
)
case("dot/f32", "ember.dot", t(rand(g, (5,))), t(rand(g, (5,))), ref=np.dot, diff=True, tol=3)
case("dot/i64", "Tensor.dot", t(rand(g, (4,), "int64")), t(rand(g, (4,), "int64")), ref=np.dot)
case("outer/f32", "ember.outer", t(rand(g, (3,))), t(rand(g, (4,))), ref=np.outer, diff=True)
case(
    "outer/i32", "Tensor.outer", t(rand(g, (2,), "int32")), t(rand(g, (3,), "int32")), ref=np.outer
)

M = rand(g, (4, 5))
for name, fn in (("tril", np.tril), ("triu", np.triu)):
    for k in (0, 1, -1):
        case(
            f"{name}/f32/k{k}",
            f"ember.{name}",
            t(M),
            kwargs={"diagonal": k} if k else {},
            ref=lambda x, fn=fn, k=k: fn(x, k),
            diff=True,
        )
    case(f"{name}/i32/batched", f"Tensor.{name}", t(rand(g, (2, 3, 3), "int32")), ref=fn)
    case(
        f"{name}/bool",
        f"Tensor.{name}",
        t(np.ones((3, 3), bool)),
        1,
        ref=lambda x, k, fn=fn: fn(x, k),
        out="bool",
    )

EINSUM = [
    ("ij,jk->ik", (3, 4), (4, 2)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 2)),
    ("i,i->", (5,), (5,)),
    ("i,j->ij", (3,), (2,)),
    ("ij->ji", (3, 4), None),
    ("ij->", (3, 4), None),
    ("ii->i", (3, 3), None),
    ("bhqd,bhkd->bhqk", (1, 2, 3, 4), (1, 2, 5, 4)),
    ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 3)),
]
for eq, sa, sb in EINSUM:
    ops = (t(rand(g, sa)),) + ((t(rand(g, sb)),) if sb else ())
    case(
        f"einsum/{eq}",
        "ember.einsum",
        eq,
        *ops,
        ref=lambda e, *xs: np.einsum(e, *xs),
        out="float32",
        diff=True,
        grad=tuple(range(1, len(ops) + 1)),
        tol=3,
    )
case(
    "einsum/list_operands",
    "ember.einsum",
    "ij,jk->ik",
    [t(rand(g, (2, 3))), t(rand(g, (3, 2)))],
    ref=lambda e, xs: np.einsum(e, *xs),
    out="float32",
    tol=3,
)
