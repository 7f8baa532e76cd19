"""Position encodings: sinusoidal (``PositionalEncoding``) and rotary (``RotaryEncoding``)."""

from __future__ import annotations

import math

from ...ops.creation import tensor
from ...tensor import Tensor
from ..module import Module
from .dropout import Dropout


class PositionalEncoding(Module):
    """Adds ``pe[pos, 2i] = sin(pos / 10000^(2i/d))``, ``pe[pos, 2i+1] = cos(...)``.

    Input is (N, L, d_model) with ``batch_first`` (default) or (L, N, d_model).

    >>> import ember
    >>> from ember import nn
    >>> nn.PositionalEncoding(4)(ember.zeros(1, 2, 4)).tolist()[0][0]
    [0.0, 1.0, 0.0, 1.0]
    """

    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 5000,
                 batch_first: bool = True, base: float = 10000.0, backend=None, dtype=None):
        super().__init__()
        self.d_model, self.max_len, self.batch_first = d_model, max_len, batch_first
        self.base = base
        self.dropout = Dropout(dropout)
        self.register_buffer("pe", self._table(max_len, backend, dtype), persistent=False)

    def _table(self, length: int, backend, dtype) -> Tensor:
        rows = []
        for pos in range(length):
            row = []
            for i in range(self.d_model):
                angle = pos / self.base ** ((i - i % 2) / self.d_model)
                row.append(math.sin(angle) if i % 2 == 0 else math.cos(angle))
            rows.append(row)
        return tensor(rows, dtype=dtype or "float32", backend=backend)

    def forward(self, x: Tensor) -> Tensor:
        length = x.shape[1] if self.batch_first else x.shape[0]
        if length > self.max_len:
            raise ValueError(
                f"PositionalEncoding: sequence length {length} exceeds max_len {self.max_len}"
            )
        pe = self.pe[:length].to(x.dtype)
        pe = pe.unsqueeze(0) if self.batch_first else pe.unsqueeze(1)
        return self.dropout(x + pe)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class RotaryEncoding(Module):
    """Rotary position embedding (RoPE) over the last dim of (..., L, d).

    Feature pairs ``(x[2i], x[2i+1])`` (``interleaved=True``, Burn/Meta style) or
    ``(x[i], x[i + d/2])`` (``interleaved=False``, GPT-NeoX/Hugging Face style) are rotated by
    ``pos * base^(-2i/d)``. ``forward(x, start=0)`` offsets positions (for KV caches).

    >>> import ember
    >>> from ember import nn
    >>> rope = nn.RotaryEncoding(4)
    >>> y = rope(ember.ones(1, 3, 4))
    >>> y.shape, y[0, 0].tolist(), [round(v, 4) for v in y.pow(2).sum(dim=-1)[0].tolist()]
    ((1, 3, 4), [1.0, 1.0, 1.0, 1.0], [4.0, 4.0, 4.0])
    """

    def __init__(self, dim: int, max_len: int = 4096, base: float = 10000.0,
                 interleaved: bool = True, backend=None, dtype=None):
        super().__init__()
        if dim % 2:
            raise ValueError(f"RotaryEncoding: dim must be even, got {dim}")
        self.dim, self.max_len, self.base, self.interleaved = dim, max_len, base, interleaved
        half = dim // 2
        freqs = [base ** (-2 * i / dim) for i in range(half)]
        angles = [[p * f for f in freqs] for p in range(max_len)]
        dt_ = dtype or "float32"
        self.register_buffer(
            "cos", tensor([[math.cos(a) for a in r] for r in angles], dt_, backend),
            persistent=False)
        self.register_buffer(
            "sin", tensor([[math.sin(a) for a in r] for r in angles], dt_, backend),
            persistent=False)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        length, d = x.shape[-2], x.shape[-1]
        if d != self.dim:
            raise ValueError(f"RotaryEncoding: last dim is {d}, expected {self.dim}")
        if start + length > self.max_len:
            raise ValueError(
                f"RotaryEncoding: positions up to {start + length} exceed max_len {self.max_len}"
            )
        cos = self.cos[start:start + length].to(x.dtype)  # (L, d/2)
        sin = self.sin[start:start + length].to(x.dtype)
        half = d // 2
        if self.interleaved:
            pairs = x.reshape(*x.shape[:-1], half, 2)
            a, b = pairs[..., 0], pairs[..., 1]
        else:
            a, b = x[..., :half], x[..., half:]
        ra = a * cos - b * sin
        rb = a * sin + b * cos
        if self.interleaved:
            from ...ops import stack

            return stack([ra, rb], dim=-1).reshape(*x.shape)
        from ...ops import cat

        return cat([ra, rb], dim=-1)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, max_len={self.max_len}, interleaved={self.interleaved}"
