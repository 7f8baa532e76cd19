"""Shape, layout and indexing ops: Reshape ... GatherND, ScatterND, Pad, Slice."""

from __future__ import annotations

import math

import ember

from . import op
from ._util import axes as _axes
from ._util import axis as _axis
from ._util import const, ints


@op("Identity")
def identity(ctx, x):
    return x


@op("Shape")
def shape(ctx, x, start=0, end=None):
    dims = list(x.shape)[slice(start, end)]
    return const(ctx, dims, ember.int64)


@op("Size")
def size(ctx, x):
    return const(ctx, math.prod(x.shape), ember.int64)


@op("Reshape")
def reshape(ctx, x, shape=None, allowzero=0):
    target = ints(shape)
    if not allowzero:
        target = [x.shape[i] if s == 0 else s for i, s in enumerate(target)]
    return x.reshape(target)


@op("Flatten")
def flatten(ctx, x, axis=1):
    a = _axis(axis, x.ndim)
    return x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))


@op("Squeeze")
def squeeze(ctx, x, axes_in=None, axes=None):
    dims = ints(axes_in) if axes_in is not None else axes
    if dims is None:
        return x.reshape([s for s in x.shape if s != 1])
    drop = set(_axes(dims, x.ndim))
    return x.reshape([s for i, s in enumerate(x.shape) if i not in drop])


@op("Unsqueeze")
def unsqueeze(ctx, x, axes_in=None, axes=None):
    dims = ints(axes_in) if axes_in is not None else axes
    out_nd = x.ndim + len(dims)
    new = set(_axes(dims, out_nd))
    it = iter(x.shape)
    return x.reshape([1 if i in new else next(it) for i in range(out_nd)])


@op("Transpose")
def transpose(ctx, x, perm=None):
    return x.permute(perm if perm is not None else list(range(x.ndim))[::-1])


@op("Concat")
def concat(ctx, *xs, axis=0):
    return ember.cat([x for x in xs if x is not None], dim=axis)


@op("Split")
def split(ctx, x, split_in=None, axis=0, split=None, num_outputs=None):
    sizes = ints(split_in) if split_in is not None else split
    n = x.shape[_axis(axis, x.ndim)]
    if not sizes:
        parts = num_outputs or ctx.n_outputs
        chunk = -(-n // parts)
        sizes = [min(chunk, n - i * chunk) for i in range(parts)]
    return tuple(ember.split(x, list(sizes), dim=axis))


def _slice_axis(x, a, start, end, step):
    start, end, step = slice(start, end, step).indices(x.shape[a])
    if step > 0:
        key = [slice(None)] * a + [slice(start, end, step)]
        return x[tuple(key)]
    idx = list(range(start, end, step))
    return ember.index_select(x, a, ember.tensor(idx, dtype=ember.int64, backend=x.backend))


@op("Slice")
def slice_(ctx, x, starts_in=None, ends_in=None, axes_in=None, steps_in=None,
           starts=None, ends=None, axes=None):
    starts = ints(starts_in) if starts_in is not None else starts
    ends = ints(ends_in) if ends_in is not None else ends
    ax = ints(axes_in) if axes_in is not None else (axes or list(range(len(starts))))
    steps = ints(steps_in) if steps_in is not None else [1] * len(starts)
    big = 1 << 62
    for a, s, e, st in zip(ax, starts, ends, steps):
        s = max(min(s, big), -big)
        e = max(min(e, big), -big)
        x = _slice_axis(x, _axis(a, x.ndim), s, e, st)
    return x


def _wrap(idx, n):
    idx = idx.astype(ember.int64)
    return ember.where(idx < 0, idx + n, idx)


@op("Gather")
def gather(ctx, x, idx, axis=0):
    a = _axis(axis, x.ndim)
    if idx.ndim == 0:  # one index (how exporters split q, k, v): a view, no copy
        i = int(idx.item())
        return x.select(a, i + x.shape[a] if i < 0 else i)
    flat = ember.index_select(x, a, _wrap(idx, x.shape[a]).reshape(-1))
    return flat.reshape(list(x.shape[:a]) + list(idx.shape) + list(x.shape[a + 1:]))


@op("GatherElements")
def gather_elements(ctx, x, idx, axis=0):
    a = _axis(axis, x.ndim)
    return ember.gather(x, a, _wrap(idx, x.shape[a]))


def _nd_flat(x, idx, batch_dims):
    """Flat row numbers of the index tuples of ``idx`` into x viewed as (rows, rest)."""
    b = batch_dims
    m = idx.shape[-1]
    inner = x.shape[b:b + m]
    rows_per_batch = math.prod(inner)
    strides = [math.prod(inner[j + 1:]) for j in range(m)]
    idx = idx.astype(ember.int64)
    lin = None
    for j in range(m):
        part = _wrap(idx[..., j], inner[j]) * strides[j]
        lin = part if lin is None else lin + part
    nbatch = math.prod(x.shape[:b])
    boff = ember.arange(nbatch, dtype=ember.int64, backend=x.backend) * rows_per_batch
    lin = lin.reshape(nbatch, -1) + boff.reshape(nbatch, 1)
    rest = list(x.shape[b + m:])
    return lin.reshape(-1), x.reshape([nbatch * rows_per_batch, math.prod(rest)]), rest


@op("GatherND")
def gather_nd(ctx, x, idx, batch_dims=0):
    lin, flat, rest = _nd_flat(x, idx, batch_dims)
    return ember.index_select(flat, 0, lin).reshape(list(idx.shape[:-1]) + rest)


def _scatter_rows(flat, lin, upd, reduction):
    r = flat.shape[1]
    index = lin.reshape(-1, 1).expand(lin.shape[0], r)
    if reduction == "none":
        return flat.scatter(0, index, upd)
    if reduction == "add":
        return flat.scatter_add(0, index, upd)
    return _scatter_reduce(flat, index, upd, 0, reduction)


def _scatter_reduce(x, index, upd, dim, reduction):
    # one update at a time keeps duplicates right for mul/max/min (ember's scatter only adds)
    out = x
    n = index.shape[dim]
    for i in range(n):
        key = (slice(None),) * dim + (slice(i, i + 1),)
        idx_i, upd_i = index[key], upd[key]
        cur = ember.gather(out, dim, idx_i)
        new = {"mul": cur * upd_i, "max": ember.maximum(cur, upd_i),
               "min": ember.minimum(cur, upd_i)}[reduction]
        out = out.scatter(dim, idx_i, new)
    return out


@op("ScatterND")
def scatter_nd(ctx, x, idx, updates, reduction="none"):
    lin, flat, _ = _nd_flat(x, idx, 0)
    upd = updates.reshape(lin.shape[0], flat.shape[1]).astype(x.dtype)
    return _scatter_rows(flat, lin, upd, reduction).reshape(x.shape)


@op("ScatterElements", "Scatter")
def scatter_elements(ctx, x, idx, updates, axis=0, reduction="none"):
    a = _axis(axis, x.ndim)
    idx = _wrap(idx, x.shape[a])
    updates = updates.astype(x.dtype)
    if reduction == "none":
        return x.scatter(a, idx, updates)
    if reduction == "add":
        return x.scatter_add(a, idx, updates)
    return _scatter_reduce(x, idx, updates, a, reduction)


@op("Expand")
def expand(ctx, x, shape):
    target = ints(shape)
    nd = max(len(target), x.ndim)
    a = [1] * (nd - x.ndim) + list(x.shape)
    b = [1] * (nd - len(target)) + target
    out = [max(i, j) if 1 in (i, j) else i for i, j in zip(a, b)]
    return ember.broadcast_to(x.reshape(a), out)


@op("Tile")
def tile(ctx, x, repeats):
    return x.repeat(ints(repeats)) if x.ndim else x


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}


