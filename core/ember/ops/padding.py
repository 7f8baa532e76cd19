"""``ember.pad`` (PyTorch's ``F.pad``): constant, reflect, replicate and circular padding."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ShapeError
from ..tensor import Tensor
from ._dispatch import wrap
from .indexing import index_select
from .shape_ops import int_tensor

def _pad_index(n: int, left: int, right: int, mode: str) -> list[int]:
    idx = range(-left, n + right)
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in idx]
    if mode == "circular":
        return [i % n for i in idx]
    # reflect: mirror about the edge elements (which are not repeated)
    return [-i if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in idx]


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0) -> Tensor:
    """Pad (or, with negative amounts, crop) the last dims; ``pad`` is PyTorch's
    ``(left, right, top, bottom, ...)``: pairs for the last dim first.

    ``mode``: 'constant' (fill ``value``), 'reflect', 'replicate' or 'circular'.

    >>> import ember
    >>> ember.pad(ember.tensor([[1, 2]]), (1, 2), value=9).tolist()
    [[9, 1, 2, 9, 9]]
    >>> ember.pad(ember.tensor([1, 2, 3]), (2, 1), mode="reflect").tolist()
    [3, 2, 1, 2, 3, 2]
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ShapeError(
            f"pad: pad {pad} must have an even length of at most 2 * ndim ({2 * x.ndim}) for "
            f"shape {x.shape}"
        )
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(
            f"pad: unknown mode {mode!r}; valid: 'constant', 'reflect', 'replicate', 'circular'"
        )
    pairs = {x.ndim - 1 - i: (pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)}
    if mode == "constant":
        # crop negative pads first so the rest is a pure fill + slice_assign
        crop = tuple(
            (max(-pairs.get(d, (0, 0))[0], 0), s - max(-pairs.get(d, (0, 0))[1], 0), 1)
            for d, s in enumerate(x.shape)
        )
        if any(lo > hi for lo, hi, _ in crop):
            raise ShapeError(f"pad: negative pad {pad} crops more than shape {x.shape} holds")
        if crop != tuple((0, s, 1) for s in x.shape):
            x = wrap(x, x.backend.slice(x._prim, crop))
        pos = {d: (max(lo, 0), max(hi, 0)) for d, (lo, hi) in pairs.items()}
        out_shape = tuple(s + sum(pos.get(d, (0, 0))) for d, s in enumerate(x.shape))
        if out_shape == x.shape:
            return x
        b = x.backend
        base = b.full(out_shape, value, x.dtype)
        ranges = tuple(
            (pos.get(d, (0, 0))[0], pos.get(d, (0, 0))[0] + s, 1) for d, s in enumerate(x.shape)
        )
        return Tensor(b.slice_assign(base, ranges, x._prim), b)
    out = x
    for d, (lo, hi) in pairs.items():
        n = out.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise ShapeError(
                f"pad: reflect padding ({lo}, {hi}) must be smaller than the size of dim {d} "
                f"({n}) for shape {x.shape}"
            )
        if n == 0 and (lo > 0 or hi > 0):
            raise ShapeError(f"pad: can't {mode}-pad the empty dim {d} of shape {x.shape}")
        if lo < -n or hi < -n or n + lo + hi < 0:
            raise ShapeError(f"pad: pad {pad} crops more than shape {x.shape} holds")
        if (lo, hi) != (0, 0):
            out = index_select(out, d, int_tensor(_pad_index(n, lo, hi, mode), out))
    return out
