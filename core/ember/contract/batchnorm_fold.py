"""The arithmetic of folding an inference BatchNorm into the layer before it, written once.

An inference BatchNorm is a per-channel affine ``y = x * scale + shift`` with
``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale``; an affine after a
Conv/Linear (output channels on the weight's first axis) folds into it as
``w' = w * scale`` (per output channel) and ``b' = b * scale + shift``. Every fold goes
through these two functions (the module fold of ``ember.nn``, the microcontroller export,
the ONNX loader's Conv+BatchNormalization fusion and its numpy plan), in float64; callers cast
the results to the layer's dtype once, at the end. numpy is imported where used.

>>> scale, shift = batchnorm_affine([1.0], [3.0], 1.0, gamma=[2.0], beta=[0.5])
>>> scale.tolist(), shift.tolist()
([1.0], [-0.5])
>>> w, b = fold_affine_into([[1.0, 2.0]], [4.0], [3.0], [0.5])
>>> w.tolist(), b.tolist()
([[3.0, 6.0]], [12.5])
"""

from __future__ import annotations

from ..errors import ShapeError


def _vector(np, value, name: str, channels: int | None):
    v = np.asarray(value, dtype=np.float64)
    if v.ndim != 1 or (channels is not None and v.shape[0] != channels):
        want = "a vector" if channels is None else f"a vector of {channels} (one per channel)"
        raise ShapeError(f"batchnorm fold: {name} has shape {v.shape}; expected {want}")
    return v


def batchnorm_affine(mean, var, eps: float, gamma=None, beta=None):
    """``(scale, shift)``, float64 vectors, of an inference BatchNorm: ``y = x * scale +
    shift`` per channel. ``gamma``/``beta`` None: a norm without affine parameters.

    >>> scale, shift = batchnorm_affine([2.0, 0.0], [0.0, 3.0], 1.0)
    >>> scale.tolist(), shift.tolist()
    ([1.0, 0.5], [-2.0, -0.0])
    """
    import numpy as np

    mean = _vector(np, mean, "running mean", None)
    channels = mean.shape[0]
    scale = 1.0 / np.sqrt(_vector(np, var, "running var", channels) + float(eps))
    if gamma is not None:
        scale = scale * _vector(np, gamma, "weight (gamma)", channels)
    shift = -mean * scale
    if beta is not None:
        shift = shift + _vector(np, beta, "bias (beta)", channels)
    return scale, shift


def fold_affine_into(weight, bias, scale, shift):
    """``(weight', bias')``, float64, of a Conv/Linear (output channels on the weight's first
    axis; ``bias`` None: none) followed by ``x * scale + shift`` per output channel.

    >>> w, b = fold_affine_into([[1.0], [1.0]], None, [2.0, 3.0], [0.0, 1.0])
    >>> w.tolist(), b.tolist()
    ([[2.0], [3.0]], [0.0, 1.0])
    """
    import numpy as np

    weight = np.asarray(weight, dtype=np.float64)
    if weight.ndim < 1:
        raise ShapeError("batchnorm fold: the layer's weight is a scalar; expected output "
                         "channels on its first axis")
    channels = weight.shape[0]
    scale = _vector(np, scale, "scale", channels)
    shift = _vector(np, shift, "shift", channels)
    bias = np.zeros(channels) if bias is None else _vector(np, bias, "layer bias", channels)
    folded = weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
    return folded, bias * scale + shift
