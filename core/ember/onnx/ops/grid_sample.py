"""GridSample: sample an N-d image at normalised grid points (nearest, linear, cubic; zeros,
border or reflection padding), separably: each output gathers its taps with one ``gather``
per tap combination, weighted, on any backend."""

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
