"""Ops that carry a cache between calls (opset 24+ decoding): TensorScatter writes new
entries into a KV cache, CausalConvWithState runs a depthwise causal 1-d convolution over
the previous call's tail."""

from __future__ import annotations

import ember
from ember.nn import functional as F

from . import op
from ._util import axis as _axis
from ._util import ints


@op("TensorScatter")
def tensor_scatter(ctx, past_cache, update, write_indices=None, mode="linear", axis=-2):
    a = _axis(axis, past_cache.ndim)
    size, steps = past_cache.shape[a], update.shape[a]
    starts = ints(write_indices) if write_indices is not None else [0] * past_cache.shape[0]
    rows = []
    for b, start in enumerate(starts):  # per batch: read the cache or the update, by index
        idx = list(range(size))
        for s in range(steps):
            idx[(start + s) % size if mode == "circular" else start + s] = size + s
        both = ember.cat([past_cache[b], update[b]], dim=a - 1)
        pick = ember.tensor(idx, dtype=ember.int64, backend=past_cache.backend)
        rows.append(ember.index_select(both, a - 1, pick))
    return ember.stack(rows, dim=0)


@op("CausalConvWithState")
def causal_conv_with_state(ctx, x, weight, bias=None, past_state=None, activation="none"):
    if activation not in ("none", "silu", "swish"):
        raise ember.UnsupportedOpError(f"CausalConvWithState: activation {activation!r}; "
                                       "supported: none, silu, swish")
    b, c, _ = x.shape
    k = weight.shape[2]
    pad = past_state if past_state is not None else ember.zeros(
        b, c, k - 1, dtype=x.dtype, backend=x.backend)
    padded = ember.cat([pad, x], dim=2)
    y = F.conv1d(padded, weight, bias, 1, 0, 1, c)
    if activation != "none":  # SiLU in float32, as the reference rounds it
        yf = y.astype(ember.float32)
        y = (yf * ember.sigmoid(yf)).astype(x.dtype)
    return y, padded[:, :, padded.shape[2] - (k - 1):]
