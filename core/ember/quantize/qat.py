"""Quantization-aware training: ``prepare_qat`` → train → ``convert_qat``.

:func:`prepare_qat` copies a float model (batch norms folded into the layer before them,
with their running statistics, exactly as :func:`~ember.quantize.quantize` folds them) and
replaces each Linear/Conv2d that the int8 scheme quantizes by :class:`QATLinear` /
:class:`QATConv2d`: the same layer, trainable, whose forward fake-quantizes its weight (per
output channel) and its input (per tensor) with :mod:`ember.quantize.fake_quant` — the
int8 model's values, straight-through gradients. The input range starts from the observer on
``calibration`` (or the first training batch) and follows an exponential moving average of
each training batch's largest magnitude; in ``eval()`` mode it stays fixed.

:func:`convert_qat` turns the trained copy into the modules PTQ produces
(:class:`~ember.quantize.QuantLinear` / :class:`~ember.quantize.QuantConv2d` with the learned
weights and input ranges): it runs the backends' int8 kernels, saves with
``ember.quantize.save``, loads with ``ember.quantize.load`` and exports to the
microcontroller format like any ``quantize()`` result.

>>> import ember
>>> from ember import nn, optim
>>> ad = "autodiff-numpy"
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(ad)
>>> x, y = ember.randn(32, 4, backend=ad), ember.randn(32, 2, backend=ad)
>>> qat = prepare_qat(model, x)
>>> opt = optim.SGD(qat.parameters(), lr=0.01)
>>> for _ in range(3):
...     opt.step(((qat(x) - y) ** 2).mean().backward())
>>> q = convert_qat(qat)
>>> [type(m).__name__ for m in q]
['QuantLinear', 'FoldedActivation', 'QuantLinear']
>>> bool((q(x) - qat.eval()(x)).abs().max() < 1e-5)  # the int8 model computes what QAT saw
True
"""

from __future__ import annotations

from ..autodiff import no_grad
from ..contract.quantized import code_range
from ..nn import functional as F
from ..nn.layers.conv import Conv2d
from ..nn.layers.linear import Linear
from ..nn.module import Module
from ..ops.creation import tensor
from ..ops.where import where
from ..tensor import Tensor
from ..nn.batchnorm_fold import fold_batchnorms
from ..nn.module import clone_module
from .convert import _calibrate, _targets, chain
from .fake_quant import codes, fake_quantize, fake_quantize_learned, fake_quantize_weight
from .layers import QuantConv2d, QuantLinear
from .scheme import Scheme

MOMENTUM = 0.01  # the weight of each training batch in the input range's moving average


class _FakeQuantized:
    """The input range (buffer ``input_amax``, shape (1,)) and the fake-quantized forward
    inputs shared by QATLinear and QATConv2d."""

    momentum = MOMENTUM
    unsigned = False  # input codes 0..255 (the ``*_u8`` ops) instead of -127..127

    def _adopt(self, layer: Module, amax: float, unsigned: bool, momentum: float) -> None:
        """Take ``layer``'s parameters (the same tensors); start the range at ``amax``."""
        self.weight = layer.weight
        self.bias = layer.bias
        self.unsigned, self.momentum = unsigned, momentum
        w = layer.weight
        self.register_buffer("input_amax", tensor([amax], dtype=w.dtype, backend=w.backend))
        self.train(layer.training)

    def _observe(self, x: Tensor) -> None:
        """Move the range towards this batch's largest |x| (the first batch sets it)."""
        with no_grad():
            peak = x.detach().abs().amax().reshape(1).astype(self.input_amax.dtype)
            old = self.input_amax
            self.input_amax = where(old > 0, old * (1 - self.momentum) + peak * self.momentum,
                                    peak)

    def input_scale(self) -> Tensor:
        """The input's step, ``input_amax / 127`` (``/ 255`` unsigned; 1 before any range is
        known): the ``input_scale`` of the converted layer.

        >>> from ember import nn
        >>> from ember.quantize import QATLinear
        >>> QATLinear.from_float(nn.Linear(2, 1), amax=2.54).input_scale().tolist()
        [0.019999999552965164]
        """
        with no_grad():
            amax = self.input_amax
            return where(amax > 0, amax / code_range(self.unsigned)[1], 1.0)

    def _fake_inputs(self, x: Tensor) -> tuple[Tensor, Tensor]:
        lo, hi = code_range(self.unsigned)
        # a fixed per-channel weight scale (buffer ``weight_scale``) and a learned input range
        # (Parameter ``input_log_amax``, its log): set by ember.quantize.distill
        w = fake_quantize_weight(self.weight, self.__dict__.get("weight_scale"))
        log_amax = self.__dict__.get("input_log_amax")
        if log_amax is not None:
            return fake_quantize_learned(x, log_amax.exp() / hi, lo, hi), w
        if self.training:
            self._observe(x)
        return fake_quantize(x, self.input_scale(), lo, hi), w


