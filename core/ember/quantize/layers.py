"""Quantized layers: ordinary modules whose state (codes, scales, zero points) is buffers,
so ``ember.save``/``ember.load`` keep it.

- :class:`QuantLinear`, :class:`QuantConv2d` (any ``groups``: depthwise too): int8 weights
  per output channel and an int8 input per tensor; the backend's integer kernel runs the
  layer and rescales (``qlinear``/``qconv`` ops, requantization fused in).
- :class:`WeightOnlyLinear`, :class:`WeightOnlyConv2d`: int8 or int4 codes per block, float
  activations; the weight is dequantized when the layer runs.

Zero points are recorded for the file's readers (ONNX's QuantizeLinear takes them); the
schemes are symmetric, so they are 0. A layer whose input is never negative may take
unsigned input codes (0..255, the ``*_u8`` ops): its ``input_unsigned`` buffer is 1.

>>> import ember
>>> from ember import nn
>>> q = QuantLinear.from_float(nn.Linear(4, 2), amax=1.0)
>>> q(ember.zeros(3, 4)).shape, q.weight.dtype.name
((3, 2), 'int8')
"""

from __future__ import annotations

from .. import dtype as dt
from ..nn import functional as F
from ..nn.module import Module
from ..ops.creation import tensor
from ..tensor import Tensor
from . import functional as QF
from .weights import pack_int4, per_block, per_channel


def _np(t: Tensor):
    import numpy as np

    return np.asarray(t.numpy(), dtype=np.float64)


def _on(values, like: Tensor, dtype) -> Tensor:
    import numpy as np

    return tensor(np.ascontiguousarray(values), dtype=dtype, backend=like.backend)


class _Static(Module):
    """The buffers and conversion shared by QuantLinear and QuantConv2d."""

    def _quantize(self, layer, amax: float | None, unsigned: bool = False,
                  weight_codes=None) -> None:
        """``amax``: the input range (None: zero placeholders for a record to be loaded into,
        made without numpy, as in a web page); ``unsigned``: codes 0..255 for a never-negative
        input; ``weight_codes``: ``(codes, scale per channel)`` chosen by the caller (GPTQ),
        else each weight's nearest code."""
        if amax is None:
            self._placeholders(layer)
            return
        import numpy as np

        w = layer.weight
        codes, scale = weight_codes or per_channel(_np(w))
        codes = np.asarray(codes).reshape(w.shape)
        levels = 255 if unsigned else 127
        self.register_buffer("weight", _on(codes, w, dt.int8))
        self.register_buffer("weight_scale", _on(scale, w, w.dtype))
        self.register_buffer("weight_zero_point", _on(np.zeros(len(codes)), w, dt.int8))
        self.register_buffer("input_scale",
                             _on([amax / levels if amax > 0 else 1.0], w, w.dtype))
        self.register_buffer("input_zero_point", _on([0], w, dt.int8))
        self.register_buffer("input_unsigned", _on([int(unsigned)], w, dt.uint8))
        # a zero bias rather than None: the layer then has one code path on every backend
        bias = np.zeros(len(codes)) if layer.bias is None else _np(layer.bias)
        self.register_buffer("bias", _on(bias, w, w.dtype))

    def _placeholders(self, layer) -> None:
        from ..ops.creation import ones, zeros

        w = layer.weight
        n, on = w.shape[0], {"backend": w.backend}
        for name, shape, dtype in (("weight", w.shape, dt.int8), ("weight_scale", (n,), w.dtype),
                                   ("weight_zero_point", (n,), dt.int8),
                                   ("input_scale", (1,), w.dtype),
                                   ("input_zero_point", (1,), dt.int8),
                                   ("input_unsigned", (1,), dt.uint8), ("bias", (n,), w.dtype)):
            make = ones if name.endswith("scale") else zeros
            self.register_buffer(name, make(tuple(shape), dtype=dtype, **on))

    def chain_to(self, out_scale, out_range: tuple[int, int]) -> None:
        """Make the layer end in codes at ``out_scale`` (the next quantized layer's input
        scale, a (1,) tensor) clamped to ``out_range`` — int8 activations kept in memory
        between layers (``ember.quantize`` does this where a chain allows it).

        >>> import ember
        >>> from ember import nn
        >>> q = QuantLinear.from_float(nn.Linear(4, 2), amax=1.0)
        >>> q.chain_to(ember.tensor([0.5]), (0, 255))
        >>> q(ember.ones(1, 4)).dtype.name
        'uint8'
        """
        from ..ops.creation import tensor as make

        self.register_buffer("output_scale", out_scale)
        self.register_buffer("output_range", make(list(out_range), dtype=dt.int32,
                                                  backend=out_scale.backend))

    def _prepared(self):
        """The layer's op on its input (:func:`.functional.qlinear_op`/``qconv2d_op``: the
        buffers checked once), prepared again when a buffer or setting is replaced (a loaded
        record, ``.to(backend)``, ``chain_to``)."""
        key = tuple(self.__dict__.get(name) for name in self._SETTINGS)
        cached = self.__dict__.get("_prepared_op")
        if cached is None or any(a is not b for a, b in zip(cached[0], key, strict=True)):
            cached = (key, self._prepare())
            self.__dict__["_prepared_op"] = cached
        return cached[1]

    #: what the prepared op depends on (compared by identity)
    _SETTINGS = ("weight", "weight_scale", "bias", "input_scale", "input_unsigned",
                 "output_scale", "output_range")

    def _out(self) -> dict:
        """The ``out_scale``/``out_range`` arguments of a chained layer (read once per
        buffer, like :attr:`unsigned`), or none."""
        bounds = self.__dict__.get("output_range")
        if bounds is None:
            return {}
        cached = self.__dict__.get("_range")
        if cached is None or cached[0] is not bounds:
            cached = (bounds, tuple(int(v) for v in bounds.tolist()))
            self.__dict__["_range"] = cached
        return {"out_scale": self.output_scale, "out_range": cached[1]}

    @property
    def unsigned(self) -> bool:
        """Unsigned input codes (the ``*_u8`` ops): the ``input_unsigned`` buffer, read once
        per buffer (a loaded record replaces it).

        >>> from ember import nn
        >>> QuantLinear.from_float(nn.Linear(4, 2), amax=1.0, unsigned=True).unsigned
        True
        """
        flag = self.input_unsigned
        cached = self.__dict__.get("_unsigned")
        if cached is None or cached[0] is not flag:
            cached = (flag, bool(flag.tolist()[0]))
            self.__dict__["_unsigned"] = cached
        return cached[1]


