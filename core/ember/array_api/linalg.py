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
from ..errors import DTypeError, ShapeError
from ..shape import broadcast_shapes, normalize_dim
from ..tensor import Tensor
from ..tensordata import TensorData
from . import _host_linalg as host
from ._common import check_array, require
from ._statistical import _axes
from ._statistical import sum as _sum


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The matrix product (``x1 @ x2``), batched over leading axes; 1-d operands are vectors.

    >>> import ember.array_api as xp
    >>> xp.linalg.matmul(xp.asarray([[1, 2], [3, 4]]), xp.asarray([[1], [1]])).tolist()
    [[3], [7]]
    """
    return ops.matmul(check_array(x1, "matmul"), check_array(x2, "matmul"))


def matrix_transpose(x: Tensor, /) -> Tensor:
    """``x`` with its last two axes swapped.

    >>> import ember.array_api as xp
    >>> xp.linalg.matrix_transpose(xp.zeros((5, 2, 3))).shape
    (5, 3, 2)
    """
    x = check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: expected at least 2 dims, got shape {x.shape}")
    return x.mT


def tensordot(x1: Tensor, x2: Tensor, /, *, axes=2) -> Tensor:
    """The sum of products over ``axes`` (an int: the last of ``x1`` with the first of ``x2``).

    >>> import ember.array_api as xp
    >>> a = xp.asarray([[1, 2], [3, 4]])
    >>> xp.linalg.tensordot(a, a, axes=1).tolist(), xp.linalg.tensordot(a, a, axes=2).item()
    ([[7, 10], [15, 22]], 30)
    """
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
    """The dot product of vectors along ``axis``, batched over the others.

    The contracted axis must have one size in both (it does not broadcast); the result has
    the promoted dtype of the inputs (integers wrap around in it).

    >>> import ember.array_api as xp
    >>> xp.linalg.vecdot(xp.asarray([[1, 2, 3]]), xp.asarray([4, 5, 6])).tolist()
    [32]
    >>> u8 = xp.asarray([200, 100], dtype=xp.uint8)
    >>> xp.linalg.vecdot(u8, xp.asarray([2, 1], dtype=xp.uint8)).tolist()  # 500 mod 256
    244
    """
    ndim = max(x1.ndim, x2.ndim)
    d = normalize_dim(axis, ndim, "vecdot")
    n1, n2 = ((1,) * (ndim - x.ndim) + x.shape for x in (x1, x2))
    if n1[d] != n2[d]:
        raise ShapeError(f"vecdot: axis {axis} has size {n1[d]} in x1 {x1.shape} and {n2[d]} in "
                         f"x2 {x2.shape}; it must be the same")
    a, b = ops.broadcast_tensors(x1, x2)
    return ops.sum(a * b, dim=d).astype(dt.promote_types(x1.dtype, x2.dtype))


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """``out[i, j] = x1[i] * x2[j]`` for 1-d arrays.

    >>> import ember.array_api as xp
    >>> xp.linalg.outer(xp.asarray([1, 2]), xp.asarray([3, 4])).tolist()
    [[3, 4], [6, 8]]
    """
    return ops.outer(x1, x2)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-element vectors along ``axis``.

    >>> import ember.array_api as xp
    >>> xp.linalg.cross(xp.asarray([1, 0, 0]), xp.asarray([0, 1, 0])).tolist()
    [0, 0, 1]
    """
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
    """Diagonal ``offset`` of the last two axes (positive: above the main one).

    >>> import ember.array_api as xp
    >>> a = xp.asarray([[1, 2], [3, 4]])
    >>> xp.linalg.diagonal(a).tolist(), xp.linalg.diagonal(a, offset=1).tolist()
    ([1, 4], [2])
    """
    return ops.diagonal(check_array(x, "diagonal"), offset, -2, -1)