class QATLinear(_FakeQuantized, Linear):
    """A Linear trained with fake-quantized int8 weight (per output channel) and input (per
    tensor); :func:`convert_qat` turns it into a :class:`~ember.quantize.QuantLinear`.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import QATLinear
    >>> fc = QATLinear.from_float(nn.Linear(3, 2), amax=1.0)
    >>> fc.eval()(ember.ones(4, 3)).shape, fc.input_amax.tolist()
    ((4, 2), [1.0])
    """

    @classmethod
    def from_float(cls, linear: Linear, amax: float = 0.0, unsigned: bool = False,
                   momentum: float = MOMENTUM) -> QATLinear:
        """Wrap ``linear`` (sharing its parameters); ``amax``: its input's calibrated range
        (0: taken from the first training batch); ``unsigned``: codes 0..255 for an input
        that is never negative; ``momentum``: see :func:`prepare_qat`."""
        q = cls.__new__(cls)
        Module.__init__(q)
        q.in_features, q.out_features = linear.in_features, linear.out_features
        q._adopt(linear, amax, unsigned, momentum)
        return q

    def forward(self, x: Tensor) -> Tensor:
        x, w = self._fake_inputs(x)
        return F.linear(x, w, self.bias)

    def extra_repr(self) -> str:
        return super().extra_repr() + ", fake int8"


class QATConv2d(_FakeQuantized, Conv2d):
    """A Conv2d (depthwise too) trained with fake-quantized int8 weight and input;
    :func:`convert_qat` turns it into a :class:`~ember.quantize.QuantConv2d`.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import QATConv2d
    >>> conv = QATConv2d.from_float(nn.Conv2d(1, 2, 3, padding=1), amax=1.0)
    >>> conv.eval()(ember.ones(1, 1, 5, 5)).shape
    (1, 2, 5, 5)
    """

    @classmethod
    def from_float(cls, conv: Conv2d, amax: float = 0.0, unsigned: bool = False,
                   momentum: float = MOMENTUM) -> QATConv2d:
        """Wrap ``conv`` (sharing its parameters); the rest as in
        :meth:`QATLinear.from_float`."""
        q = cls.__new__(cls)
        Module.__init__(q)
        for name in ("in_channels", "out_channels", "groups", "kernel_size", "stride",
                     "padding", "dilation", "output_padding", "padding_mode"):
            setattr(q, name, getattr(conv, name))
        q._adopt(conv, amax, unsigned, momentum)
        return q

    def forward(self, x: Tensor) -> Tensor:
        x, w = self._fake_inputs(x)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        return super().extra_repr() + ", fake int8"