class QuantLinear(_Static):
    """Linear with int8 weights (per output channel) and int8 input (per tensor).

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import QuantLinear
    >>> fc = nn.Linear(4, 2)
    >>> x = ember.randn(3, 4, generator=ember.Generator(0))
    >>> q = QuantLinear.from_float(fc, amax=x.abs().max().item())
    >>> q(x).shape, bool((q(x) - fc(x)).abs().max() < 0.1)
    ((3, 2), True)
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features

    @classmethod
    def from_float(cls, linear, amax: float | None, unsigned: bool = False,
                   weight_codes=None) -> QuantLinear:
        """Quantize ``linear`` (an ``nn.Linear``); ``amax`` is its input's calibrated range
        (``unsigned``: codes 0..255, for an input never negative; ``weight_codes``: the
        weight's ``(codes, scale)`` if chosen already, e.g. by GPTQ)."""
        q = cls(linear.in_features, linear.out_features)
        q._quantize(linear, amax, unsigned, weight_codes)
        return q

    def forward(self, x: Tensor) -> Tensor:
        return self._prepared()(x)

    def _prepare(self):
        return QF.qlinear_op(self.weight, self.weight_scale, self.bias, self.input_scale,
                             self.unsigned, **self._out())

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, int8{'/u8' * self.unsigned}"


def _pairs(conv) -> tuple[tuple[int, int], ...]:
    """A Conv2d's padding as (before, after) pairs ('same' puts the odd one after)."""
    if conv.padding == "valid":
        return ((0, 0), (0, 0))
    if conv.padding == "same":
        totals = [d * (k - 1) for k, d in zip(conv.kernel_size, conv.dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in conv.padding)


class QuantConv2d(_Static):
    """Conv2d (depthwise too) with int8 weights per output channel and int8 input.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import QuantConv2d
    >>> conv = nn.Conv2d(1, 2, 3, padding=1)
    >>> x = ember.randn(2, 1, 5, 5, generator=ember.Generator(0))
    >>> q = QuantConv2d.from_float(conv, amax=x.abs().max().item())
    >>> q(x).shape, bool((q(x) - conv(x)).abs().max() < 0.1)
    ((2, 2, 5, 5), True)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 dilation, groups: int):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.dilation = kernel_size, stride, dilation
        self.padding, self.groups = padding, groups

    @classmethod
    def from_float(cls, conv, amax: float | None, unsigned: bool = False,
                   weight_codes=None) -> QuantConv2d:
        """Quantize ``conv`` (an ``nn.Conv2d``); ``amax`` is its input's calibrated range
        (``unsigned``: codes 0..255, for an input never negative; ``weight_codes``: the
        weight's ``(codes, scale)`` if chosen already, e.g. by GPTQ)."""
        q = cls(conv.in_channels, conv.out_channels, tuple(conv.kernel_size),
                tuple(conv.stride), _pairs(conv), tuple(conv.dilation), conv.groups)
        q._quantize(conv, amax, unsigned, weight_codes)
        return q

    _SETTINGS = (*_Static._SETTINGS, "stride", "padding", "dilation", "groups")

    def forward(self, x: Tensor) -> Tensor:
        return self._prepared()(x)

    def _prepare(self):
        return QF.qconv2d_op(self.weight, self.weight_scale, self.bias, self.input_scale,
                             self.stride, self.padding, self.dilation, self.groups,
                             self.unsigned, **self._out())

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, groups={self.groups}, int8{'/u8' * self.unsigned}")


class FoldedActivation(Module):
    """A ReLU/ReLU6 folded into the clamp of the quantized layer before it: codes (int8/uint8,
    that layer's output) pass as they are; a float input (that layer run unchained, or the
    activation reached another way) gets the activation.

    >>> import ember
    >>> from ember import nn
    >>> act = FoldedActivation(nn.ReLU6())
    >>> act(ember.tensor([7, 200], dtype=ember.uint8)).tolist(), act(ember.tensor([7.0])).tolist()
    ([7, 200], [6.0])
    """

    def __init__(self, act: Module):
        super().__init__()
        self.act = act

    def forward(self, x: Tensor) -> Tensor:
        return x if x.dtype in (dt.int8, dt.uint8) else self.act(x)


class _WeightOnly(Module):
    """Codes per block and their scales; ``dequantized()`` is the float weight."""

    bits = 8
    block = 64

    def _quantize(self, layer, bits: int, block: int, weight_codes=None) -> None:
        import numpy as np

        w = layer.weight
        self.weight_shape = tuple(w.shape)
        self.bits, self.block = bits, block
        codes, scale = weight_codes or per_block(_np(w), bits, block)
        if bits == 4:
            self.register_buffer("weight_q", _on(pack_int4(codes), w, dt.uint8))
        else:
            self.register_buffer("weight_q", _on(codes, w, dt.int8))
        self.register_buffer("weight_scale", _on(scale, w, w.dtype))
        # symmetric codes: one zero point (0) for every block, not one per block
        self.register_buffer("weight_zero_point", _on(np.zeros(1), w, dt.int8))
        bias = None if layer.bias is None else _on(_np(layer.bias), w, w.dtype)
        self.register_buffer("bias", bias)

    def dequantized(self) -> Tensor:
        """The float weight (codes × their block's scale), on the layer's backend.

        >>> from ember import nn
        >>> from ember.quantize import WeightOnlyLinear
        >>> fc = nn.Linear(8, 2)
        >>> q = WeightOnlyLinear.from_float(fc, bits=8, block=4)
        >>> bool((q.dequantized() - fc.weight).abs().max() < 0.01)  # step: 0.35 / 127
        True
        """
        from ..ops.shape_ops import cat

        n = self.weight_shape[0]
        k = 1
        for s in self.weight_shape[1:]:
            k *= s
        scale = self.weight_scale
        codes = self.weight_q.to(dt.int32)
        if self.bits == 4:
            hi = codes // 16
            pairs = cat([(codes - hi * 16).reshape(-1, 1), hi.reshape(-1, 1)], dim=1)
            codes = pairs.reshape(-1)[: n * k] - 8
        nb = scale.shape[1]
        full = scale.reshape(n, nb, 1).expand(n, nb, self.block).reshape(n, nb * self.block)
        w = codes.reshape(n, k).to(scale.dtype) * full[:, :k]
        return w.reshape(*self.weight_shape)


class WeightOnlyLinear(_WeightOnly):
    """Linear with int8/int4 weight codes per block and float activations.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import WeightOnlyLinear
    >>> fc = nn.Linear(8, 2)
    >>> q = WeightOnlyLinear.from_float(fc, bits=4, block=4)
    >>> x = ember.ones(1, 8)
    >>> q(x).tolist() == (x @ q.dequantized().T + fc.bias).tolist()
    True
    """

    @classmethod
    def from_float(cls, linear, bits: int, block: int, weight_codes=None) -> WeightOnlyLinear:
        """Quantize ``linear`` (an ``nn.Linear``) to ``bits``-bit codes, a scale per ``block``
        (``weight_codes``: ``(codes (C_out, K), scales)`` if chosen already, e.g. by GPTQ)."""
        q = cls()
        q._quantize(linear, bits, block, weight_codes)
        return q

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.dequantized(), self.bias)

    def extra_repr(self) -> str:
        return f"{self.weight_shape[1]}, {self.weight_shape[0]}, int{self.bits}/{self.block}"


class WeightOnlyConv2d(_WeightOnly):
    """Conv2d with int8/int4 weight codes per block and float activations.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import WeightOnlyConv2d
    >>> conv = nn.Conv2d(2, 3, 3)
    >>> q = WeightOnlyConv2d.from_float(conv, bits=8, block=6)
    >>> x = ember.randn(1, 2, 4, 4, generator=ember.Generator(0))
    >>> q(x).shape, bool((q(x) - conv(x)).abs().max() < 0.05)
    ((1, 3, 2, 2), True)
    """

    @classmethod
    def from_float(cls, conv, bits: int, block: int, weight_codes=None) -> WeightOnlyConv2d:
        """Quantize ``conv`` (an ``nn.Conv2d``) to ``bits``-bit codes, a scale per ``block``
        (``weight_codes``: ``(codes (C_out, K), scales)`` if chosen already, e.g. by GPTQ)."""
        q = cls()
        q.stride, q.padding, q.dilation = conv.stride, conv.padding, conv.dilation
        q.groups = conv.groups
        q._quantize(conv, bits, block, weight_codes)
        return q

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.dequantized(), self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    def extra_repr(self) -> str:
        return f"{self.weight_shape}, groups={self.groups}, int{self.bits}/{self.block}"