def trace(x: Tensor, /, *, offset: int = 0, dtype=None) -> Tensor:
    """The sum of diagonal ``offset`` of the last two axes.

    >>> import ember.array_api as xp
    >>> xp.linalg.trace(xp.asarray([[1, 2], [3, 4]])).item()
    5
    """
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vector_norm(x: Tensor, /, *, axis=None, keepdims: bool = False, ord=2) -> Tensor:
    """The ``ord``-norm of vectors along ``axis`` (all elements when None): 2, 1, inf, -inf, 0...

    >>> import ember.array_api as xp, math
    >>> v = xp.asarray([3.0, -4.0])
    >>> [xp.linalg.vector_norm(v, ord=o).item() for o in (2, 1, math.inf, 0)]
    [5.0, 7.0, 4.0, 2.0]
    """
    x = check_array(x, "vector_norm")
    require(x, "vector_norm", "f")
    axes = _axes(x, axis)
    a = ops.abs(x)
    if x.ndim and not axes:  # axis=(): the norm of each element alone
        return (a != 0).astype(x.dtype) if ord == 0 else a
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
    """The ``ord``-norm of the matrices in the last two axes: ``"fro"``, ``"nuc"``, 1, 2, inf...

    >>> import ember.array_api as xp, math
    >>> m = xp.asarray([[3.0, 0.0], [0.0, -4.0]])
    >>> [xp.linalg.matrix_norm(m, ord=o).item() for o in ("fro", 1, math.inf)]
    [5.0, 4.0, 4.0]
    """
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
    """``x`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse; 0: identity).

    >>> import ember.array_api as xp
    >>> xp.linalg.matrix_power(xp.asarray([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
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
    """The inverse of each square matrix (an error for a singular one).

    >>> import ember.array_api as xp
    >>> xp.linalg.inv(xp.asarray([[2.0, 0.0], [0.0, 4.0]], dtype=xp.float64)).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
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
    """``x1 @ out = x2``; a 1-d ``x2`` is one right-hand side vector.

    >>> import ember.array_api as xp
    >>> a = xp.asarray([[2.0, 0.0], [0.0, 4.0]], dtype=xp.float64)
    >>> xp.linalg.solve(a, xp.asarray([1.0, 1.0], dtype=xp.float64)).tolist()
    [0.5, 0.25]
    """
    vector = x2.ndim == 1
    rhs = x2.reshape(x2.shape + (1,)) if vector else x2
    batch = broadcast_shapes(x1.shape[:-2], rhs.shape[:-2], op="solve")
    a = x1.broadcast_to(batch + x1.shape[-2:])
    b = rhs.broadcast_to(batch + rhs.shape[-2:]).astype(dt.promote_types(x1.dtype, x2.dtype))
    if not b.numel() or not a.numel():  # no matrices, or 0 x 0 ones: nothing to solve
        _square(a, "solve")
        res = ops.zeros(b.shape, dtype=b.dtype, backend=b.backend)
        return res.reshape(res.shape[:-1]) if vector else res
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
    """``(sign, logabsdet)`` of :func:`slogdet`: ``det = sign * exp(logabsdet)``.

    >>> import ember.array_api as xp
    >>> r = xp.linalg.slogdet(xp.asarray([[-2.0, 0.0], [0.0, 1.0]], dtype=xp.float64))
    >>> r.sign.item(), round(r.logabsdet.item(), 12) == round(0.6931471805599453, 12)
    (-1.0, True)
    """
    sign: Tensor
    logabsdet: Tensor


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and the log of the absolute determinant (no overflow for large matrices).

    >>> import ember.array_api as xp, math
    >>> sign, logabsdet = xp.linalg.slogdet(xp.asarray([[2.0, 0.0], [0.0, 3.0]], dtype=xp.float64))
    >>> sign.item(), abs(logabsdet.item() - math.log(6.0)) < 1e-12
    (1.0, True)
    """
    batch, mats = _square(x, "slogdet")
    pairs = [host.slogdet(m) for m in mats]
    return SlogdetResult(_put([p[0] for p in pairs], batch, x), _put([p[1] for p in pairs], batch, x))


def det(x: Tensor, /) -> Tensor:
    """The determinant of each square matrix.

    >>> import ember.array_api as xp
    >>> round(xp.linalg.det(xp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=xp.float64)).item(), 10)
    -2.0
    """
    batch, mats = _square(x, "det")
    vals = []
    for m in mats:
        sign, logabs = host.slogdet(m)
        vals.append(sign * math.exp(logabs) if sign == sign else math.nan)
    return _put(vals, batch, x)


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The lower factor ``L`` with ``x = L @ L.T`` of a symmetric positive-definite ``x``
    (``upper=True``: ``U = L.T``).

    >>> import ember.array_api as xp
    >>> low = xp.linalg.cholesky(xp.asarray([[4.0, 2.0], [2.0, 2.0]], dtype=xp.float64))
    >>> low.tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    batch, mats = _square(x, "cholesky")
    out = []
    for m in mats:
        f = host.cholesky(m, upper)
        if f is None:
            raise ValueError("cholesky: the matrix is not positive-definite")
        out.append(f)
    return _put(_flatten(out), x.shape, x)


class QRResult(NamedTuple):
    """``(Q, R)`` of :func:`qr`.

    >>> import ember.array_api as xp
    >>> xp.linalg.qr(xp.eye(2))._fields
    ('Q', 'R')
    """
    Q: Tensor
    R: Tensor


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """``Q`` with orthonormal columns and upper-triangular ``R``, ``x = Q @ R`` (``"reduced"``
    or ``"complete"``).

    >>> import ember.array_api as xp
    >>> a = xp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=xp.float64)
    >>> q, r = xp.linalg.qr(a)
    >>> q.shape, r.shape, bool(xp.max(xp.abs(q @ r - a)) < 1e-12), r[1, 0].item()
    ((3, 2), (2, 2), True, 0.0)
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    batch, mats = _matrices(x, "qr")
    m, n = x.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    qs, rs = zip(*(host.qr(a, m, n, mode == "complete") for a in mats)) if mats else ((), ())
    return QRResult(_put(_flatten(qs), batch + (m, k), x), _put(_flatten(rs), batch + (k, n), x))


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)`` of :func:`eigh`.

    >>> import ember.array_api as xp
    >>> xp.linalg.eigh(xp.eye(2))._fields
    ('eigenvalues', 'eigenvectors')
    """
    eigenvalues: Tensor
    eigenvectors: Tensor


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices.

    >>> import ember.array_api as xp
    >>> w, v = xp.linalg.eigh(xp.asarray([[2.0, 1.0], [1.0, 2.0]], dtype=xp.float64))
    >>> [round(x, 12) for x in w.tolist()], v.shape
    ([1.0, 3.0], (2, 2))
    """
    batch, mats = _square(x, "eigh")
    n = x.shape[-1]
    pairs = [host.jacobi_eigh(m) for m in mats]
    return EighResult(_put([v for p in pairs for v in p[0]], batch + (n,), x),
                      _put(_flatten([p[1] for p in pairs]), x.shape, x))


