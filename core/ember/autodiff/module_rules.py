"""Convolution and pooling: run the inner backend's (fast) op forward, with dedicated backward
rules written with inner ops (conv backward is a conv_transpose and the backend's
``conv_weight_grad``; max-pool backward is the backend's ``max_pool_grad``; avg-pool backward
scatters the window gradients back tap by tap)."""

from __future__ import annotations

import math

from ..backend.module_ops import avg_pool_divisors, pad_spatial
from ..shape import pool_geometry
from .rules import full, like, rule


def _conv_padded_shape(shape, padding):
    return tuple(shape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(shape[2:], padding))


def _fit(b, v, size: tuple[int, ...]):
    """Zero-extend (at the end) the spatial dims of ``v`` up to ``size``."""
    for i, want in enumerate(size):
        axis = 2 + i
        shape = tuple(b.shape(v))
        if shape[axis] < want:
            pad = shape[:axis] + (want - shape[axis],) + shape[axis + 1 :]
            v = b.cat([v, full(b, pad, 0.0, b.dtype(v))], axis)
        elif shape[axis] > want:
            v = b.slice(v, tuple((0, want if d == axis else s, 1) for d, s in enumerate(shape)))
    return v


@rule("conv", inputs=(0, 1))
def _conv(c, g):
    b = c.b
    stride, padding, dilation, groups, _ = c.params
    xshape, wshape = c.shape(0), c.shape(1)
    nd = len(stride)
    padded = _conv_padded_shape(xshape, padding)
    gx = gw = gbias = None
    if c.wants(0):
        zeros = (0,) * nd
        gxp = b.conv_transpose(g, c.x(1), None, stride, zeros, zeros, dilation, groups)
        gxp = _fit(b, gxp, padded[2:])
        gx = pad_spatial(b, gxp, [(-lo, -hi) for lo, hi in padding], 0.0)
    if c.wants(1):
        gw = b.conv_weight_grad(c.x(0), g, tuple(wshape), stride, padding, dilation, groups)
    if len(c.node.parents) > 2 and c.wants(2):
        gbias = b.reshape(b.float_sum(g, (0,) + tuple(range(2, 2 + nd))), (wshape[0],))
    return gx, gw, gbias


def _scatter_windows(b, gxp, contribs, out, kernel, stride, dilation):
    """Add each tap's contribution back into the padded input gradient."""
    lead = [(0, s, 1) for s in tuple(b.shape(gxp))[:2]]
    for offsets, v in zip(_taps(kernel), contribs):
        ranges = tuple(
            lead
            + [
                (k * d, k * d + (n - 1) * s + 1, s)
                for k, n, s, d in zip(offsets, out, stride, dilation)
            ]
        )
        gxp = b.slice_assign(gxp, ranges, b.float_add(b.slice(gxp, ranges), v))
    return gxp


def _taps(kernel):
    import itertools

    return itertools.product(*(range(k) for k in kernel))


@rule("max_pool", inputs=(0,), out=True)
def _max_pool(c, g):
    return (c.b.max_pool_grad(c.x(0), c.out, g, *c.params),)


@rule("avg_pool")
def _avg_pool(c, g):
    b = c.b
    kernel, stride, padding, ceil_mode, count_include_pad, divisor_override = c.params
    xshape = c.shape(0)
    ones = (1,) * len(kernel)
    out, pairs = pool_geometry(xshape[2:], kernel, stride, padding, ones, ceil_mode)
    if divisor_override:
        share = b.float_div(g, like(b, g, divisor_override))
    else:
        per_dim = [
            avg_pool_divisors(*a, count_include_pad)
            for a in zip(xshape[2:], out, kernel, stride, padding)
        ]
        div = full(b, (), 1.0, b.dtype(g))
        div = b.reshape(div, (1,) * len(tuple(b.shape(g))))
        div = b.expand(div, tuple(b.shape(g)))
        for axis, d in enumerate(per_dim, start=2):
            from ..data import TensorData

            vals = b.from_data(TensorData.from_values(d, (len(d),), b.dtype(g)))
            view = tuple(len(d) if i == axis else 1 for i in range(len(tuple(b.shape(g)))))
            div = b.float_mul(div, b.expand(b.reshape(vals, view), tuple(b.shape(g))))
        share = b.float_div(g, div)
    padded = tuple(xshape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], pairs))
    gxp = full(b, padded, 0.0, b.dtype(g))
    n_taps = math.prod(kernel)
    gxp = _scatter_windows(b, gxp, [share] * n_taps, out, kernel, stride, ones)
    return (pad_spatial(b, gxp, [(-lo, -hi) for lo, hi in pairs], 0.0),)


class ModuleMethods:
    """Autodiff's conv/pool overrides (mixed into :class:`~ember.autodiff.Autodiff`)."""

    def conv(self, x, weight, bias, stride, padding, dilation, groups):
        inner = self.inner
        inputs = (x, weight) if bias is None else (x, weight, bias)
        params = (
            tuple(stride),
            tuple(tuple(p) for p in padding),
            tuple(dilation),
            groups,
            bias is not None,
        )

        def fwd(xv, wv, bv=None):
            return inner.conv(xv, wv, bv, stride, padding, dilation, groups)

        return self._apply("conv", inputs, params, fwd)

    def max_pool(self, x, kernel, stride, padding, dilation, ceil_mode):
        inner = self.inner
        params = (tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), ceil_mode)
        return self._apply("max_pool", (x,), params, lambda v: inner.max_pool(v, *params))

    def avg_pool(
        self, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None
    ):
        inner = self.inner
        params = (
            tuple(kernel),
            tuple(stride),
            tuple(padding),
            ceil_mode,
            count_include_pad,
            divisor_override,
        )
        # backends without divisor_override support keep their five-argument signature
        forwarded = params[:5] if divisor_override is None else params

        def fwd(v):
            return inner.avg_pool(v, *forwarded)

        return self._apply("avg_pool", (x,), params, fwd)
