"""Shape ops: reshape, flatten, squeeze, permute, expand, repeat, cat, split, flip, roll, pad."""

from __future__ import annotations

import numpy as np

from ..build import case, rand, rng, t

g = rng(5)
X = rand(g, (2, 3, 4))
XI = rand(g, (2, 3), "int32")

case("reshape/f32", "Tensor.reshape", t(X), 4, 6, ref=lambda x, a, b: x.reshape(4, 6), diff=True)
case(
    "reshape/tuple_neg1",
    "Tensor.reshape",
    t(X),
    (-1, 4),
    ref=lambda x, s: x.reshape(-1, 4),
    diff=True,
)
case(
    "reshape/to_0d",
    "Tensor.reshape",
    t(np.array([5.0], "float32")),
    (),
    ref=lambda x, s: x.reshape(()),
)
case(
    "reshape/empty",
    "ember.reshape",
    t(np.zeros((0, 4), "float32")),
    (2, 0, 2),
    ref=lambda x, s: x.reshape(s),
)
case(
    "reshape/noncontig",
    "Tensor.reshape",
    t(rand(g, (3, 4)), "transpose"),
    -1,
    ref=lambda x, s: x.reshape(-1),
    diff=True,
)
case("reshape/i32", "Tensor.reshape", t(XI), (3, 2), ref=lambda x, s: x.reshape(s))
case("flatten/all", "Tensor.flatten", t(X), ref=lambda x: x.reshape(-1), diff=True)
case("flatten/start1", "ember.flatten", t(X), 1, ref=lambda x, s: x.reshape(2, -1), diff=True)
case("flatten/0d", "Tensor.flatten", t(np.float32(3.0)), ref=lambda x: x.reshape(1))
case(
    "flatten/start0_end1",
    "Tensor.flatten",
    t(X),
    kwargs={"start_dim": 0, "end_dim": 1},
    ref=lambda x: x.reshape(6, 4),
)
S = rand(g, (1, 3, 1, 2))
case("squeeze/all", "Tensor.squeeze", t(S), ref=np.squeeze, diff=True)
case("squeeze/dim", "Tensor.squeeze", t(S), 2, ref=lambda x, d: np.squeeze(x, d), diff=True)
case("squeeze/neg_dim", "ember.squeeze", t(S), -4, ref=lambda x, d: np.squeeze(x, d))
case("squeeze/non1_dim_noop", "Tensor.squeeze", t(S), 1, ref=lambda x, d: x)
case("squeeze/tuple", "Tensor.squeeze", t(S), (0, 2), ref=lambda x, d: np.squeeze(x, d))
case("unsqueeze/0", "Tensor.unsqueeze", t(XI), 0, ref=lambda x, d: np.expand_dims(x, d))
case("unsqueeze/neg", "ember.unsqueeze", t(X), -1, ref=lambda x, d: np.expand_dims(x, d), diff=True)
case(
    "unsqueeze/0d", "Tensor.unsqueeze", t(np.float32(1.0)), 0, ref=lambda x, d: np.expand_dims(x, d)
)
case("permute/f32", "Tensor.permute", t(X), 2, 0, 1, ref=lambda x, *p: x.transpose(p), diff=True)
case(
    "permute/tuple_neg",
    "ember.permute",
    t(X),
    (-1, 0, -2),
    ref=lambda x, p: x.transpose(2, 0, 1),
    diff=True,
)
case(
    "permute/i32_noncontig",
    "Tensor.permute",
    t(rand(g, (3, 4), "int32"), "transpose"),
    1,
    0,
    ref=lambda x, a, b: x.T,
)
case(
    "transpose/f32",
    "Tensor.transpose",
    t(X),
    0,
    2,
    ref=lambda x, a, b: np.swapaxes(x, 0, 2),
    diff=True,
)
case(
    "transpose/neg",
    "ember.transpose",
    t(X),
    -1,
    -2,
    ref=lambda x, a, b: np.swapaxes(x, -1, -2),
    diff=True,
)
case("T/2d", "Tensor.T", t(XI), ref=lambda x: x.T)
case("T/1d", "Tensor.T", t(rand(g, (3,))), ref=lambda x: x)
case(
    "expand/f32",
    "Tensor.expand",
    t(rand(g, (3, 1))),
    3,
    4,
    ref=lambda x, a, b: np.broadcast_to(x, (3, 4)),
    diff=True,
)
case(
    "expand/new_dims_neg1",
    "Tensor.expand",
    t(rand(g, (3, 1))),
    (2, -1, 5),
    ref=lambda x, s: np.broadcast_to(x, (2, 3, 5)),
    diff=True,
)
case(
    "expand/bool",
    "Tensor.expand",
    t(np.array([[True], [False]])),
    2,
    3,
    ref=lambda x, a, b: np.broadcast_to(x, (2, 3)),
)
case(
    "expand/then_contiguous",
    "Tensor.contiguous",
    t(rand(g, (1, 3)), expand=(2, 3)),
    ref=lambda x: x,
)
case(
    "broadcast_to/f32",
    "ember.broadcast_to",
    t(rand(g, (3,))),
    (2, 3),
    ref=lambda x, s: np.broadcast_to(x, s),
    diff=True,
)
case(
    "broadcast_to/0d",
    "ember.broadcast_to",
    t(np.float32(2.0)),
    (2, 2),
    ref=lambda x, s: np.broadcast_to(x, s),
)
case(
    "repeat/f32",
    "Tensor.repeat",
    t(rand(g, (2, 3))),
    2,
    1,
    ref=lambda x, a, b: np.tile(x, (a, b)),
    diff=True,
)
case(
    "repeat/new_dims",
    "Tensor.repeat",
    t(rand(g, (3,), "int32")),
    (2, 2),
    ref=lambda x, r: np.tile(x, r),
)
case("tile/f32", "ember.tile", t(rand(g, (2, 3))), (2,), ref=lambda x, r: np.tile(x, r), diff=True)
case("tile/more_dims", "Tensor.tile", t(rand(g, (2,))), (3, 2), ref=lambda x, r: np.tile(x, r))

