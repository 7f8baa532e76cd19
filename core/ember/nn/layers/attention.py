"""Multi-head attention with torch's parameter layout (``in_proj_weight``, ``out_proj``)."""

from __future__ import annotations

import math

from ...ops.where import where
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param
from .linear import Linear


def additive_mask(mask: Tensor, dtype) -> Tensor:
    """A bool mask (True = masked out) as 0/-inf; a float mask is returned as is."""
    if mask.dtype.is_bool:
        return where(mask, float("-inf"), 0.0).to(dtype)
    return mask.to(dtype)


def causal_mask(size: int, backend=None) -> Tensor:
    """(size, size) bool mask, True above the diagonal (future positions).

    >>> causal_mask(3).tolist()
    [[False, True, True], [False, False, True], [False, False, False]]
    """
    from ...ops.creation import tensor

    rows = [[j > i for j in range(size)] for i in range(size)]
    return tensor(rows, backend=backend)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: ``forward(query, key, value, key_padding_mask=None,
    need_weights=True, attn_mask=None, average_attn_weights=True, is_causal=False)`` returns
    ``(output, weights or None)``.

    Masks: bool ``True`` means "don't attend"; a float mask is added to the scores.
    ``is_causal=True`` without ``attn_mask`` builds the causal mask.

    >>> import ember
    >>> from ember import nn
    >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
    >>> out, w = mha(ember.zeros(1, 5, 8), ember.zeros(1, 5, 8), ember.zeros(1, 5, 8))
    >>> out.shape, w.shape
    ((1, 5, 8), (1, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False, backend=None, dtype=None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first = float(dropout), batch_first
        self.in_proj_weight = new_param((3 * embed_dim, embed_dim), backend, dtype)
        self.in_proj_bias = new_param((3 * embed_dim,), backend, dtype) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, backend=backend, dtype=dtype)
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.zeros_(self.out_proj.bias)

    def _project(self, x: Tensor, i: int) -> Tensor:
        e = self.embed_dim
        w = self.in_proj_weight[i * e:(i + 1) * e]
        b = self.in_proj_bias[i * e:(i + 1) * e] if self.in_proj_bias is not None else None
        return F.linear(x, w, b)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False):
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (t.unsqueeze(0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        n, tgt_len, e = query.shape
        src_len = key.shape[1]
        h, d = self.num_heads, self.head_dim
        if e != self.embed_dim:
            raise ValueError(
                f"MultiheadAttention: query has embed dim {e}, expected {self.embed_dim}"
            )

        def heads(t: Tensor, length: int) -> Tensor:
            return t.reshape(n, length, h, d).permute(0, 2, 1, 3)

        q = heads(self._project(query, 0), tgt_len)
        k = heads(self._project(key, 1), src_len)
        v = heads(self._project(value, 2), src_len)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))  # (N, H, L, S)
        if attn_mask is None and is_causal:
            attn_mask = causal_mask(tgt_len, backend=scores.backend)
            if src_len != tgt_len:
                raise ValueError("MultiheadAttention: is_causal needs equal query/key lengths")
        if attn_mask is not None:
            m = additive_mask(attn_mask, scores.dtype)
            if m.ndim == 3:
                m = m.reshape(n, h, tgt_len, src_len)
            scores = scores + m
        if key_padding_mask is not None:
            m = additive_mask(key_padding_mask, scores.dtype)
            scores = scores + m.reshape(n, 1, 1, src_len)
        attn = F.softmax(scores, -1)
        dropped = F.dropout(attn, self.dropout, True) if self.training and self.dropout else attn
        out = (dropped @ v).permute(0, 2, 1, 3).reshape(n, tgt_len, e)
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        weights = attn.mean(dim=1) if average_attn_weights else attn
        return out, (weights.squeeze(0) if unbatched else weights)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


MultiHeadAttention = MultiheadAttention