@op("Pad")
def pad(ctx, x, pads_in=None, value_in=None, axes_in=None, mode="constant", pads=None,
        value=0.0):
    pads = ints(pads_in) if pads_in is not None else pads
    value = value_in.reshape(-1).tolist()[0] if value_in is not None and value_in.numel() else (
        value)
    ax = _axes(ints(axes_in), x.ndim) if axes_in is not None else list(range(x.ndim))
    n = len(ax)
    begin = dict(zip(ax, pads[:n]))
    end = dict(zip(ax, pads[n:]))
    # negative pads crop
    for a in ax:
        if begin[a] < 0 or end[a] < 0:
            s, e = max(-begin[a], 0), x.shape[a] - max(-end[a], 0)
            x = x[(slice(None),) * a + (slice(s, e),)]
    flat = []
    for a in reversed(range(x.ndim)):
        flat += [max(begin.get(a, 0), 0), max(end.get(a, 0), 0)]
    while len(flat) > 2 and flat[-2:] == [0, 0]:
        flat = flat[:-2]
    if not any(flat):
        return x
    if mode == "constant":
        return ember.pad(x, flat, value=value)
    if mode not in _PAD_MODES:
        raise ember.UnsupportedOpError(f"Pad: mode {mode!r}; supported: {', '.join(_PAD_MODES)}")
    return ember.pad(x, flat, mode=_PAD_MODES[mode])


@op("DepthToSpace")
def depth_to_space(ctx, x, blocksize, mode="DCR"):
    n, c, h, w = x.shape
    b = blocksize
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


@op("SpaceToDepth")
def space_to_depth(ctx, x, blocksize, mode="DCR"):
    n, c, h, w = x.shape
    b = blocksize
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = x.reshape(n, c, h // b, b, w // b, b).permute(perm)
    return y.reshape(n, c * b * b, h // b, w // b)


@op("Trilu")
def trilu(ctx, x, k=None, upper=1):
    d = int(k.reshape(-1).tolist()[0]) if k is not None else 0
    return ember.triu(x, d) if upper else ember.tril(x, d)


@op("Compress")
def compress(ctx, x, condition, axis=None):
    if axis is None:
        x, a = x.reshape(-1), 0
    else:
        a = _axis(axis, x.ndim)
    keep = [i for i, c in enumerate(condition.tolist()) if c and i < x.shape[a]]
    return ember.index_select(x, a, const(ctx, keep, ember.int64))


@op("ReverseSequence")
def reverse_sequence(ctx, x, lens, batch_axis=1, time_axis=0):
    t = x.shape[time_axis]
    pos = ember.arange(t, dtype=ember.int64, backend=x.backend)
    shape = [1] * x.ndim
    shape[time_axis] = t
    lshape = [1] * x.ndim
    lshape[batch_axis] = lens.shape[0]
    pos, ln = pos.reshape(shape), lens.astype(ember.int64).reshape(lshape)
    src = ember.where(pos < ln, ln - 1 - pos, pos)
    return ember.gather(x, time_axis, ember.broadcast_to(src, x.shape))
