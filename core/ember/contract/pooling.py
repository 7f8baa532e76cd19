"""Pooling (max, average, adaptive average) and resampling (interpolate).

``x`` is (N, C, *spatial); kernel, stride, padding and dilation have one entry per spatial
dim, padding counts as -inf for max and (optionally) 0 for average, as in PyTorch.
"""

from __future__ import annotations

import itertools
import math

from ..tensordata import TensorData
from ..shape import numel, pool_geometry
from . import prims
from . import infer
from .prims import like
from .registry import Kind, Spec, declare
from .windows import (
    adaptive_ranges, along, avg_pool_divisors, int64_vector, linear_indices, nearest_indices,
    pad_spatial, trailing, window_slices,
)


def _pool_shape(x, kernel, stride, padding, dilation, ceil_mode):
    out, _ = pool_geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    return Spec(tuple(x.shape[:2]) + out, x.dtype)


def _avg_pool_shape(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor=None):
    return _pool_shape(x, kernel, stride, padding, (1,) * len(kernel), ceil_mode)


def _resized_shape(x, size, *params):
    return Spec(tuple(x.shape[:2]) + tuple(size), x.dtype)


max_pool = declare(
    "max_pool", Kind.MODULE, "x, kernel, stride, padding, dilation, ceil_mode", _pool_shape
)
max_pool_grad = declare(
    "max_pool_grad", Kind.MODULE, "x, out, grad, kernel, stride, padding, dilation, ceil_mode",
    infer.same, tensors="x, out, grad", differentiable=False,
)
avg_pool = declare(
    "avg_pool", Kind.MODULE,
    "x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None",
    _avg_pool_shape,
)
adaptive_avg_pool = declare("adaptive_avg_pool", Kind.MODULE, "x, output_size", _resized_shape)
interpolate = declare(
    "interpolate", Kind.MODULE, "x, size, mode, align_corners, scale_factors=None", _resized_shape
)


# ---------------------------------------------------------------------- default bodies
@max_pool.implements
def max_pool(
    self, x, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool
):
    """Max over windows; ``padding`` one int per spatial dim, counting as -inf; NaN
    propagates."""
    spatial = tuple(self.shape(x))[2:]
    out, pairs = pool_geometry(spatial, kernel, stride, padding, dilation, ceil_mode)
    xp = pad_spatial(self, x, pairs, -math.inf)
    acc = None
    for w in window_slices(self, xp, out, kernel, stride, dilation):
        acc = w if acc is None else self.float_maximum(acc, w)
    return acc


@max_pool_grad.implements
def max_pool_grad(
    self,
    x,
    out,
    grad,
    kernel: tuple,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    ceil_mode: bool,
):
    """The gradient of ``out = max_pool(x, ...)`` with respect to ``x``, given ``out``'s
    gradient ``grad``: as in PyTorch, each window's gradient goes to its first maximum
    (windows whose maximum is NaN pass none); Autodiff's max_pool rule calls it."""
    spatial = tuple(self.shape(x))[2:]
    out_size, pairs = pool_geometry(spatial, kernel, stride, padding, dilation, ceil_mode)
    xp = pad_spatial(self, x, pairs, -math.inf)
    zero = like(self, grad, 0.0)
    taken = self.float_lt(out, out)  # all False
    gxp = self.full(tuple(self.shape(xp)), 0.0, self.dtype(grad))
    lead = [(0, s, 1) for s in tuple(self.shape(xp))[:2]]
    taps = itertools.product(*(range(k) for k in kernel))
    for offsets, w in zip(taps, window_slices(self, xp, out_size, kernel, stride, dilation)):
        hit = self.bool_and(self.float_eq(w, out), self.bool_not(taken))
        taken = self.bool_or(taken, hit)
        ranges = tuple(lead) + tuple(
            (k * d, k * d + (n - 1) * s + 1, s)
            for k, n, s, d in zip(offsets, out_size, stride, dilation)
        )
        added = self.float_add(self.slice(gxp, ranges), self.where(hit, grad, zero))
        gxp = self.slice_assign(gxp, ranges, added)
    return pad_spatial(self, gxp, [(-lo, -hi) for lo, hi in pairs], 0.0)


@avg_pool.implements
def avg_pool(
    self,
    x,
    kernel: tuple,
    stride: tuple,
    padding: tuple,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None = None,
):
    """Mean over windows (PyTorch's divisor rules; ``divisor_override`` replaces them)."""
    spatial = tuple(self.shape(x))[2:]
    ones = (1,) * len(kernel)
    out, pairs = pool_geometry(spatial, kernel, stride, padding, ones, ceil_mode)
    xp = pad_spatial(self, x, pairs, 0)
    acc = None
    for w in window_slices(self, xp, out, kernel, stride, ones):
        acc = w if acc is None else self.float_add(acc, w)
    if divisor_override:
        return self.float_div(acc, like(self, acc, divisor_override))
    per_dim = [
        avg_pool_divisors(*a, count_include_pad)
        for a in zip(spatial, out, kernel, stride, padding)
    ]
    if all(len(set(d)) == 1 for d in per_dim):
        return self.float_div(acc, like(self, acc, numel(d[0] for d in per_dim)))
    values = [numel(combo) for combo in itertools.product(*per_dim)]
    div = self.from_data(TensorData.from_values(values, out, self.dtype(acc)))
    return self.float_div(acc, trailing(self, div, tuple(self.shape(acc))))


