"""Indexing (__getitem__/__setitem__), gather/scatter, masks, sorting, unique, nonzero, one_hot."""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t

g = rng(6)
X = rand(g, (3, 4, 5))
XI = rand(g, (4, 6), "int32", -50, 50)
I64 = "int64"


def _idx(*v):
    return t(np.array(v, I64))


GETITEM = [
    ("int", 1),
    ("neg_int", -1),
    ("int_int", (2, -3)),
    ("int_int_int_0d", (0, 1, 2)),
    ("slice", slice(1, 3)),
    ("slice_step", (slice(None), slice(None, None, 2))),
    ("slice_step_offset", (slice(None), slice(1, None, 2), slice(0, 5, 3))),
    ("neg_slice", (slice(-2, None), slice(None, -1))),
    ("slice_clipped", slice(1, 100)),
    ("slice_empty", slice(2, 2)),
    ("ellipsis_int", (Ellipsis, 1)),
    ("ellipsis_slice", (0, Ellipsis, slice(None, None, 2))),
    ("none", (None, 1)),
    ("none_middle", (slice(None), None, 0)),
    ("int_slice_none", (1, slice(None, 2), None)),
]
for name, key in GETITEM:
    case(
        f"getitem/{name}",
        "operator.getitem",
        t(X),
        key,
        ref=lambda x, k: x[k],
        diff=True,
        grad=(0,),
    )
case(
    "getitem/i32_slice_step",
    "operator.getitem",
    t(XI),
    (slice(None, None, 3), slice(1, None, 2)),
    ref=lambda x, k: x[k],
)
case(
    "getitem/noncontig",
    "operator.getitem",
    t(rand(g, (4, 3)), "transpose"),
    (slice(1, None), 0),
    ref=lambda x, k: x[k],
)
case(
    "getitem/bool_mask",
    "operator.getitem",
    t(X),
    t(X > 0.5),
    ref=lambda x, k: x[k],
    diff=True,
    grad=(0,),
)
case(
    "getitem/bool_mask_rows",
    "operator.getitem",
    t(XI),
    t(np.array([True, False, True, True])),
    ref=lambda x, k: x[k],
)
case(
    "getitem/int_tensor",
    "operator.getitem",
    t(X),
    _idx(2, 0, 2),
    ref=lambda x, k: x[k],
    diff=True,
    grad=(0,),
)
case("getitem/int_tensor_neg", "operator.getitem", t(XI), _idx(-1, 0), ref=lambda x, k: x[k])
case(
    "getitem/int_tensor_2d",
    "operator.getitem",
    t(XI),
    t(np.array([[0, 1], [3, 2]], I64)),
    ref=lambda x, k: x[k],
)
case(
    "getitem/slice_then_tensor",
    "operator.getitem",
    t(X),
    (slice(None), _idx(3, 1)),
    ref=lambda x, k: x[k],
    diff=True,
    grad=(0,),
)
case(
    "getitem/two_tensors",
    "operator.getitem",
    t(XI),
    (_idx(0, 2, 3), _idx(5, 0, 1)),
    ref=lambda x, k: x[k],
)
case("getitem/list", "operator.getitem", t(XI), [0, 3], ref=lambda x, k: x[k])
case("getitem/0d_tensor_int", "operator.getitem", t(XI), t(np.array(2, I64)), ref=lambda x, k: x[k])
case("getitem/0d_ellipsis", "operator.getitem", t(np.float32(4.0)), Ellipsis, ref=lambda x, k: x[k])


def _set(x, k, v):
    y = x.copy()
    y[k] = v
    return y


SETITEM = [
    ("int_scalar", 1, 5.0),
    ("neg_int", -1, -2.0),
    ("slice_step", (slice(None), slice(None, None, 2)), 0.0),
    ("ellipsis", (Ellipsis, 0), 7.0),
]
for name, key, val in SETITEM:
    case(f"setitem/{name}", "setitem", t(X), key, val, ref=lambda x, k, v: _set(x, k, v))
case(
    "setitem/tensor_value_broadcast",
    "setitem",
    t(X),
    (slice(None), 1),
    t(rand(g, (5,))),
    ref=lambda x, k, v: _set(x, k, v),
)
case("setitem/bool_mask", "setitem", t(XI), t(XI > 0), 0, ref=lambda x, k, v: _set(x, k, v))
case(
    "setitem/int_tensor",
    "setitem",
    t(XI),
    _idx(0, 2),
    t(rand(g, (6,), "int32")),
    ref=lambda x, k, v: _set(x, k, v),
)
case("setitem/cast_value", "setitem", t(XI), (0, 0), 2.7, ref=lambda x, k, v: _set(x, k, 2))
case(
    "setitem/f16", "setitem", t(rand(g, (3,), "float16")), 1, 0.5, ref=lambda x, k, v: _set(x, k, v)
)


