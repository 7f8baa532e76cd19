"""Creation, casting, linear algebra, sorting and the rest of the tensor ops."""

from __future__ import annotations

import ember

from .._lowbit import NARROW, round_to
from .._types import constant_to_tensor, numpy_to_tensor, onnx_dtype
from . import op
from ._util import axis as _axis
from ._util import const, ints, scalar


@op("Constant")
def constant(ctx, value=None, value_float=None, value_floats=None, value_int=None,
             value_ints=None, sparse_value=None):
    if value is not None or sparse_value is not None:  # the reader densifies sparse values
        return constant_to_tensor(value if value is not None else sparse_value, ctx.backend,
                                  "Constant")
    if value_float is not None:
        return const(ctx, value_float, ember.float32)
    if value_floats is not None:
        return const(ctx, value_floats, ember.float32)
    if value_int is not None:
        return const(ctx, value_int, ember.int64)
    if value_ints is not None:
        return const(ctx, value_ints, ember.int64)
    raise ember.UnsupportedOpError("Constant: only tensor/float/int values are supported")


@op("ConstantOfShape")
def constant_of_shape(ctx, shape, value=None):
    if value is None:
        fill, dtype = 0.0, ember.float32
    else:
        t = numpy_to_tensor(value, ctx.backend, "ConstantOfShape")
        fill, dtype = t.reshape(-1).tolist()[0], t.dtype
    return ember.full(ints(shape), fill, dtype=dtype, backend=ctx.backend)


def _cast(x, dtype):
    if dtype == x.dtype:
        return x
    if dtype.is_int and x.dtype.is_float:
        # NaN/inf have no integer value; numpy gives INT_MIN, keep that
        x = ember.trunc(x)
    return x.astype(dtype)


@op("Cast")
def cast(ctx, x, to, saturate=1, round_mode="up"):
    if to in NARROW:
        return round_to(x, to, bool(saturate), round_mode)
    return _cast(x, onnx_dtype(to, "Cast"))


@op("CastLike")
def cast_like(ctx, x, target, saturate=1, round_mode="up"):
    return _cast(x, target.dtype)


# bits of each ONNX element type BitCast reads or writes
_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64}


@op("BitCast")
def bitcast(ctx, x, to):
    """The same bits read as type ``to`` (same width). Widened integers (uint16 held as
    int32...) are first narrowed back to their own width."""
    import numpy as np
    from onnx.helper import tensor_dtype_to_np_dtype

    if to not in _BITS:
        raise ember.UnsupportedOpError(f"BitCast: element type {to} not supported; "
                                       f"supported: {sorted(_BITS)}")
    a = np.asarray(x.numpy())
    if a.dtype.kind in "iub":
        a = a.astype(f"uint{_BITS[to]}")  # integers keep their low bits: the true width
    return numpy_to_tensor(a.view(tensor_dtype_to_np_dtype(to)), ctx.backend, "BitCast")


