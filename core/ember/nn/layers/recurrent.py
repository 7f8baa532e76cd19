"""LSTM and GRU with torch's parameter names and gate layouts (weights copy 1:1).

Per layer ``k`` and direction (suffix ``_reverse``): ``weight_ih_l{k}`` (G*H, in),
``weight_hh_l{k}`` (G*H, H), ``bias_ih_l{k}``, ``bias_hh_l{k}``; gates are ordered
(input, forget, cell, output) for LSTM and (reset, update, new) for GRU.
"""

from __future__ import annotations

import math

from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ._util import new_param


def _stack(ts: list[Tensor], dim: int = 0) -> Tensor:
    from ...ops import stack

    return stack(ts, dim=dim)


def _cat(ts: list[Tensor], dim: int) -> Tensor:
    from ...ops import cat

    return cat(ts, dim=dim)


class _RNNBase(Module):
    _gates = 4

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, backend=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        dirs = 2 if bidirectional else 1
        g = self._gates * hidden_size
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                setattr(self, "weight_ih" + sfx, new_param((g, in_size), backend, dtype))
                setattr(self, "weight_hh" + sfx, new_param((g, hidden_size), backend, dtype))
                if bias:
                    setattr(self, "bias_ih" + sfx, new_param((g,), backend, dtype))
                    setattr(self, "bias_hh" + sfx, new_param((g,), backend, dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw every weight and bias from U(-k, k), ``k = 1 / sqrt(hidden_size)`` (as PyTorch).

        >>> import ember
        >>> from ember import nn
        >>> lstm = nn.LSTM(3, 4)
        >>> for p in lstm.parameters():
        ...     _ = nn.init.zeros_(p)
        >>> lstm.reset_parameters()
        >>> all(bool((p.abs() <= 0.5).all() and p.abs().sum() > 0) for p in lstm.parameters())
        True
        """
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _weights(self, layer: int, d: int):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        return (getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx),
                getattr(self, "bias_ih" + sfx, None), getattr(self, "bias_hh" + sfx, None))

    def _cell(self, xw: Tensor, state, w_hh: Tensor, b_hh: Tensor | None):
        raise NotImplementedError

    def forward(self, input: Tensor, hx=None):
        from ...ops.creation import zeros

        name = type(self).__name__
        is_lstm = self._gates == 4
        unbatched = input.ndim == 2
        x = input.unsqueeze(1) if unbatched else (
            input if not self.batch_first else input.transpose(0, 1))  # (L, N, in)
        if x.ndim != 3 or x.shape[2] != self.input_size:
            raise ValueError(
                f"{name}: expected input (L, N, {self.input_size}) (or batch_first), got "
                f"shape {input.shape}"
            )
        seq_len, n, _ = x.shape
        dirs = 2 if self.bidirectional else 1
        hsz = self.hidden_size
        if hx is None:
            h0 = zeros((self.num_layers * dirs, n, hsz), dtype=x.dtype, backend=x.backend)
            c0 = h0
        else:
            h0, c0 = hx if is_lstm else (hx, None)
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
        h_out, c_out = [], []
        for layer in range(self.num_layers):
            outs_dir = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                idx = layer * dirs + d
                # the input projection of every step at once: one matmul
                xw = F.linear(x.reshape(seq_len * n, -1), w_ih, b_ih).reshape(seq_len, n, -1)
                state = (h0[idx], c0[idx]) if is_lstm else h0[idx]
                steps = range(seq_len - 1, -1, -1) if d else range(seq_len)
                outs: list[Tensor | None] = [None] * seq_len
                for t in steps:
                    state = self._cell(xw[t], state, w_hh, b_hh)
                    outs[t] = state[0] if is_lstm else state
                outs_dir.append(_stack(outs, 0))
                h_out.append(state[0] if is_lstm else state)
                if is_lstm:
                    c_out.append(state[1])
            x = outs_dir[0] if dirs == 1 else _cat(outs_dir, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        out = x.squeeze(1) if unbatched else (x.transpose(0, 1) if self.batch_first else x)
        h_n = _stack(h_out, 0)
        h_n = h_n.squeeze(1) if unbatched else h_n
        if not is_lstm:
            return out, h_n
        c_n = _stack(c_out, 0)
        return out, (h_n, c_n.squeeze(1) if unbatched else c_n)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class LSTM(_RNNBase):
    """Long short-term memory; ``forward(x, (h0, c0))`` returns ``(out, (h_n, c_n))``.

    >>> import ember
    >>> from ember import nn
    >>> out, (h, c) = nn.LSTM(4, 3, batch_first=True)(ember.zeros(2, 5, 4))
    >>> out.shape, h.shape
    ((2, 5, 3), (1, 2, 3))
    """

    _gates = 4

    def _cell(self, xw, state, w_hh, b_hh):
        h, c = state
        gates = xw + F.linear(h, w_hh, b_hh)
        hs = self.hidden_size
        i = gates[:, 0:hs].sigmoid()
        f = gates[:, hs:2 * hs].sigmoid()
        g = gates[:, 2 * hs:3 * hs].tanh()
        o = gates[:, 3 * hs:].sigmoid()
        c = f * c + i * g
        return o * c.tanh(), c


class GRU(_RNNBase):
    """Gated recurrent unit; ``forward(x, h0)`` returns ``(out, h_n)``.

    >>> import ember
    >>> from ember import nn
    >>> gru = nn.GRU(3, 5, batch_first=True)
    >>> out, h_n = gru(ember.zeros(2, 7, 3))
    >>> out.shape, h_n.shape
    ((2, 7, 5), (1, 2, 5))
    """

    _gates = 3

    def _cell(self, xw, h, w_hh, b_hh):
        hw = F.linear(h, w_hh, b_hh)
        hs = self.hidden_size
        r = (xw[:, 0:hs] + hw[:, 0:hs]).sigmoid()
        z = (xw[:, hs:2 * hs] + hw[:, hs:2 * hs]).sigmoid()
        n = (xw[:, 2 * hs:] + r * hw[:, 2 * hs:]).tanh()
        return (1 - z) * n + z * h
