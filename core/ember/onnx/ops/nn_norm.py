"""Normalization layers: BatchNormalization ... RMSNormalization, LRN."""

from __future__ import annotations

import ember
from ember.nn import functional as F

from . import op
from ._util import axis as _axis


def _channel(v, nd):
    return v.reshape([-1] + [1] * (nd - 2))


@op("BatchNormalization")
def batch_norm(ctx, x, scale, b, mean, var, epsilon=1e-5, momentum=0.9, training_mode=0,
               spatial=1, is_test=None, consumed_inputs=None):
    nd = x.ndim
    if training_mode:
        dims = tuple(i for i in range(nd) if i != 1)
        cur_mean = ember.mean(x, dim=dims)
        cur_var = ember.var(x, dim=dims, correction=0)
        y = (x - _channel(cur_mean, nd)) / ember.sqrt(_channel(cur_var, nd) + epsilon)
        y = y * _channel(scale, nd) + _channel(b, nd)
        run_mean = mean * momentum + cur_mean * (1 - momentum)
        run_var = var * momentum + cur_var * (1 - momentum)
        return y, run_mean, run_var
    inv = scale / ember.sqrt(var + epsilon)
    return x * _channel(inv, nd) + _channel(b - mean * inv, nd)


@op("InstanceNormalization")
def instance_norm(ctx, x, scale, b, epsilon=1e-5):
    dims = tuple(range(2, x.ndim))
    m = ember.mean(x, dim=dims, keepdim=True)
    v = ember.mean((x - m) * (x - m), dim=dims, keepdim=True)
    return (x - m) / ember.sqrt(v + epsilon) * _channel(scale, x.ndim) + _channel(b, x.ndim)


@op("LayerNormalization")
def layer_norm(ctx, x, scale, b=None, axis=-1, epsilon=1e-5, stash_type=1):
    a = _axis(axis, x.ndim)
    dims = tuple(range(a, x.ndim))
    shape = tuple(x.shape[a:])
    if (ctx.n_outputs == 1 and x.dtype in (ember.float32, ember.float64)
            and tuple(scale.shape) == shape and (b is None or tuple(b.shape) == shape)):
        # only Y is read: the backend's fused layer_norm (one pass fewer per step)
        return F.layer_norm(x, shape, scale, b, eps=epsilon)
    xf = x.astype(ember.float32) if stash_type == 1 and x.dtype != ember.float64 else x
    m = ember.mean(xf, dim=dims, keepdim=True)
    d = xf - m
    inv = ember.rsqrt(ember.mean(d * d, dim=dims, keepdim=True) + epsilon)
    y = (d * inv).astype(x.dtype) * scale
    if b is not None:
        y = y + b
    return y, m, inv


@op("GroupNormalization")
def group_norm(ctx, x, scale, b, epsilon=1e-5, num_groups=1, stash_type=1):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    m = ember.mean(g, dim=2, keepdim=True)
    v = ember.mean((g - m) * (g - m), dim=2, keepdim=True)
    y = ((g - m) / ember.sqrt(v + epsilon)).reshape(x.shape)
    if scale.shape[0] != c:  # opset 18 gave one scale per group
        scale = scale.repeat_interleave(c // num_groups) if hasattr(scale, "repeat_interleave") \
            else scale.reshape(-1, 1).expand(num_groups, c // num_groups).reshape(-1)
        b = b.reshape(-1, 1).expand(num_groups, c // num_groups).reshape(-1)
    return y * _channel(scale, x.ndim) + _channel(b, x.ndim)


@op("RMSNormalization")
def rms_norm(ctx, x, scale, axis=-1, epsilon=1e-5, stash_type=1):
    a = _axis(axis, x.ndim)
    dims = tuple(range(a, x.ndim))
    xf = x.astype(ember.float32) if stash_type == 1 and x.dtype != ember.float64 else x
    inv = ember.rsqrt(ember.mean(xf * xf, dim=dims, keepdim=True) + epsilon)
    return (xf * inv).astype(x.dtype) * scale


@op("LpNormalization")
def lp_norm(ctx, x, axis=-1, p=2):
    a = _axis(axis, x.ndim)
    if p == 1:
        n = ember.sum(ember.abs(x), dim=a, keepdim=True)
    else:
        n = ember.sqrt(ember.sum(x * x, dim=a, keepdim=True))
    return ember.where(n == 0, ember.zeros_like(x), x / n)


@op("MeanVarianceNormalization")
def mvn(ctx, x, axes=(0, 2, 3)):
    dims = tuple(_axis(a, x.ndim) for a in axes)
    m = ember.mean(x, dim=dims, keepdim=True)
    v = ember.mean(x * x, dim=dims, keepdim=True) - m * m
    return (x - m) / (ember.sqrt(v) + 1e-9)


@op("LRN")
def lrn(ctx, x, size, alpha=1e-4, beta=0.75, bias=1.0):
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = x * x
    pad = [0, 0] * (x.ndim - 2) + [lo, hi]
    sp = ember.pad(sq, pad)
    total = None
    for i in range(size):
        part = sp[:, i:i + c]
        total = part if total is None else total + part
    return x / ember.pow(total * (alpha / size) + bias, beta)
