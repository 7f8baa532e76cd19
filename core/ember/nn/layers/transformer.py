"""Transformer encoder/decoder layers and stacks (torch's submodule names, so weights copy
1:1)."""

from __future__ import annotations

from collections.abc import Callable

from ...tensor import Tensor
from .. import functional as F
from ..module import Module, clone_module
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .norm import LayerNorm


def _activation(act: str | Callable) -> Callable:
    if callable(act):
        return act
    if act == "relu":
        return F.relu
    if act == "gelu":
        return F.gelu
    raise ValueError(f"Transformer: activation must be 'relu', 'gelu' or a callable, got {act!r}")


class _TransformerLayer(Module):
    """The submodules (torch's names and order, so state dicts match) and blocks shared by the
    encoder layer and, with ``_cross`` attention over ``memory``, the decoder layer."""

    _cross: bool = False

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, backend=None, dtype=None):
        super().__init__()
        kw = {"backend": backend, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first, **kw)
        if self._cross:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first,
                                                     **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        if self._cross:
            self.norm3 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if self._cross:
            self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def _sa_block(self, x, mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        last = self.dropout3 if self._cross else self.dropout2
        return last(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention + feed-forward block (post-norm, or pre-norm with ``norm_first``).

    >>> import ember
    >>> from ember import nn
    >>> layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> layer(ember.zeros(2, 3, 8)).shape
    (2, 3, 8)
    """

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, cross-attention over ``memory``, feed-forward.

    >>> import ember
    >>> from ember import nn
    >>> layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    >>> layer(ember.randn(2, 3, 8), ember.randn(2, 5, 8)).shape  # (target, memory)
    (2, 3, 8)
    """

    _cross = True

    def _mha_block(self, x, mem, mask, kpm, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=mask, key_padding_mask=kpm,
                                need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(x)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerEncoder(Module):
    """``num_layers`` independent copies of ``encoder_layer`` and an optional final norm.

    >>> import ember
    >>> from ember import nn
    >>> layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    >>> encoder = nn.TransformerEncoder(layer, num_layers=2)
    >>> encoder(ember.randn(2, 5, 8)).shape, len(encoder.layers)
    ((2, 5, 8), 2)
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, **_ignored):
        super().__init__()
        self.layers = ModuleList([clone_module(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool | None = None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """``num_layers`` independent copies of ``decoder_layer`` and an optional final norm.

    >>> import ember
    >>> from ember import nn
    >>> layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    >>> nn.TransformerDecoder(layer, num_layers=2)(ember.randn(2, 3, 8), ember.randn(2, 5, 8)).shape
    (2, 3, 8)
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None):
        super().__init__()
        self.layers = ModuleList([clone_module(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x