# gather / scatter / index_select / take_along_dim
G = rand(g, (3, 4))
GI = np.array([[0, 3], [2, 2], [1, 0]], I64)
case(
    "gather/dim1",
    "Tensor.gather",
    t(G),
    1,
    t(GI),
    ref=lambda x, d, i: np.take_along_axis(x, i, 1),
    diff=True,
    grad=(0,),
)
case(
    "gather/dim0",
    "ember.gather",
    t(G),
    0,
    t(np.array([[2, 0, 1, 1]], I64)),
    ref=lambda x, d, i: np.take_along_axis(x, i, 0),
    diff=True,
    grad=(0,),
)
case(
    "gather/neg_dim_i32",
    "Tensor.gather",
    t(rand(g, (2, 3), "int32")),
    -1,
    t(np.array([[2], [0]], I64)),
    ref=lambda x, d, i: np.take_along_axis(x, i, -1),
)


def _scatter(x, dim, idx, src, add=False):
    y = x.copy()
    src = np.broadcast_to(src, idx.shape) if np.ndim(src) == 0 else src
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        if add:
            y[tuple(tgt)] += src[pos]
        else:
            y[tuple(tgt)] = src[pos]
    return y


SI = np.array([[3, 0], [1, 2], [0, 1]], I64)  # unique per row: scatter is well defined
case(
    "scatter/dim1",
    "Tensor.scatter",
    t(G),
    1,
    t(SI),
    t(rand(g, (3, 2))),
    ref=lambda x, d, i, s: _scatter(x, 1, i, s),
    diff=True,
    grad=(0, 3),
)
case(
    "scatter/dim0",
    "ember.scatter",
    t(G),
    0,
    t(np.array([[2, 0, 1, 0]], I64)),
    t(rand(g, (1, 4))),
    ref=lambda x, d, i, s: _scatter(x, 0, i, s),
)
case(
    "scatter/scalar_src",
    "Tensor.scatter",
    t(G),
    1,
    t(SI),
    kwargs={"value": -1.0},
    ref=lambda x, d, i: _scatter(x, 1, i, np.float64(-1.0)),
)
DI = np.array([[0, 0, 1], [2, 2, 2]], I64)  # duplicates: scatter_add sums them
case(
    "scatter_add/dup",
    "Tensor.scatter_add",
    t(rand(g, (2, 3))),
    1,
    t(DI),
    t(rand(g, (2, 3))),
    ref=lambda x, d, i, s: _scatter(x, 1, i, s, add=True),
    diff=True,
    grad=(0, 3),
)
case(
    "scatter_add/i64",
    "ember.scatter_add",
    t(np.zeros(4, I64)),
    0,
    _idx(1, 1, 3, 1),
    t(np.array([1, 2, 3, 4], I64)),
    ref=lambda x, d, i, s: _scatter(x, 0, i, s, add=True),
)
case(
    "index_select/dim0",
    "Tensor.index_select",
    t(G),
    0,
    _idx(2, 0, 2),
    ref=lambda x, d, i: np.take(x, i, 0),
    diff=True,
    grad=(0,),
)
case(
    "index_select/dim-1",
    "ember.index_select",
    t(XI),
    -1,
    _idx(5, 1),
    ref=lambda x, d, i: np.take(x, i, -1),
)
case(
    "index_select/empty_index",
    "Tensor.index_select",
    t(G),
    1,
    t(np.zeros(0, I64)),
    ref=lambda x, d, i: np.take(x, i, 1),
)
case(
    "take_along_dim/dim1",
    "ember.take_along_dim",
    t(G),
    t(np.argsort(G, 1)),
    1,
    ref=lambda x, i, d: np.take_along_axis(x, i, 1),
    diff=True,
    grad=(0,),
)
case(
    "take_along_dim/broadcast",
    "Tensor.take_along_dim",
    t(G),
    t(np.array([[1], [0], [3]], I64)),
    kwargs={"dim": 1},
    ref=lambda x, i: np.take_along_axis(x, i, 1),
)

# masked_fill
case(
    "masked_fill/f32",
    "Tensor.masked_fill",
    t(G),
    t(G > 0),
    0.0,
    ref=lambda x, m, v: np.where(m, v, x),
    diff=True,
    grad=(0,),
)
case(
    "masked_fill/broadcast_mask",
    "ember.masked_fill",
    t(G),
    t(np.array([True, False, False, True])),
    float("-inf"),
    ref=lambda x, m, v: np.where(m, v, x),
)
case(
    "masked_fill/i32",
    "Tensor.masked_fill",
    t(XI),
    t(XI < 0),
    9,
    ref=lambda x, m, v: np.where(m, v, x),
)

# sort / argsort / topk (distinct values: indices are well defined)
SX = g.permutation(24).reshape(4, 6).astype("float32") - 10


def _sort(x, dim, desc):
    i = np.argsort(-x if desc else x, axis=dim, kind="stable")
    return np.take_along_axis(x, i, dim), i


