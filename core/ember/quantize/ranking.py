"""Which layers int8 hurts most: each quantized layer put alone into the float model, the
output's change on the calibration data — the ranking mixed precision (``Calibration.keep_float``)
picks its float layers from.

>>> import ember
>>> from ember import nn
>>> model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
>>> ranking = sensitivity(model, ember.randn(64, 8, generator=ember.Generator(0)))
>>> sorted(path for path, _ in ranking)
['0', '2']
"""

from __future__ import annotations

from dataclasses import replace

from ..autodiff import no_grad
from ..nn.batchnorm_fold import fold_batchnorms
from ..nn.module import Module, clone_module
from .convert import _batches, quantize
from .scheme import Scheme


def _swap(model: Module, path: str, layer: Module) -> Module:
    """Put ``layer`` at ``path`` in ``model``; returns what was there."""
    *parents, name = path.split(".")
    parent = model
    for part in parents:
        parent = getattr(parent, part)
    old = getattr(parent, name)
    setattr(parent, name, layer)
    return old


def sensitivity(model: Module, calibration, scheme: str | dict | Scheme = "int8-u8"):
    """``[(path, error), ...]``, the most harmful first: for each layer ``scheme`` quantizes,
    the mean squared change of ``model``'s output on ``calibration`` when that layer alone is
    quantized (as the whole quantized model has it: ranges, GPTQ rounding, corrected bias).

    Keep the first few float with ``Calibration(keep_float=...)`` when the all-int8 model drifts
    too far from the float one; the ranking is measured on the calibration data only, so
    choosing from it does not peek at a test set.

    >>> import ember
    >>> from ember import nn
    >>> from ember.quantize import Calibration, Scheme, sensitivity
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> x = ember.randn(32, 4, generator=ember.Generator(1))
    >>> worst, error = sensitivity(model, x, "int8")[0]
    >>> q = ember.quantize(model, x, Scheme(calibration=Calibration(keep_float=(worst,))))
    >>> type(q[int(worst)]).__name__, error >= 0
    ('Linear', True)
    """
    import numpy as np

    # unchained: each layer goes back into the float model alone, with float neighbours
    scheme = Scheme.named(scheme)
    q = quantize(model, calibration, Scheme(replace(scheme.representation, chain=False),
                                            scheme.calibration))
    floats = dict(model.named_modules())
    batches = list(_batches(calibration))
    backend = next(iter(model.state_dict().values())).backend

    def outputs(m):
        from ..ops.creation import tensor

        with no_grad():
            return [m(b if hasattr(b, "backend") else tensor(b, backend=backend)).numpy()
                    for b in batches]

    model = _eval_copy(model)
    want = outputs(model)
    ranking = []
    for path, layer in q.named_modules():
        if path not in floats or type(layer) is type(floats[path]) or not hasattr(
                layer, "weight_scale"):
            continue
        old = _swap(model, path, layer)
        got = outputs(model)
        _swap(model, path, old)
        err = float(np.mean([np.mean((g - w) ** 2) for g, w in zip(got, want)]))
        ranking.append((path, err))
    return sorted(ranking, key=lambda item: -item[1])


def _eval_copy(model: Module) -> Module:
    """The float model as ``quantize`` sees it: a copy in eval mode with BatchNorms folded
    (so the quantized layers, which fold them, drop in where the float layers were)."""
    m = clone_module(model)
    m.eval()
    fold_batchnorms(m)
    return m
