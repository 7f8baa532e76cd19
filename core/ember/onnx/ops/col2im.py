"""Col2Im: sliding-window columns summed back into an N-d image (the adjoint of im2col)."""

from __future__ import annotations

import itertools
import math

import ember

from . import op
from ._util import ints


@op("Col2Im")
def col2im(ctx, x, image_shape, block_shape, dilations=None, pads=None, strides=None):
    img, k = ints(image_shape), ints(block_shape)
    nd = len(img)
    dil = dilations or [1] * nd
    st = strides or [1] * nd
    p = pads or [0] * (2 * nd)
    blocks = [(img[i] + p[i] + p[nd + i] - (dil[i] * (k[i] - 1) + 1)) // st[i] + 1
              for i in range(nd)]
    n, ck, length = x.shape
    c = ck // math.prod(k)
    size = math.prod(img)
    # where each (kernel offset, block) column entry lands; ``size`` collects the padding
    target = []
    for ko in itertools.product(*(range(v) for v in k)):
        for bo in itertools.product(*(range(v) for v in blocks)):
            at = [bo[i] * st[i] - p[i] + ko[i] * dil[i] for i in range(nd)]
            inside = all(0 <= a < img[i] for i, a in enumerate(at))
            target.append(sum(a * math.prod(img[i + 1:]) for i, a in enumerate(at))
                          if inside else size)
    if len(target) != ck // c * length:
        raise ember.ShapeError(f"Col2Im: input has {length} blocks, image {img} with block "
                               f"{k} gives {math.prod(blocks)}")
    idx = ember.tensor(target, dtype=ember.int64, backend=x.backend)
    y = ember.zeros(n, c, size + 1, dtype=x.dtype, backend=x.backend)
    y = y.index_add(2, idx, x.reshape(n, c, -1))
    return y[:, :, :size].reshape(n, c, *img)