case(
    "sort/default",
    "Tensor.sort",
    t(SX),
    ref=lambda x: _sort(x, -1, False),
    multi=True,
    fields=("values", "indices"),
    out=("float32", "int64"),
    diff=True,
)
case(
    "sort/dim0_desc",
    "Tensor.sort",
    t(SX),
    0,
    True,
    ref=lambda x, d, s: _sort(x, 0, True),
    multi=True,
    fields=("values", "indices"),
    out=("float32", "int64"),
    diff=True,
)
case(
    "sort/kw",
    "ember.sort",
    t(SX),
    kwargs={"dim": 1, "descending": True},
    ref=lambda x: _sort(x, 1, True),
    multi=True,
    fields=("values", "indices"),
    out=("float32", "int64"),
)
case(
    "sort/i32",
    "Tensor.sort",
    t(np.array([5, -3, 9, 0], "int32")),
    ref=lambda x: _sort(x, -1, False),
    multi=True,
    out=("int32", "int64"),
)
case(
    "sort/nan_last",
    "Tensor.sort",
    t(np.array([2.0, float("nan"), -1.0], "float32")),
    ref=lambda x: (np.array([-1.0, 2.0, np.nan]), np.array([2, 0, 1])),
    multi=True,
    out=("float32", "int64"),
)
case("argsort/default", "Tensor.argsort", t(SX), ref=lambda x: _sort(x, -1, False)[1], out="int64")
case(
    "argsort/dim0_desc",
    "ember.argsort",
    t(SX),
    0,
    kwargs={"descending": True},
    ref=lambda x, d: _sort(x, 0, True)[1],
    out="int64",
)


def _topk(x, k, dim=-1, largest=True):
    v, i = _sort(x, dim, largest)
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


case(
    "topk/default",
    "Tensor.topk",
    t(SX),
    2,
    ref=lambda x, k: _topk(x, 2),
    multi=True,
    fields=("values", "indices"),
    out=("float32", "int64"),
    diff=True,
)
case(
    "topk/dim0",
    "Tensor.topk",
    t(SX),
    3,
    0,
    ref=lambda x, k, d: _topk(x, 3, 0),
    multi=True,
    fields=("values", "indices"),
    out=("float32", "int64"),
    diff=True,
)
case(
    "topk/smallest",
    "ember.topk",
    t(SX),
    2,
    kwargs={"dim": 1, "largest": False},
    ref=lambda x, k: _topk(x, 2, 1, False),
    multi=True,
    fields=("values", "indices"),
    out=("float32", "int64"),
)
case(
    "topk/i64",
    "Tensor.topk",
    t(np.array([4, 9, -2, 7], I64)),
    1,
    ref=lambda x, k: _topk(x, 1),
    multi=True,
    out=("int64", "int64"),
)

# unique
U = np.array([3, 1, 3, 2, 1, 3], I64)
case("unique/i64", "ember.unique", t(U), ref=np.unique, out="int64")
case(
    "unique/counts",
    "ember.unique",
    t(U),
    kwargs={"return_counts": True},
    ref=lambda x: np.unique(x, return_counts=True),
    multi=True,
    out=("int64", "int64"),
)
case(
    "unique/inverse",
    "ember.unique",
    t(U.reshape(2, 3)),
    kwargs={"return_inverse": True},
    ref=lambda x: (np.unique(x), np.unique(x, return_inverse=True)[1].reshape(2, 3)),
    multi=True,
    out=("int64", "int64"),
)
case("unique/f32", "Tensor.unique", t(np.array([0.5, -1.0, 0.5, 2.0], "float32")), ref=np.unique)
case("unique/bool", "ember.unique", t(np.array([True, True, False])), ref=np.unique, out="bool")

# nonzero
case(
    "nonzero/2d",
    "ember.nonzero",
    t(np.array([[0, 1, 0], [2, 0, 3]], "int32")),
    ref=np.argwhere,
    out="int64",
)
case(
    "nonzero/f32",
    "Tensor.nonzero",
    t(np.array([0.0, -1.5, float("nan"), 0.0], "float32")),
    ref=np.argwhere,
    out="int64",
)
case("nonzero/bool_none", "Tensor.nonzero", t(np.zeros((2, 2), bool)), ref=np.argwhere, out="int64")
case(
    "nonzero/as_tuple",
    "ember.nonzero",
    t(np.array([[0, 1], [1, 1]], "int32")),
    kwargs={"as_tuple": True},
    ref=lambda x: np.nonzero(x),
    multi=True,
    out="int64",
)

# one_hot
case(
    "one_hot/classes",
    "F.one_hot",
    t(np.array([0, 2, 1], I64)),
    4,
    ref=lambda x, n: np.eye(n, dtype=np.int64)[x],
    out="int64",
)
case(
    "one_hot/infer",
    "F.one_hot",
    t(np.array([[1, 0], [2, 2]], I64)),
    ref=lambda x: np.eye(3, dtype=np.int64)[x],
    out="int64",
)
