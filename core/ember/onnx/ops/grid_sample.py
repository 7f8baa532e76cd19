"""GridSample: sample an N-d image at normalised grid points (nearest, linear, cubic; zeros,
border or reflection padding), separably: each output gathers its taps with one ``gather``
per tap combination, weighted, on any backend. DeformConv samples its taps through it."""

from __future__ import annotations

import itertools
import math

import ember

from . import op
from ._util import like


def _reflect(x, lo: float, hi: float):
    """Mirror ``x`` at the borders ``lo``/``hi`` until it lies between them."""
    span = hi - lo
    if span <= 0:
        return ember.clamp(x, lo, hi)
    below, above = lo - x, x - hi
    out = x
    for d, inside in ((below, lambda r, n: ember.where(n % 2 == 0, lo + r, hi - r)),
                      (above, lambda r, n: ember.where(n % 2 == 0, hi - r, lo + r))):
        n = ember.floor(d / span)
        r = d - n * span
        out = ember.where(d > 0, inside(r, n), out)
    return out


def _cubic(t):
    """Keys' cubic convolution weights (A = -0.75) of the 4 taps around a point at ``t``."""
    a = -0.75
    x = [t + 1, t, 1 - t, 2 - t]
    far = [((a * v - 5 * a) * v + 8 * a) * v - 4 * a for v in (x[0], x[3])]
    near = [((a + 2) * v - (a + 3)) * v * v + 1 for v in (x[1], x[2])]
    return [far[0], near[0], near[1], far[1]]


@op("GridSample")
def grid_sample(ctx, x, grid, align_corners=0, mode="linear", padding_mode="zeros"):
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    n, c, *dims = x.shape
    out_shape = list(grid.shape[1:-1])
    d = len(dims)
    taps_per_dim = []
    for i, size in enumerate(dims):
        g = grid[..., d - 1 - i]  # the grid lists (x, y, z): the last spatial dim first
        pos = ((g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2)
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if mode == "nearest":
            pos = ember.round(pos)
        if padding_mode == "border":
            pos = ember.clamp(pos, 0.0, size - 1.0)
        elif padding_mode == "reflection":
            pos = _reflect(pos, lo, hi)
        if mode == "nearest":
            taps = [(pos, None)]
        else:
            base = ember.floor(pos)
            t = pos - base
            offsets = (0, 1) if mode == "linear" else (-1, 0, 1, 2)
            weights = [1 - t, t] if mode == "linear" else _cubic(t)
            taps = [(base + o, w) for o, w in zip(offsets, weights)]
        taps_per_dim.append([(_index(j, size, lo, hi, padding_mode), w) for j, w in taps])
    flat = x.reshape(n, c, math.prod(dims))
    strides = [math.prod(dims[i + 1:]) for i in range(d)]
    y = None
    for combo in itertools.product(*taps_per_dim):
        idx = ok = weight = None
        for s, ((j, valid), w) in zip(strides, combo):
            idx = j * s if idx is None else idx + j * s
            ok = valid if ok is None else ok & valid
            weight = w if weight is None else (weight * w if w is not None else weight)
        q = idx.reshape(n, 1, -1).expand(n, c, idx.numel() // n)
        v = ember.gather(flat, 2, q).reshape(n, c, *out_shape)
        if weight is not None:
            v = v * weight.unsqueeze(1)
        v = ember.where(ok.unsqueeze(1), v, like(v, 0.0))
        y = v if y is None else y + v
    return y


def _index(j, size: int, lo: float, hi: float, padding_mode: str):
    """An integer tap position ``j`` (a float tensor) as a valid index and whether it reads
    the image (a zeros-padded tap outside it reads 0)."""
    if padding_mode == "border":
        j = ember.clamp(j, 0.0, size - 1.0)
    elif padding_mode == "reflection":
        j = ember.trunc(_reflect(j, lo, hi))
    valid = (j >= 0) & (j <= size - 1)
    return ember.clamp(j, 0.0, size - 1.0).astype(ember.int64), valid


@op("DeformConv")
def deform_conv(ctx, x, w, offset, b=None, mask=None, dilations=None, group=1,
                kernel_shape=None, offset_group=1, pads=None, strides=None):
    """A 2-d convolution whose taps sample the image at offset (bilinear, zero outside)
    positions: the samples come from :func:`grid_sample` in pixel coordinates."""
    if x.ndim != 4:
        raise ember.UnsupportedOpError("DeformConv: only 2-d images are supported")
    n, c, h, wd = x.shape
    oc = w.shape[0]
    kh, kw = kernel_shape or w.shape[2:]
    dh, dw = dilations or [1, 1]
    sh, sw = strides or [1, 1]
    top, left = (pads or [0, 0, 0, 0])[:2]
    oh, ow = offset.shape[2:]
    g, k = offset_group, kh * kw
    off = offset.reshape(n, g, kh, kw, 2, oh, ow)
    be = x.backend

    def base(count, stride, start, taps, dil):  # tap t, output o -> start + o*stride + t*dil
        t = ember.arange(taps, dtype=x.dtype, backend=be) * dil
        o = ember.arange(count, dtype=x.dtype, backend=be) * stride + start
        return t, o

    th, oh_pos = base(oh, sh, -top, kh, dh)
    tw, ow_pos = base(ow, sw, -left, kw, dw)
    py = off[:, :, :, :, 0] + th.reshape(kh, 1, 1, 1) + oh_pos.reshape(1, 1, oh, 1)
    px = off[:, :, :, :, 1] + tw.reshape(1, kw, 1, 1) + ow_pos.reshape(1, 1, 1, ow)
    grid = ember.stack([px / (wd - 1) * 2 - 1, py / (h - 1) * 2 - 1], dim=-1)
    grid = grid.reshape(n * g, k * oh, ow, 2)
    cg = c // g
    s = grid_sample(ctx, x.reshape(n * g, cg, h, wd), grid, align_corners=1)
    s = s.reshape(n, g, cg, k, oh, ow)
    if mask is not None:
        s = s * mask.reshape(n, g, 1, k, oh, ow)
    cols = s.reshape(n, group, (c // group) * k, oh * ow)
    y = w.reshape(group, oc // group, (c // group) * k) @ cols
    y = y.reshape(n, oc, oh, ow)
    return y + b.reshape(1, oc, 1, 1) if b is not None else y