@op("Range")
def range_(ctx, start, limit, delta):
    s, lim, d = scalar(start), scalar(limit), scalar(delta)
    n = max(int(-(-(lim - s) // d)), 0) if isinstance(d, int) else max(
        int(__import__("math").ceil((lim - s) / d)), 0)
    return ember.arange(n, dtype=start.dtype, backend=ctx.backend) * d + s if n else (
        ember.zeros(0, dtype=start.dtype, backend=ctx.backend))


@op("OneHot")
def one_hot(ctx, indices, depth, values, axis=-1):
    d = int(scalar(depth))
    idx = indices.astype(ember.int64)
    idx = ember.where(idx < 0, idx + d, idx)
    a = _axis(axis, indices.ndim + 1)
    shape = [1] * (indices.ndim + 1)
    shape[a] = d
    hot = ember.arange(d, dtype=ember.int64, backend=ctx.backend).reshape(shape) == idx.unsqueeze(a)
    off, on = values[0], values[1]
    return ember.where(hot, on, off)


@op("EyeLike")
def eye_like(ctx, x, dtype=None, k=0):
    n, m = x.shape
    d = onnx_dtype(dtype) if dtype is not None else x.dtype
    r = ember.arange(n, dtype=ember.int64, backend=ctx.backend).reshape(n, 1)
    c = ember.arange(m, dtype=ember.int64, backend=ctx.backend).reshape(1, m)
    return (c - r == k).astype(d)


@op("NonZero")
def non_zero(ctx, x):
    nz = ember.nonzero(x)  # (count, ndim)
    return nz.permute(1, 0) if nz.ndim == 2 else nz.reshape(x.ndim, -1)


@op("TopK")
def top_k(ctx, x, k_in=None, axis=-1, largest=1, sorted=1, k=None):
    kk = int(scalar(k_in)) if k_in is not None else k
    a = _axis(axis, x.ndim)
    # a stable sort gives ONNX's tie rule: the lower index first
    order = ember.argsort(-x if largest else x, dim=a, stable=True) if x.dtype.is_signed else (
        ember.argsort(x, dim=a, descending=bool(largest), stable=True))
    idx = order[(slice(None),) * a + (slice(0, kk),)]
    return ember.gather(x, a, idx), idx


@op("Unique")
def unique(ctx, x, axis=None, sorted=1):
    if axis is None:
        flat = x.reshape(-1)
        u, inv, counts = ember.unique(flat, return_inverse=True, return_counts=True)
        n = flat.shape[0]
    else:
        a = _axis(axis, x.ndim)
        u, inv, counts = ember.unique(x, return_inverse=True, return_counts=True, dim=a)
        n = x.shape[a]
    nu = counts.shape[0]
    pos = ember.arange(n, dtype=ember.int64, backend=ctx.backend)
    hit = inv.reshape(1, n) == ember.arange(nu, dtype=ember.int64, backend=ctx.backend).reshape(
        nu, 1)
    first = ember.argmax(hit.astype(ember.int32), dim=1)
    del pos
    if not sorted:
        order = ember.argsort(first)
        rank = ember.argsort(order)
        dim = 0 if axis is None else _axis(axis, x.ndim)
        u = ember.index_select(u, dim, order)
        first, counts, inv = first[order], counts[order], rank[inv.reshape(-1)]
    return u, first, inv.reshape(-1), counts


@op("CumSum")
def cum_sum(ctx, x, axis, exclusive=0, reverse=0):
    a = _axis(int(scalar(axis)), x.ndim)
    if reverse:
        x = ember.flip(x, [a])
    out = ember.cumsum(x, a).astype(x.dtype)
    if exclusive:
        out = out - x
    return ember.flip(out, [a]) if reverse else out


@op("CumProd")
def cum_prod(ctx, x, axis, exclusive=0, reverse=0):
    a = _axis(int(scalar(axis)), x.ndim)
    if reverse:
        x = ember.flip(x, [a])
    if exclusive:
        ones = ember.ones_like(x[(slice(None),) * a + (slice(0, 1),)])
        x = ember.cat([ones, x[(slice(None),) * a + (slice(0, x.shape[a] - 1),)]], dim=a)
    out = ember.cumprod(x, a).astype(x.dtype)
    return ember.flip(out, [a]) if reverse else out


@op("Einsum")
def einsum(ctx, *xs, equation):
    return ember.einsum(equation.replace(" ", ""), *xs)


@op("MatMul")
def matmul(ctx, a, b):
    return ember.matmul(a, b)


@op("Gemm")
def gemm(ctx, a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
    a = a.permute(1, 0) if transA else a
    b = b.permute(1, 0) if transB else b
    y = ember.matmul(a, b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c).astype(y.dtype)
    return y


@op("Det")
def det(ctx, x):
    # LU without pivoting breaks on zero pivots; Gaussian elimination with partial pivoting
    # written on Python floats per matrix (det inputs are small)
    batch = x.shape[:-2]
    n = x.shape[-1]
    mats = x.reshape(-1, n, n).tolist()
    out = []
    for m in mats:
        m = [row[:] for row in m]
        d = 1.0
        for c in range(n):
            p = max(range(c, n), key=lambda r: abs(m[r][c]))
            if m[p][c] == 0:
                d = 0.0
                break
            if p != c:
                m[c], m[p] = m[p], m[c]
                d = -d
            d *= m[c][c]
            for r in range(c + 1, n):
                f = m[r][c] / m[c][c]
                m[r] = [a - f * b for a, b in zip(m[r], m[c])]
        out.append(d)
    return const(ctx, out, x.dtype).reshape(list(batch))


@op("Dropout")
def dropout(ctx, x, ratio=None, training_mode=None, seed=None):
    return x, ember.ones_like(x, dtype=ember.bool)


@op("CenterCropPad")
def center_crop_pad(ctx, x, shape, axes=None):
    target = ints(shape)
    ax = [_axis(a, x.ndim) for a in axes] if axes is not None else list(range(x.ndim))
    for a, t in zip(ax, target):
        n = x.shape[a]
        if t < n:
            s = (n - t) // 2
            x = x[(slice(None),) * a + (slice(s, s + t),)]
        elif t > n:
            lo = (t - n) // 2
            pad = [0, 0] * (x.ndim - 1 - a) + [lo, t - n - lo]
            x = ember.pad(x, pad)
    return x


@op("RandomUniformLike", "RandomNormalLike")
def random_like(ctx, x, dtype=None, high=1.0, low=0.0, mean=0.0, scale=1.0, seed=None):
    d = onnx_dtype(dtype) if dtype is not None else x.dtype
    if ctx.op_type == "RandomUniformLike":
        return ember.uniform(low, high, x.shape, dtype=d, backend=ctx.backend)
    return ember.normal(mean, scale, x.shape, dtype=d, backend=ctx.backend)


@op("RandomUniform", "RandomNormal")
def random(ctx, dtype=1, high=1.0, low=0.0, mean=0.0, scale=1.0, seed=None, shape=()):
    d = onnx_dtype(dtype)
    if ctx.op_type == "RandomUniform":
        return ember.uniform(low, high, tuple(shape), dtype=d, backend=ctx.backend)
    return ember.normal(mean, scale, tuple(shape), dtype=d, backend=ctx.backend)
