"""Image transforms on tensors of shape (C, H, W) or batches (N, C, H, W).

They run on the tensor's backend (fast on numpy and the GPU); random ones draw from an
``ember.Generator`` so a seed reproduces them.

>>> import ember
>>> from ember.dataset.transforms import Compose, Normalize, RandomHorizontalFlip
>>> t = Compose([RandomHorizontalFlip(p=0.5, generator=ember.Generator(0)), Normalize([0.5], [0.5])])
>>> t(ember.ones(2, 1, 4, 4)).shape
(2, 1, 4, 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..random import Generator, default_generator
from ..tensor import Tensor


def _batched(fn: Callable) -> Callable:
    """Run a batch transform on a single (C, H, W) image by adding a batch dim."""

    def call(self, x):
        if x.ndim == 3:
            return fn(self, x.unsqueeze(0))[0]
        if x.ndim != 4:
            raise ValueError(
                f"{type(self).__name__}: expected (C, H, W) or (N, C, H, W), got shape {x.shape}"
            )
        return fn(self, x)

    return call


def _uniform(generator: Generator | None, n: int) -> list[float]:
    from ..random import philox_uniform

    seed, offset = (generator or default_generator).take(n)
    return philox_uniform(n, seed, offset)


class Compose:
    def __init__(self, transforms: Sequence[Callable]):
        self.transforms = list(transforms)

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class Normalize:
    """``(x - mean) / std`` per channel."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]):
        if any(s == 0 for s in std):
            raise ValueError(f"Normalize: std must be non-zero, got {list(std)}")
        self.mean, self.std = list(mean), list(std)

    @_batched
    def __call__(self, x):
        from ..ops.creation import tensor

        shape = (1, len(self.mean), 1, 1)
        mean = tensor(self.mean, backend=x.backend).reshape(shape)
        std = tensor(self.std, backend=x.backend).reshape(shape)
        return (x - mean.astype(x.dtype)) / std.astype(x.dtype)


class RandomHorizontalFlip:
    def __init__(self, p: float = 0.5, generator: Generator | None = None):
        self.p, self.generator = p, generator

    @_batched
    def __call__(self, x):
        from ..ops.creation import tensor
        from ..ops.where import where

        flips = [u < self.p for u in _uniform(self.generator, x.shape[0])]
        mask = tensor(flips, backend=x.backend).reshape(x.shape[0], 1, 1, 1)
        return where(mask, x.flip(-1), x)


class RandomCrop:
    """Pad by ``padding`` (zeros) then crop ``size`` at a random place per image. The whole
    batch is one gather (a few ops on any backend, not one slice per image)."""

    def __init__(self, size: int | tuple[int, int], padding: int = 0,
                 generator: Generator | None = None):
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        self.padding, self.generator = padding, generator

    @_batched
    def __call__(self, x):
        from ..ops.creation import arange, tensor
        from ..ops.padding import pad

        if self.padding:
            x = pad(x, (self.padding,) * 4)
        h, w = self.size
        n, c, H, W = x.shape
        if h > H or w > W:
            raise ValueError(f"RandomCrop: crop {self.size} is larger than the image {(H, W)}")
        u = _uniform(self.generator, 2 * n)
        corners = [min(int(u[2 * i] * (H - h + 1)), H - h) * W
                   + min(int(u[2 * i + 1] * (W - w + 1)), W - w) for i in range(n)]
        window = (arange(h, backend=x.backend) * W).reshape(h, 1) \
            + arange(w, backend=x.backend).reshape(1, w)
        index = tensor(corners, backend=x.backend).reshape(n, 1, 1) + window.reshape(1, 1, h * w)
        flat, b = x.reshape(n, c, H * W), x.backend
        # The backend's gather, not Tensor.gather: these indices are in range by construction,
        # and Tensor.gather's range check reads them back (a GPU sync per batch).
        picked = Tensor(b.gather(flat._prim, 2, index.expand(n, c, h * w)._prim), b)
        return picked.reshape(n, c, h, w)


class RandomAffine:
    """Small random rotation (± ``degrees``) and translation (± ``translate`` × size) per
    image, nearest-neighbour sampling, zeros outside."""

    def __init__(self, degrees: float = 10.0, translate: float = 0.1,
                 generator: Generator | None = None):
        self.degrees, self.translate, self.generator = degrees, translate, generator

    @_batched
    def __call__(self, x):
        from ..ops.creation import tensor
        from ..ops.shape_ops import cat, stack

        n, c, H, W = x.shape
        u = _uniform(self.generator, 3 * n)
        flat = x.reshape(n, c, H * W)
        zero_pad = tensor([0.0], backend=x.backend).astype(x.dtype).expand(n, c, 1)
        padded = cat([flat, zero_pad], dim=2)  # index H*W reads a zero
        out = []
        cy, cx = (H - 1) / 2, (W - 1) / 2
        for i in range(n):
            angle = math.radians((2 * u[3 * i] - 1) * self.degrees)
            dy = (2 * u[3 * i + 1] - 1) * self.translate * H
            dx = (2 * u[3 * i + 2] - 1) * self.translate * W
            cos, sin = math.cos(angle), math.sin(angle)
            index = []
            for y in range(H):
                for xx in range(W):
                    # inverse map: where in the source does output pixel (y, xx) come from
                    sy = cos * (y - cy - dy) - sin * (xx - cx - dx) + cy
                    sx = sin * (y - cy - dy) + cos * (xx - cx - dx) + cx
                    iy, ix = round(sy), round(sx)
                    index.append(iy * W + ix if 0 <= iy < H and 0 <= ix < W else H * W)
            idx = tensor(index, backend=x.backend)
            out.append(padded[i].index_select(1, idx).reshape(c, H, W))
        return stack(out)