def eigvalsh(x: Tensor, /) -> Tensor:
    """The eigenvalues (ascending) of symmetric matrices.

    >>> import ember.array_api as xp
    >>> [round(x, 12) for x in xp.linalg.eigvalsh(xp.asarray([[2.0, 1.0], [1.0, 2.0]])).tolist()]
    [1.0, 3.0]
    """
    return eigh(x).eigenvalues


class SVDResult(NamedTuple):
    """``(U, S, Vh)`` of :func:`svd`: ``x = U @ diag(S) @ Vh``.

    >>> import ember.array_api as xp
    >>> xp.linalg.svd(xp.eye(2))._fields
    ('U', 'S', 'Vh')
    """
    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """``x = U diag(S) Vᵀ``: U and Vᵀ square with ``full_matrices`` (the default), else with
    ``min(m, n)`` columns / rows; their columns / rows are orthonormal.

    >>> import ember.array_api as xp
    >>> a = xp.asarray([[3.0, 0.0], [0.0, -4.0]], dtype=xp.float64)
    >>> u, s, vh = xp.linalg.svd(a)
    >>> s.tolist(), bool(xp.max(xp.abs((u * s) @ vh - a)) < 1e-12)
    ([4.0, 3.0], True)
    >>> [t.shape for t in xp.linalg.svd(xp.ones((3, 2)))]
    [(3, 3), (2,), (2, 2)]
    """
    batch, mats = _matrices(x, "svd")
    m, n = x.shape[-2:]
    k = min(m, n)
    parts = [host.svd(a, m, n, full_matrices) for a in mats]
    ku, kv = (m, n) if full_matrices else (k, k)
    return SVDResult(_put(_flatten([p[0] for p in parts]), batch + (m, ku), x),
                     _put([v for p in parts for v in p[1]], batch + (k,), x),
                     _put(_flatten([p[2] for p in parts]), batch + (kv, n), x))


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values, in descending order.

    >>> import ember.array_api as xp
    >>> xp.linalg.svdvals(xp.asarray([[3.0, 0.0], [0.0, -4.0]], dtype=xp.float64)).tolist()
    [4.0, 3.0]
    """
    return svd(x, full_matrices=False).S


def pinv(x: Tensor, /, *, rtol=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (singular values below ``rtol * largest`` count as 0).

    >>> import ember.array_api as xp
    >>> xp.linalg.pinv(xp.asarray([[2.0, 0.0], [0.0, 0.0]], dtype=xp.float64)).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    m, n = x.shape[-2:]
    if not x.numel():
        batch = broadcast_shapes(x.shape[:-2], _rtol_batch(rtol), op="pinv")
        return ops.zeros(batch + (n, m), dtype=x.dtype, backend=x.backend)
    u, s, vh = svd(x, full_matrices=False)
    keep = s > _cutoff(s, x, rtol)
    inv_s = ops.where(keep, 1.0 / ops.where(keep, s, 1.0), 0.0).astype(x.dtype)
    return ops.matmul(vh.mT * inv_s.reshape(inv_s.shape[:-1] + (1, min(m, n))), u.mT)


def matrix_rank(x: Tensor, /, *, rtol=None) -> Tensor:
    """The number of singular values above ``rtol * largest`` (default: eps times the size).

    >>> import ember.array_api as xp
    >>> xp.linalg.matrix_rank(xp.asarray([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    if not x.numel():
        batch = broadcast_shapes(x.shape[:-2], _rtol_batch(rtol), op="matrix_rank")
        return ops.zeros(batch, dtype=dt.int64, backend=x.backend)
    s = svdvals(x)
    return ops.sum((s > _cutoff(s, x, rtol)).astype(dt.int64), dim=-1)


def _rtol_batch(rtol) -> tuple[int, ...]:
    return rtol.shape if isinstance(rtol, Tensor) else ()


def _cutoff(s: Tensor, x: Tensor, rtol) -> Tensor:
    """``rtol`` times each matrix's largest singular value, shaped to compare with ``s``
    (batch + (k,)): an array ``rtol`` has one value per matrix of the batch (it broadcasts
    against the batch dims, not against the singular values)."""
    if rtol is None:
        rtol = max(x.shape[-2:]) * _eps(x.dtype)
    elif isinstance(rtol, Tensor):
        rtol = rtol.reshape(rtol.shape + (1,))
    return ops.amax(s, dim=-1, keepdim=True) * rtol


def _eps(d: dt.DType) -> float:
    return {2: 2.0 ** -10, 4: 2.0 ** -23, 8: 2.0 ** -52}[d.itemsize]
