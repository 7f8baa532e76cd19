"""The optimizer steps of ai.onnx.preview.training: Adagrad, Adam, Momentum.

Each takes the learning rate R, the step count T, then the tensors X (parameters), G
(gradients) and the optimizer's state, n of each, and returns the new parameters followed by
the new states.
"""

from __future__ import annotations

import math

import ember

from . import op
from ._util import scalar


def _groups(tensors, k: int) -> list[list]:
    """Split X1..Xn, G1..Gn, ... into k lists of n."""
    n = len(tensors) // k
    return [list(tensors[i * n:(i + 1) * n]) for i in range(k)]


@op("ai.onnx.preview.training.Adagrad")
def adagrad(ctx, r, t, *tensors, decay_factor=0.0, epsilon=0.0, norm_coefficient=0.0):
    rate = float(scalar(r)) / (1 + int(scalar(t)) * decay_factor)
    xs, gs, hs = _groups(tensors, 3)
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        g = x * norm_coefficient + g
        h = h + g * g
        new_x.append(x - g * rate / (ember.sqrt(h) + epsilon))
        new_h.append(h)
    return tuple(new_x + new_h)


@op("ai.onnx.preview.training.Adam")
def adam(ctx, r, t, *tensors, alpha=0.9, beta=0.999, epsilon=0.0, norm_coefficient=0.0,
         norm_coefficient_post=0.0):
    step = int(scalar(t))
    rate = float(scalar(r))
    if step > 0:  # bias correction of both moments folded into the rate
        rate = rate * math.sqrt(1 - beta**step) / (1 - alpha**step)
    xs, gs, vs, hs = _groups(tensors, 4)
    out_x, out_v, out_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        g = x * norm_coefficient + g
        v = v * alpha + g * (1 - alpha)
        h = h * beta + g * g * (1 - beta)
        out_x.append((x - v / (ember.sqrt(h) + epsilon) * rate) * (1 - norm_coefficient_post))
        out_v.append(v)
        out_h.append(h)
    return tuple(out_x + out_v + out_h)


@op("ai.onnx.preview.training.Momentum")
def momentum(ctx, r, t, *tensors, alpha, beta, mode, norm_coefficient):
    rate = float(scalar(r))
    b = beta if int(scalar(t)) > 0 else 1.0
    xs, gs, vs = _groups(tensors, 3)
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs):
        g = x * norm_coefficient + g
        v = v * alpha + g * b
        step = g + v * alpha if mode == "nesterov" else v
        new_x.append(x - step * rate)
        new_v.append(v)
    return tuple(new_x + new_v)
