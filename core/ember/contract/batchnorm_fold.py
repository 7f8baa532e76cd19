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


def per_channel(c, weight):
    """``c`` (numpy) as one value per output channel of a Conv with ``weight``, when ``c``
    broadcast onto the conv's output (N, C_out, *spatial) is constant over every dim but
    C_out (and has no batch dim of its own); None otherwise.

    >>> import numpy as np
    >>> per_channel(np.arange(2.0).reshape(1, 2, 1, 1) + np.zeros((1, 2, 3, 3)),
    ...             np.ones((2, 1, 3, 3))).tolist()
    [0.0, 1.0]
    """
    import numpy as np

    nd = weight.ndim
    if c.ndim > nd:
        return None
    ce = c.reshape((1,) * (nd - c.ndim) + c.shape)
    if ce.shape[0] != 1 or ce.shape[1] not in (1, weight.shape[0]):
        return None
    vec = ce[(0, slice(None)) + (0,) * (nd - 2)]
    if not np.array_equal(ce, np.broadcast_to(vec.reshape((1, -1) + (1,) * (nd - 2)),
                                              ce.shape)):
        return None
    return np.broadcast_to(vec, (weight.shape[0],))


def fold_chain_into(weight, bias, chain):
    """``(weight', bias')`` in the weight's dtype, of a Conv followed by ``chain``: ``(op,
    constant)`` pairs, op one of "add", "sub", "mul", "div" (the conv's output on the left),
    each constant :func:`per_channel`; composed into one affine ``y * s + t`` in float64.

    >>> import numpy as np
    >>> w, b = fold_chain_into(np.ones((2, 1, 1, 1), np.float32), None,
    ...                        [("sub", np.array([1.0, 2.0]).reshape(1, 2, 1, 1)),
    ...                         ("mul", np.full((1, 2, 1, 1), 3.0))])
    >>> w.ravel().tolist(), b.tolist(), w.dtype.name
    ([3.0, 3.0], [-3.0, -6.0], 'float32')
    """
    w2, b2 = fold_affine_into(weight, bias, *chain_affine(weight, chain))
    return w2.astype(weight.dtype), b2.astype(weight.dtype)


def chain_affine(weight, chain):
    """``(s, t)``, float64 per-channel vectors: ``chain`` (``(op, constant)`` pairs as for
    :func:`fold_chain_into`, each constant :func:`per_channel` for ``weight``) applied to
    ``y`` is ``y * s + t`` (channel by channel).

    >>> import numpy as np
    >>> s, t = chain_affine(np.ones((2, 1, 1, 1)), [("add", np.full((1, 2, 1, 1), 1.0)),
    ...                                             ("div", np.full((1, 2, 1, 1), 4.0))])
    >>> s.tolist(), t.tolist()
    ([0.25, 0.25], [0.25, 0.25])
    """
    import numpy as np

    s, t = np.ones(weight.shape[0]), np.zeros(weight.shape[0])
    for op, c in chain:
        k = per_channel(c, weight).astype(np.float64)
        if op == "add":
            t = t + k
        elif op == "sub":
            t = t - k
        elif op == "mul":
            s, t = s * k, t * k
        else:
            s, t = s / k, t / k
    return s, t
