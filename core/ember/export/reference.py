"""A numpy (float64) interpreter for exported programs, and post-training int8 quantisation.

The interpreter is the reference the MicroPython runtime is compared with; in int8 mode it
simulates the board exactly: inputs of int8 layers are quantised with the calibrated scale and
multiplied against the integer weights (exact in float64), then rescaled per output channel.
Weight-only layers run in float64 on their dequantized codes (``code * block scale``).
"""

from __future__ import annotations

import copy

from ..contract.rounding import round_codes_np
from . import format as fmt
from .ir import Layer, Program, _np


def _act(code: int, y):
    np = _np()
    if code == fmt.RELU:
        return np.maximum(y, 0.0)
    if code == fmt.RELU6:
        return np.clip(y, 0.0, 6.0)
    if code == fmt.SIGMOID:
        return 1.0 / (1.0 + np.exp(-y))
    if code == fmt.TANH:
        return np.tanh(y)
    if code == fmt.HARDSWISH:
        return y * np.clip(y + 3.0, 0.0, 6.0) / 6.0
    return y


def _windows(x, layer: Layer, fill: float):
    np = _np()
    xp = np.pad(x, ((0, 0), (0, 0), (layer.ph, layer.ph + layer.extra_h),
                    (layer.pw, layer.pw + layer.extra_w)), constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, (layer.kh, layer.kw), axis=(2, 3))
    oh, ow = layer.out_shape[1:]
    return win[:, :, ::layer.sh, ::layer.sw][:, :, :oh, :ow]  # (N, C, OH, OW, kh, kw)


def _conv(x, w, layer: Layer):
    np = _np()
    win = _windows(x, layer, 0.0)
    g = layer.groups
    cin_g, cout_g = x.shape[1] // g, w.shape[0] // g
    outs = [np.einsum("ncyxij,ocij->noyx", win[:, k * cin_g:(k + 1) * cin_g],
                      w[k * cout_g:(k + 1) * cout_g]) for k in range(g)]
    return np.concatenate(outs, axis=1)


def _quantize_input(x, scale: float):
    np = _np()
    # saturating like the board's kernels: inf clamps, NaN becomes 0 (round_code's rule)
    return round_codes_np(np.array(x / scale, dtype=np.float64), -127, 127)


def _weighted(x, layer: Layer, int8: bool):
    np = _np()
    use_q = int8 and layer.wdtype == fmt.INT8  # weight-only: float input, dequantized weight
    if use_q:
        x = _quantize_input(x, layer.in_scale)
        w = layer.w_q.astype(np.float64)
    else:
        w = layer.weight
    if layer.op == fmt.LINEAR:
        y = x.reshape(len(x), -1) @ w.T
        per_channel = (1, -1)
    else:
        y = _conv(x, w, layer)
        per_channel = (1, -1, 1, 1)
    if use_q:
        y = y * (layer.in_scale * layer.w_scale).reshape(per_channel)
    if layer.bias is not None:
        y = y + layer.bias.reshape(per_channel)
    return _act(layer.act, y)


def run(program: Program, x, *, int8: bool = True, observe=None):
    """Run ``program`` on a batch ``x`` (N, C, H, W) or (N, features); returns (N, outputs).

    ``int8=False`` runs the float weights even in a quantised program. ``observe(layer, x)`` is
    called with each layer's input (used for calibration).

    >>> import numpy as np
    >>> from ember import nn
    >>> from ember.export import lower, model_logits
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> x = np.random.default_rng(0).standard_normal((5, 1, 2, 2))
    >>> np.allclose(run(lower(model, (1, 2, 2)), x), model_logits(model, x), atol=1e-5)
    True
    """
    np = _np()
    x = np.asarray(x, dtype=np.float64)
    x = x.reshape((len(x),) + program.input_shape)
    slots: dict[int, object] = {}
    for layer in program.layers:
        if observe is not None:
            observe(layer, x)
        x = x.reshape((len(x),) + layer.in_shape)
        op = layer.op
        if op in (fmt.LINEAR, fmt.CONV2D):
            x = _weighted(x, layer, int8)
        elif op == fmt.MAXPOOL:
            x = _windows(x, layer, -np.inf).max(axis=(4, 5))
        elif op == fmt.AVGPOOL:
            total = _windows(x, layer, 0.0).sum(axis=(4, 5))
            if layer.count_pad:
                x = total / (layer.kh * layer.kw)
            else:
                ones = np.ones((1, 1) + layer.in_shape[1:])
                x = total / _windows(ones, layer, 0.0).sum(axis=(4, 5))
        elif op == fmt.GAP:
            x = x.mean(axis=(2, 3), keepdims=True)
        elif op == fmt.ACT:
            x = _act(layer.act, x)
        elif op == fmt.SOFTMAX:
            flat = x.reshape(len(x), -1)
            e = np.exp(flat - flat.max(axis=1, keepdims=True))
            x = e / e.sum(axis=1, keepdims=True)
        elif op == fmt.SAVE:
            slots[layer.slot] = x.copy()
        elif op == fmt.ADD:
            x = x + slots[layer.slot]
        x = x.reshape((len(x),) + layer.out_shape)
    return x.reshape(len(x), -1)


def quantize(program: Program, calibration, *, percentile: float = 100.0) -> Program:
    """A copy of ``program`` with int8 weights (per output channel, symmetric) and input
    activation scales calibrated on ``calibration`` (a batch of float inputs).

    The scale of each int8 layer's input is the ``percentile`` of |activation| / 127 (100 = the
    maximum, which never clips the calibration data).

    >>> import numpy as np
    >>> from ember import nn
    >>> from ember.export import lower
    >>> program = lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2))
    >>> x = np.random.default_rng(0).standard_normal((16, 1, 2, 2))
    >>> q = quantize(program, x)
    >>> q.quantized, q.layers[0].w_q.dtype.name, program.quantized  # a copy: the input is kept
    (True, 'int8', False)
    >>> float(np.abs(run(q, x) - run(program, x)).max()) < 0.1
    True
    """
    np = _np()
    q = copy.deepcopy(program)
    amax: dict[int, float] = {}

    def observe(layer, x):
        if layer.weighted:
            a = np.abs(x)
            v = float(a.max() if percentile >= 100 else np.percentile(a, percentile))
            amax[id(layer)] = max(amax.get(id(layer), 0.0), v)

    calib = np.asarray(calibration, dtype=np.float64)
    for start in range(0, len(calib), 256):
        run(q, calib[start:start + 256], int8=False, observe=observe)
    for layer in q.layers:
        if not layer.weighted:
            continue
        w = layer.weight
        flat = np.abs(w.reshape(len(w), -1)).max(axis=1)
        scale = np.where(flat > 0, flat / 127.0, 1.0)
        layer.w_scale = scale
        layer.w_q = round_codes_np(w / scale.reshape((-1,) + (1,) * (w.ndim - 1)),
                                   -127, 127).astype(np.int8)
        a = amax.get(id(layer), 0.0)
        layer.in_scale = a / 127.0 if a > 0 else 1.0
    return q
