"""Reductions, scans, sorts and matmul, for float, int and bool tensors.

Reductions take non-empty, sorted, non-negative ``dims`` and keep them as size 1;
arg-reductions take one ``dim`` and return int64 (dim kept).
"""

from __future__ import annotations

import math

from .. import dtype as dt
from ..shape import numel
from . import infer
from .prims import count, expand_back, full, like, mask, scale, swap_last
from .registry import Kind, declare

R, S = Kind.REDUCTION, Kind.SCAN


def _family(kind: str, differentiable: bool):
    """The reductions every numeric kind has: sum, prod, max, min, arg-reductions, scans, sort
    and matmul."""
    d = differentiable
    return (
        declare(f"{kind}_sum", R, "x, dims", infer.reduce_kept, differentiable=d,
                doc="Sum over ``dims`` keeping them as size 1."),
        declare(f"{kind}_prod", R, "x, dims", infer.reduce_kept, differentiable=d),
        declare(f"{kind}_max", R, "x, dims", infer.reduce_kept, differentiable=d,
                doc="Max over ``dims`` (kept); NaN propagates."),
        declare(f"{kind}_min", R, "x, dims", infer.reduce_kept, differentiable=d),
        declare(f"{kind}_argmax", R, "x, dim", infer.arg_reduce, differentiable=False,
                doc="Index (int64, dim kept) of the first maximum; a NaN counts as the maximum."),
        declare(f"{kind}_argmin", R, "x, dim", infer.arg_reduce, differentiable=False),
        declare(f"{kind}_cumsum", S, "x, dim", infer.same, differentiable=d),
        declare(f"{kind}_cumprod", S, "x, dim", infer.same, differentiable=d),
        declare(f"{kind}_sort", Kind.SORT, "x, dim, descending", infer.sort, outputs=2,
                differentiable=d,
                doc="Stable sort along ``dim``: ``(values, int64 indices)``. NaNs sort last "
                "(ascending) and first (descending), as in numpy/PyTorch."),
        declare(f"{kind}_matmul", Kind.CONTRACTION, "a, b", infer.matmul, differentiable=d,
                doc="Batched matmul: ``a`` is (..., n, k), ``b`` is (..., k, m), same batch dims."),
    )


(float_sum, float_prod, float_max, float_min, float_argmax, float_argmin, float_cumsum,
 float_cumprod, float_sort, float_matmul) = _family("float", True)
(int_sum, int_prod, int_max, int_min, int_argmax, int_argmin, int_cumsum, int_cumprod,
 int_sort, int_matmul) = _family("int", False)

float_mean = declare("float_mean", R, "x, dims", infer.reduce_kept)
float_var = declare("float_var", R, "x, dims, correction", infer.reduce_kept)
float_logsumexp = declare("float_logsumexp", R, "x, dims", infer.reduce_kept)
bool_any = declare("bool_any", R, "x, dims", infer.reduce_kept, differentiable=False,
                   doc="True where any element over ``dims`` (kept) is true.")
bool_all = declare("bool_all", R, "x, dims", infer.reduce_kept, differentiable=False)


# ---------------------------------------------------------------------- default bodies (composites)
@float_mean.implements
def float_mean(self, x, dims: tuple[int, ...]):
    shape = self.shape(x)
    n = numel(shape[d] for d in dims)
    total = self.float_sum(x, dims)
    if n:
        return self.float_div(total, like(self, total, n))
    return self.float_mul(total, like(self, total, math.nan))


@float_var.implements
def float_var(self, x, dims: tuple[int, ...], correction: float):
    shape = tuple(self.shape(x))
    centered = self.float_sub(x, self.expand(self.float_mean(x, dims), shape))
    sq = self.float_sum(self.float_pow(centered, like(self, centered, 2)), dims)
    dof = max(numel(shape[d] for d in dims) - correction, 0)
    return self.float_div(sq, like(self, sq, dof))


@float_logsumexp.implements
def float_logsumexp(self, x, dims: tuple[int, ...]):
    m = self.float_max(x, dims)
    finite = self.bool_not(self.bool_or(self.float_isnan(m), self.float_isinf(m)))
    m = self.where(finite, m, like(self, m, 0.0))  # all -inf (or inf) rows: shift by 0
    shifted = self.float_sub(x, self.expand(m, tuple(self.shape(x))))
    return self.float_add(self.float_log(self.float_sum(self.float_exp(shifted), dims)), m)


@bool_any.implements
def bool_any(self, x, dims: tuple[int, ...]):
    """True where any element over ``dims`` (kept) is true."""
    return self.cast(self.int_max(self.cast(x, dt.int32), dims), dt.bool_)


@bool_all.implements
def bool_all(self, x, dims: tuple[int, ...]):
    return self.cast(self.int_min(self.cast(x, dt.int32), dims), dt.bool_)


# ---------------------------------------------------------------------- gradients
@float_sum.gradient()
def _(c, g):
    return (expand_back(c.b, g, c.shape(0)),)


