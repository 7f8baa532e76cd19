"""Quantization: int8 models with integer kernels, and weight-only int8/int4 models.

``ember.quantize(model, calibration, scheme="int8")`` returns a quantized copy of a trained
module — an ordinary module that runs on every backend (each backend's integer kernel for
the ``qlinear``/``qconv`` ops), saves with :func:`save` (or ``ember.save``) and loads with
:func:`load`, and exports to the microcontroller format as it is (``ember.export``).

>>> import ember
>>> from ember import nn
>>> model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 10))
>>> x = ember.randn(8, 1, 6, 6)
>>> q = ember.quantize(model, x)
>>> [type(m).__name__ for m in q]  # the conv writes int8 codes, its ReLU folded in
['QuantConv2d', 'FoldedActivation', 'Flatten', 'QuantLinear']
>>> ember.quantize.size_bytes(q) < ember.quantize.size_bytes(model) / 3
True
"""

import sys
import types

from .convert import META_KEY, chain, load, quantize, save, size_bytes
from .distill import distill
from .layers import FoldedActivation, QuantConv2d, QuantLinear, WeightOnlyConv2d, WeightOnlyLinear
from .observers import Observer
from .qat import QATConv2d, QATLinear, convert_qat, prepare_qat
from .scheme import PRESETS, Calibration, Representation, Scheme
from .ranking import sensitivity


class _CallableModule(types.ModuleType):
    """``ember.quantize(model, ...)`` calls :func:`~ember.quantize.convert.quantize`."""

    def __call__(self, model, calibration=None, scheme="int8"):
        return quantize(model, calibration, scheme)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "META_KEY", "PRESETS", "Calibration", "FoldedActivation", "Observer", "QATConv2d",
    "QATLinear", "QuantConv2d", "QuantLinear", "Representation", "Scheme", "chain", "convert_qat", "distill", "prepare_qat",
    "WeightOnlyConv2d", "WeightOnlyLinear", "load", "quantize", "save", "sensitivity",
    "size_bytes",
]