@adaptive_avg_pool.implements
def adaptive_avg_pool(self, x, output_size: tuple):
    """Mean over PyTorch's adaptive windows, one spatial dim at a time (box means are
    separable)."""
    for i, out in enumerate(output_size):
        axis = 2 + i
        shape = tuple(self.shape(x))
        if shape[axis] == out:
            continue
        parts = []
        for start, end in adaptive_ranges(shape[axis], out):
            ranges = tuple(
                (start, end, 1) if d == axis else (0, s, 1) for d, s in enumerate(shape)
            )
            parts.append(self.float_mean(self.slice(x, ranges), (axis,)))
        x = self.cat(parts, axis) if len(parts) > 1 else parts[0]
    return x


@interpolate.implements
def interpolate(
    self,
    x,
    size: tuple,
    mode: str,
    align_corners: bool | None,
    scale_factors: tuple | None = None,
):
    """Resize spatial dims to ``size``; mode 'nearest', 'nearest-exact', 'linear' or
    'bilinear' (linear along every spatial dim). ``scale_factors`` (the user's, per dim)
    set the coordinate mapping as in PyTorch; None derives it from the sizes."""
    dtype = self.dtype(x)
    for i, out in enumerate(size):
        axis = 2 + i
        in_size = tuple(self.shape(x))[axis]
        sf = scale_factors[i] if scale_factors else None
        if mode in ("nearest", "nearest-exact"):
            idx = nearest_indices(in_size, out, sf, mode == "nearest-exact")
            if idx != list(range(in_size)):
                x = self.index_select(x, axis, int64_vector(self, idx))
            continue
        i0, i1, w0, w1 = linear_indices(in_size, out, sf, bool(align_corners))
        a = self.index_select(x, axis, int64_vector(self, i0))
        c = self.index_select(x, axis, int64_vector(self, i1))
        shape = tuple(self.shape(a))
        x = self.float_add(
            self.float_mul(a, along(self, w0, shape, axis, dtype)),
            self.float_mul(c, along(self, w1, shape, axis, dtype)),
        )
    return x


# ---------------------------------------------------------------------- gradients
@max_pool.gradient(inputs=(0,), out=True)
def _(c, g):
    return (c.b.max_pool_grad(c.x(0), c.out, g, *c.params),)


def _scatter_windows(b, gxp, contribs, out, kernel, stride, dilation):
    """Add each tap's contribution back into the padded input gradient."""
    lead = [(0, s, 1) for s in tuple(b.shape(gxp))[:2]]
    taps = itertools.product(*(range(k) for k in kernel))
    for offsets, v in zip(taps, contribs):
        ranges = tuple(
            lead
            + [
                (k * d, k * d + (n - 1) * s + 1, s)
                for k, n, s, d in zip(offsets, out, stride, dilation)
            ]
        )
        gxp = b.slice_assign(gxp, ranges, b.float_add(b.slice(gxp, ranges), v))
    return gxp


@avg_pool.gradient()
def _(c, g):
    # scatter each window's share of the gradient back, tap by tap
    b = c.b
    kernel, stride, padding, ceil_mode, count_include_pad, divisor_override = c.params
    xshape = c.shape(0)
    ones = (1,) * len(kernel)
    out, pairs = pool_geometry(xshape[2:], kernel, stride, padding, ones, ceil_mode)
    gshape = tuple(b.shape(g))
    if divisor_override:
        share = b.float_div(g, like(b, g, divisor_override))
    else:
        div = like(b, g, 1.0)
        for axis, args in enumerate(zip(xshape[2:], out, kernel, stride, padding), start=2):
            d = avg_pool_divisors(*args, count_include_pad)
            vals = b.from_data(TensorData.from_values(d, (len(d),), b.dtype(g)))
            view = tuple(len(d) if i == axis else 1 for i in range(len(gshape)))
            div = b.float_mul(div, b.expand(b.reshape(vals, view), gshape))
        share = b.float_div(g, div)
    padded = tuple(xshape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], pairs))
    gxp = prims.full(b, padded, 0.0, b.dtype(g))
    gxp = _scatter_windows(b, gxp, [share] * math.prod(kernel), out, kernel, stride, ones)
    return (pad_spatial(b, gxp, [(-lo, -hi) for lo, hi in pairs], 0.0),)