def prepare_qat(model: Module, calibration=None, scheme: str | dict | Scheme = "int8",
                momentum: float = MOMENTUM) -> Module:
    """A trainable copy of ``model`` (left as it is) with fake int8 quantization in every
    Linear/Conv2d that ``quantize(model, calibration, scheme)`` would quantize.

    Batch norms after a Conv2d/Linear are folded into it first (their running statistics;
    the folded copy trains without them). ``calibration`` (as in
    :func:`~ember.quantize.quantize`) sets each input's starting range with the scheme's
    observer; without it the first training batch does. During training each range follows
    a moving average of the batches' largest magnitudes (``momentum``: each batch's weight;
    0 keeps the calibrated ranges). ``scheme`` must quantize activations (``"int8"``:
    static int8 layers); with ``unsigned`` set, inputs never negative on the calibration
    data get codes 0..255 as in PTQ. ``bias_correction`` is not applied: training absorbs
    the weights' rounding error. The copy is in training mode, on ``model``'s backend: put
    it on an Autodiff backend to train it.

    >>> import ember
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    >>> [type(m).__name__ for m in prepare_qat(model, ember.randn(8, 1, 5, 5))]
    ['QATConv2d', 'Identity', 'ReLU']
    """
    scheme = Scheme.named(scheme)
    if not scheme.representation.activations:
        raise ValueError(f"prepare_qat: scheme {scheme} is weight-only; quantization-aware "
                         "training fakes the int8 layers of schemes with int8/uint8 "
                         "activations (e.g. 'int8')")
    if not 0 <= momentum <= 1:
        raise ValueError(f"prepare_qat: momentum must be in [0, 1], got {momentum}")
    qat = clone_module(model)
    fold_batchnorms(qat)
    targets = _targets(qat, scheme)
    seen = _calibrate(qat, targets, calibration, scheme)[0]  # (inputs, outputs)
    for parent, name, layer in targets:
        obs = seen[id(layer)]
        # PTQ's rule (ember.quantize.convert.quantize): unsigned codes need the calibration
        unsigned = (scheme.representation.activations == "uint8" and obs.low >= 0
                    and calibration is not None)
        kind = QATConv2d if isinstance(layer, Conv2d) else QATLinear
        setattr(parent, name, kind.from_float(layer, obs.amax(code_range(unsigned)[1]),
                                              unsigned, momentum))
    qat.scheme = scheme
    return qat.train()


def _fixed_codes(layer: _FakeQuantized):
    """``(codes, scale)`` of a layer trained with a fixed weight scale: the codes its fake
    quantization used (the same tensor ops); None (the nearest codes at max |w| / 127)
    otherwise."""
    scale = layer.__dict__.get("weight_scale")
    if scale is None:
        return None
    with no_grad():
        w = layer.weight.detach()
        return codes(w, scale).numpy().astype("int8"), scale.reshape(-1).numpy()


def convert_qat(model: Module) -> Module:
    """The int8 model of a :func:`prepare_qat` copy (which is left as it is): each QAT layer
    becomes the QuantLinear/QuantConv2d that PTQ makes, from its trained weight and its
    tracked input range; the rest is copied as it is, in eval mode.

    >>> import ember
    >>> from ember import nn
    >>> qat = prepare_qat(nn.Sequential(nn.Linear(4, 2)), ember.randn(8, 4))
    >>> q = convert_qat(qat)
    >>> type(q[0]).__name__, q.scheme.representation.weights
    ('QuantLinear', 'int8')
    """
    scheme = getattr(model, "scheme", None)
    if scheme is None:
        raise ValueError("convert_qat: the model is not a prepare_qat() result (no scheme)")
    q = clone_module(model).eval()
    for parent in list(q.modules()):
        for name, child in list(parent._own_modules()):
            if isinstance(child, _FakeQuantized):
                kind = QuantConv2d if isinstance(child, Conv2d) else QuantLinear
                setattr(parent, name, kind.from_float(child, child.input_amax.item(),
                                                      child.unsigned, _fixed_codes(child)))
    if scheme.representation.chain:
        chain(q)
    q.scheme = scheme
    return q