@float_mean.gradient()
def _(c, g):
    b, shape = c.b, c.shape(0)
    n = count(shape, c.params[0])
    return (expand_back(b, scale(b, g, 1.0 / n if n else math.nan), shape),)


@float_var.gradient(inputs=(0,))
def _(c, g):
    b, shape = c.b, c.shape(0)
    dims, correction = c.params
    x = c.x(0)
    centered = b.float_sub(x, expand_back(b, b.float_mean(x, dims), shape))
    n = count(shape, dims)
    factor = 2.0 / (n - correction) if n > correction else math.nan
    return (b.float_mul(expand_back(b, scale(b, g, factor), shape), centered),)


@float_logsumexp.gradient(inputs=(0,), out=True)
def _(c, g):
    b, shape = c.b, c.shape(0)
    soft = b.float_exp(b.float_sub(c.x(0), expand_back(b, c.out, shape)))
    return (b.float_mul(expand_back(b, g, shape), soft),)


def _extreme(c, g):
    """max/min over dims: the gradient is shared evenly by the tied extremes (torch.amax)."""
    b, shape = c.b, c.shape(0)
    dims = c.params[0]
    hit = b.float_eq(c.x(0), expand_back(b, c.out, shape))
    n = b.float_sum(b.cast(hit, b.dtype(g)), dims)
    return (mask(b, hit, expand_back(b, b.float_div(g, n), shape)),)


float_max.gradient(inputs=(0,), out=True)(_extreme)
float_min.gradient(inputs=(0,), out=True)(_extreme)


@float_prod.gradient(inputs=(0,))
def _(c, g):
    # product of the *other* elements, as exclusive cumprods from both ends: exact with zeros
    b, shape = c.b, c.shape(0)
    dims = c.params[0]
    keep = [d for d in range(len(shape)) if d not in dims]
    order = tuple(keep + list(dims))
    n = count(shape, dims)
    flat_shape = tuple(shape[d] for d in keep) + (n,)
    x = b.reshape(b.permute(c.x(0), order), flat_shape)
    last = len(flat_shape) - 1
    left = _exclusive_cumprod(b, x, last)
    right = b.flip(_exclusive_cumprod(b, b.flip(x, (last,)), last), (last,))
    others = b.float_mul(left, right)
    gx = b.float_mul(
        others, b.expand(b.reshape(b.permute(g, order), flat_shape[:-1] + (1,)), flat_shape)
    )
    inverse = tuple(order.index(i) for i in range(len(shape)))
    return (b.permute(b.reshape(gx, tuple(shape[d] for d in order)), inverse),)


def _exclusive_cumprod(b, x, dim):
    shape = tuple(b.shape(x))
    if shape[dim] == 0:
        return x
    ones = full(b, shape[:dim] + (1,) + shape[dim + 1 :], 1.0, b.dtype(x))
    head = b.slice(
        b.float_cumprod(x, dim),
        tuple((0, s - 1 if d == dim else s, 1) for d, s in enumerate(shape)),
    )
    return b.cat([ones, head], dim)


def _reverse_cumsum(b, v, dim):
    return b.flip(b.float_cumsum(b.flip(v, (dim,)), dim), (dim,))


@float_cumsum.gradient()
def _(c, g):
    return (_reverse_cumsum(c.b, g, c.params[0]),)


@float_cumprod.gradient(inputs=(0,), out=True)
def _(c, g):
    # dout_j/dx_i = prod_{k<=j, k!=i} x_k. Before the first zero, sum_j g_j out_j / x_i;
    # at the first zero, the same sums with that zero taken as 1; after it, 0. Exact with zeros.
    b, dim = c.b, c.params[0]
    x = c.x(0)
    zero = b.float_eq(x, like(b, x, 0.0))
    seen = b.float_cumsum(b.cast(zero, b.dtype(x)), dim)
    before = b.float_eq(seen, like(b, seen, 0.0))
    first = b.bool_and(zero, b.float_eq(seen, like(b, seen, 1.0)))
    one = like(b, x, 1.0)
    safe_x = b.where(before, x, one)
    g_before = b.float_div(_reverse_cumsum(b, b.float_mul(g, c.out), dim), safe_x)
    g_first = _reverse_cumsum(b, b.float_mul(g, b.float_cumprod(b.where(first, one, x), dim)), dim)
    return (b.where(before, g_before, mask(b, first, g_first)),)


@float_matmul.gradient(inputs=(0, 1))
def _(c, g):
    b = c.b
    ga = b.float_matmul(g, swap_last(b, c.x(1))) if c.wants(0) else None
    gb = b.float_matmul(swap_last(b, c.x(0)), g) if c.wants(1) else None
    return ga, gb


@float_sort.gradient(inputs=(1,))
def _(c, g):
    # input 1 is the (untracked) permutation the sort produced
    b = c.b
    zeros = full(b, c.shape(0), 0.0, b.dtype(g))
    return b.scatter(zeros, c.params[0], c.x(1), g, "none"), None