A, B = rand(g, (2, 3)), rand(g, (2, 3))
case(
    "cat/dim0",
    "ember.cat",
    [t(A), t(B), t(rand(g, (1, 3)))],
    ref=lambda xs: np.concatenate(xs),
    out="float32",
    diff=True,
)
case(
    "cat/dim-1",
    "ember.cat",
    [t(A), t(rand(g, (2, 2)))],
    -1,
    ref=lambda xs, d: np.concatenate(xs, d),
    out="float32",
    diff=True,
)
case(
    "cat/with_empty",
    "ember.cat",
    [t(A), t(np.zeros((0, 3), "float32"))],
    0,
    ref=lambda xs, d: np.concatenate(xs, d),
    out="float32",
)
case(
    "cat/i64",
    "ember.cat",
    [t(rand(g, (2,), "int64")), t(rand(g, (3,), "int64"))],
    ref=lambda xs: np.concatenate(xs),
    out="int64",
)
case(
    "cat/promote_i32_f32",
    "ember.cat",
    [t(rand(g, (2,), "int32")), t(rand(g, (2,)))],
    ref=lambda xs: np.concatenate(xs),
    out="float32",
)
case(
    "cat/noncontig",
    "ember.cat",
    [t(rand(g, (2, 3)), "transpose"), t(B)],
    kwargs={"dim": 0},
    ref=lambda xs: np.concatenate(xs),
    out="float32",
)
case(
    "stack/dim0", "ember.stack", [t(A), t(B)], ref=lambda xs: np.stack(xs), out="float32", diff=True
)
case(
    "stack/dim-1",
    "ember.stack",
    (t(A), t(B), t(A)),
    -1,
    ref=lambda xs, d: np.stack(xs, d),
    out="float32",
    diff=True,
)
case(
    "stack/0d",
    "ember.stack",
    [t(np.float32(1.0)), t(np.float32(2.0))],
    ref=lambda xs: np.stack(xs),
    out="float32",
)

