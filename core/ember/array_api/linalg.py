"""The standard's ``linalg`` extension: ``xp.linalg``.

Products, norms, ``cross``, ``diagonal``, ``trace``, ``matrix_power`` run as backend ops;
the factorisations (``inv``, ``solve``, ``det``, ``slogdet``, ``cholesky``, ``qr``, ``eigh``,
``svd`` and what is built on them) run on the host in double precision
(:mod:`ember.array_api._host_linalg`), over any batch dims, and come back in the input's
dtype on its backend.

>>> import ember.array_api as xp
>>> a = xp.asarray([[4.0, 2.0], [2.0, 3.0]])
>>> xp.linalg.solve(a, xp.asarray([[2.0], [1.0]])).tolist()
[[0.5], [0.0]]
>>> round(float(xp.linalg.det(a)), 5), xp.linalg.vector_norm(xp.asarray([3.0, 4.0])).item()
(8.0, 5.0)
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .. import dtype as dt
from .. import ops
from ..errors import DTypeError
from ..shape import normalize_dim
from ..tensor import Tensor
from ..tensordata import TensorData
from . import _host_linalg as host
from ._common import check_array, require
from ._statistical import _axes
from ._statistical import sum as _sum


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    return ops.matmul(check_array(x1, "matmul"), check_array(x2, "matmul"))


def matrix_transpose(x: Tensor, /) -> Tensor:
    x = check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: expected at least 2 dims, got shape {x.shape}")
    return x.mT


def tensordot(x1: Tensor, x2: Tensor, /, *, axes=2) -> Tensor:
    if isinstance(axes, int):
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1 = [normalize_dim(a, x1.ndim, "tensordot") for a in axes[0]]
        a2 = [normalize_dim(a, x2.ndim, "tensordot") for a in axes[1]]
    free1 = [d for d in range(x1.ndim) if d not in a1]
    free2 = [d for d in range(x2.ndim) if d not in a2]
    k = math.prod(x1.shape[d] for d in a1)
    left = x1.permute(tuple(free1 + a1)).reshape(math.prod(x1.shape[d] for d in free1), k)
    right = x2.permute(tuple(a2 + free2)).reshape(k, math.prod(x2.shape[d] for d in free2))
    out = ops.matmul(left, right)
    return out.reshape(tuple(x1.shape[d] for d in free1) + tuple(x2.shape[d] for d in free2))


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    a, b = ops.broadcast_tensors(x1, x2)
    return ops.sum(a * b, dim=normalize_dim(axis, a.ndim, "vecdot"))


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    return ops.outer(x1, x2)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    a, b = ops.broadcast_tensors(x1, x2)
    axis = normalize_dim(axis, a.ndim, "cross")
    if a.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have size 3, has {a.shape[axis]}")
    ai = [ops.narrow(a, axis, i, 1) for i in range(3)]
    bi = [ops.narrow(b, axis, i, 1) for i in range(3)]
    parts = [ai[(i + 1) % 3] * bi[(i + 2) % 3] - ai[(i + 2) % 3] * bi[(i + 1) % 3]
             for i in range(3)]
    return ops.cat(parts, axis)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    return ops.diagonal(check_array(x, "diagonal"), offset, -2, -1)


def trace(x: Tensor, /, *, offset: int = 0, dtype=None) -> Tensor:
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vector_norm(x: Tensor, /, *, axis=None, keepdims: bool = False, ord=2) -> Tensor:
    x = check_array(x, "vector_norm")
    require(x, "vector_norm", "f")
    axes = _axes(x, axis)
    a = ops.abs(x)
    if x.ndim == 0:
        a, axes = a.reshape(1), (0,)
    if ord == math.inf:
        return ops.amax(a, dim=axes, keepdim=keepdims)
    if ord == -math.inf:
        return ops.amin(a, dim=axes, keepdim=keepdims)
    if ord == 0:
        return ops.sum((a != 0).astype(x.dtype), dim=axes, keepdim=keepdims)
    if ord == 1:
        return ops.sum(a, dim=axes, keepdim=keepdims)
    if ord == 2:
        # scaled by the largest magnitude, so squares neither overflow nor underflow
        scale = ops.amax(a, dim=axes, keepdim=True)
        safe = ops.where(scale == 0, 1.0, scale)
        safe = ops.where(ops.isinf(safe), 1.0, safe)
        out = ops.sqrt(ops.sum(ops.square(a / safe), dim=axes, keepdim=True)) * safe
        out = ops.where(ops.isinf(scale), scale, out)
        return out if keepdims else out.reshape(
            tuple(s for i, s in enumerate(out.shape) if i not in axes))
    return ops.sum(a ** ord, dim=axes, keepdim=keepdims) ** (1.0 / ord)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord="fro") -> Tensor:
    x = check_array(x, "matrix_norm")
    require(x, "matrix_norm", "f")
    a = ops.abs(x)
    if ord == "fro":
        out = vector_norm(x, axis=(-2, -1), keepdims=keepdims)
        return out
    if ord in (1, -1, math.inf, -math.inf):
        inner, outer_axis = (-2, -1) if ord in (1, -1) else (-1, -2)
        sums = ops.sum(a, dim=inner, keepdim=True)
        pick = ops.amax if ord > 0 else ops.amin
        out = pick(sums, dim=outer_axis, keepdim=True)
    elif ord in (2, -2, "nuc"):
        s = svdvals(x)
        out = ops.sum(s, dim=-1) if ord == "nuc" else (s[..., 0] if ord == 2 else s[..., -1])
        out = out.reshape(out.shape + (1, 1))
    else:
        raise ValueError(f"matrix_norm: unknown ord {ord!r}; valid: 'fro', 'nuc', ±1, ±2, ±inf")
    return out if keepdims else out.reshape(out.shape[:-2])


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    x = check_array(x, "matrix_power")
    if n < 0:
        x, n = inv(x), -n
    result = ops.zeros_like(x) + ops.eye(x.shape[-1], dtype=x.dtype, backend=x.backend)
    base = x
    while n:
        if n & 1:
            result = ops.matmul(result, base)
        base = ops.matmul(base, base)
        n >>= 1
    return result


# ------------------------------------------------------------------ host factorisations
def _matrices(x: Tensor, op: str):
    """Batch shape and the list of matrices (lists of float rows) of a float array."""
    x = check_array(x, op)
    if not x.dtype.is_float:
        raise DTypeError(f"{op}: expected a real floating array, got {x.dtype}")
    if x.ndim < 2:
        raise ValueError(f"{op}: expected at least 2 dims, got shape {x.shape}")
    *batch, m, n = x.shape
    flat = x.to_data().values()
    mats = [[flat[b * m * n + i * n: b * m * n + (i + 1) * n] for i in range(m)]
            for b in range(math.prod(batch))]
    return tuple(batch), mats


def _square(x: Tensor, op: str):
    batch, mats = _matrices(x, op)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: expected square matrices, got shape {x.shape}")
    return batch, mats


def _put(values: list, shape: tuple, like: Tensor) -> Tensor:
    b = like.backend
    return Tensor(b.from_data(TensorData.from_values(values, shape, like.dtype)), b)


def _flatten(mats) -> list:
    return [v for m in mats for row in m for v in row]


def inv(x: Tensor, /) -> Tensor:
    batch, mats = _square(x, "inv")
    n = x.shape[-1]
    eye = [[float(i == j) for j in range(n)] for i in range(n)]
    out = []
    for m in mats:
        sol, singular = host.lu_solve(m, eye)
        if singular:
            raise ValueError("inv: the matrix is singular")
        out.append(sol)
    return _put(_flatten(out), x.shape, x)


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """``x1 @ out = x2``; a 1-d ``x2`` is one right-hand side vector."""
    vector = x2.ndim == 1
    rhs = x2.reshape(x2.shape + (1,)) if vector else x2
    batch = ops.broadcast_tensors(x1[..., 0, 0], rhs[..., 0, 0])[0].shape
    a = x1.broadcast_to(batch + x1.shape[-2:])
    b = rhs.broadcast_to(batch + rhs.shape[-2:]).astype(dt.promote_types(x1.dtype, x2.dtype))
    _, amats = _square(a, "solve")
    _, bmats = _matrices(b, "solve")
    out = []
    for am, bm in zip(amats, bmats):
        sol, singular = host.lu_solve(am, bm)
        if singular:
            raise ValueError("solve: x1 is singular")
        out.append(sol)
    res = _put(_flatten(out), b.shape, b)
    return res.reshape(res.shape[:-1]) if vector else res


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def slogdet(x: Tensor, /) -> SlogdetResult:
    batch, mats = _square(x, "slogdet")
    pairs = [host.slogdet(m) for m in mats]
    return SlogdetResult(_put([p[0] for p in pairs], batch, x), _put([p[1] for p in pairs], batch, x))


def det(x: Tensor, /) -> Tensor:
    batch, mats = _square(x, "det")
    vals = []
    for m in mats:
        sign, logabs = host.slogdet(m)
        vals.append(sign * math.exp(logabs) if sign == sign else math.nan)
    return _put(vals, batch, x)


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    batch, mats = _square(x, "cholesky")
    out = []
    for m in mats:
        f = host.cholesky(m, upper)
        if f is None:
            raise ValueError("cholesky: the matrix is not positive-definite")
        out.append(f)
    return _put(_flatten(out), x.shape, x)


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    batch, mats = _matrices(x, "qr")
    m, n = x.shape[-2:]
    if mode == "complete" and m > n:
        raise ValueError("qr: mode='complete' for tall matrices is not supported; use 'reduced'")
    k = min(m, n)
    qs, rs = zip(*(host.qr(a) for a in mats)) if mats else ((), ())
    return QRResult(_put(_flatten(qs), batch + (m, k), x), _put(_flatten(rs), batch + (k, n), x))


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def eigh(x: Tensor, /) -> EighResult:
    batch, mats = _square(x, "eigh")
    n = x.shape[-1]
    pairs = [host.jacobi_eigh(m) for m in mats]
    return EighResult(_put([v for p in pairs for v in p[0]], batch + (n,), x),
                      _put(_flatten([p[1] for p in pairs]), x.shape, x))


def eigvalsh(x: Tensor, /) -> Tensor:
    return eigh(x).eigenvalues


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """The reduced SVD (``full_matrices=True`` is answered with it only for square input)."""
    batch, mats = _matrices(x, "svd")
    m, n = x.shape[-2:]
    if full_matrices and m != n:
        raise ValueError("svd: full_matrices=True for non-square input is not supported; "
                         "pass full_matrices=False")
    k = min(m, n)
    parts = [host.svd(a) for a in mats]
    return SVDResult(_put(_flatten([p[0] for p in parts]), batch + (m, k), x),
                     _put([v for p in parts for v in p[1]], batch + (k,), x),
                     _put(_flatten([p[2] for p in parts]), batch + (k, n), x))


def svdvals(x: Tensor, /) -> Tensor:
    return svd(x, full_matrices=False).S


def pinv(x: Tensor, /, *, rtol=None) -> Tensor:
    u, s, vh = svd(x, full_matrices=False)
    if rtol is None:
        rtol = max(x.shape[-2:]) * _eps(x.dtype)
    cutoff = ops.amax(s, dim=-1, keepdim=True) * rtol if s.shape[-1] else s
    inv_s = ops.where(s > cutoff, 1.0 / ops.where(s > cutoff, s, 1.0), 0.0).astype(x.dtype)
    return ops.matmul(vh.mT * inv_s.reshape(inv_s.shape[:-1] + (1, -1)), u.mT)


def matrix_rank(x: Tensor, /, *, rtol=None) -> Tensor:
    s = svdvals(x)
    if rtol is None:
        rtol = max(x.shape[-2:]) * _eps(x.dtype)
    cutoff = ops.amax(s, dim=-1, keepdim=True) * rtol
    return ops.sum((s > cutoff).astype(dt.int64), dim=-1)


def _eps(d: dt.DType) -> float:
    return {2: 2.0 ** -10, 4: 2.0 ** -23, 8: 2.0 ** -52}[d.itemsize]