V = rand(g, (7, 2))
case(
    "split/size",
    "Tensor.split",
    t(V),
    3,
    ref=lambda x, s: (x[0:3], x[3:6], x[6:]),
    multi=True,
    out="float32",
    diff=True,
)
case(
    "split/sizes_dim1",
    "ember.split",
    t(rand(g, (2, 5))),
    [2, 3],
    1,
    ref=lambda x, s, d: (x[:, :2], x[:, 2:]),
    multi=True,
    out="float32",
)
case(
    "split/neg_dim",
    "Tensor.split",
    t(rand(g, (2, 4))),
    2,
    -1,
    ref=lambda x, s, d: (x[:, :2], x[:, 2:]),
    multi=True,
    out="float32",
)
case(
    "chunk/even",
    "Tensor.chunk",
    t(rand(g, (6, 2))),
    3,
    ref=lambda x, n: (x[0:2], x[2:4], x[4:6]),
    multi=True,
    out="float32",
    diff=True,
)
case(
    "chunk/uneven",
    "ember.chunk",
    t(V),
    3,
    ref=lambda x, n: (x[0:3], x[3:6], x[6:7]),
    multi=True,
    out="float32",
)
case(
    "chunk/dim1",
    "Tensor.chunk",
    t(rand(g, (2, 5), "int32")),
    2,
    1,
    ref=lambda x, n, d: (x[:, :3], x[:, 3:]),
    multi=True,
    out="int32",
)

case("flip/dim0", "Tensor.flip", t(X), 0, ref=lambda x, d: np.flip(x, 0), diff=True)
case("flip/tuple", "ember.flip", t(X), (0, -1), ref=lambda x, d: np.flip(x, (0, 2)), diff=True)
case(
    "flip/i32_noncontig",
    "Tensor.flip",
    t(rand(g, (3, 4), "int32"), "transpose"),
    -1,
    ref=lambda x, d: np.flip(x, -1),
)
case("roll/flat", "ember.roll", t(rand(g, (2, 3))), 1, ref=lambda x, s: np.roll(x, 1), diff=True)
case("roll/dim", "Tensor.roll", t(X), 2, 1, ref=lambda x, s, d: np.roll(x, 2, 1), diff=True)
case("roll/neg_shift", "Tensor.roll", t(X), -1, -1, ref=lambda x, s, d: np.roll(x, -1, -1))
case(
    "roll/multi",
    "ember.roll",
    t(X),
    (1, -2),
    (0, 2),
    ref=lambda x, s, d: np.roll(x, (1, -2), (0, 2)),
    diff=True,
)

# pad (PyTorch order: last dim first, (left, right, top, bottom))
P1 = rand(g, (1, 2, 5))
P2 = rand(g, (1, 1, 4, 5))
for mode, np_mode in (("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge")):
    case(
        f"pad/{mode}/1d",
        "ember.pad",
        t(P1),
        (2, 1),
        kwargs={"mode": mode},
        ref=lambda x, p, m=np_mode: np.pad(x, ((0, 0), (0, 0), (2, 1)), mode=m),
        diff=True,
    )
    case(
        f"pad/{mode}/2d",
        "ember.pad",
        t(P2),
        (1, 2, 2, 1),
        kwargs={"mode": mode},
        ref=lambda x, p, m=np_mode: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode=m),
        diff=True,
    )
case(
    "pad/constant_value",
    "ember.pad",
    t(rand(g, (2, 3))),
    (1, 1),
    kwargs={"value": -5.0},
    ref=lambda x, p: np.pad(x, ((0, 0), (1, 1)), constant_values=-5.0),
)
case(
    "pad/constant_i32",
    "ember.pad",
    t(rand(g, (2, 3), "int32")),
    (0, 2, 1, 0),
    ref=lambda x, p: np.pad(x, ((1, 0), (0, 2))),
)
case(
    "pad/F_alias",
    "F.pad",
    t(P1),
    (1, 1),
    kwargs={"mode": "replicate"},
    ref=lambda x, p: np.pad(x, ((0, 0), (0, 0), (1, 1)), mode="edge"),
)
