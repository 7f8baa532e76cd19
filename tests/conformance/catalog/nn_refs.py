"""numpy float64 references for ember.nn.functional (PyTorch semantics, N-d by window slicing)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..build import erf


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _windows(xp, k, out, stride, dilation):
    """For each kernel offset: the slice of padded input it meets at every output position."""
    nd = len(k)
    for offs in itertools.product(*(range(kk) for kk in k)):
        sl = tuple(
            slice(o * dilation[i], o * dilation[i] + stride[i] * (out[i] - 1) + 1, stride[i])
            for i, o in enumerate(offs)
        )
        yield offs, xp[(Ellipsis,) + sl] if nd else xp


def conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    nd = x.ndim - 2
    k = w.shape[2:]
    stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
    if padding == "valid":
        pads = [(0, 0)] * nd
    elif padding == "same":
        pads = []
        for i in range(nd):
            total = dilation[i] * (k[i] - 1)
            pads.append((total // 2, total - total // 2))
    else:
        pads = [(p, p) for p in _tuple(padding, nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    out = tuple(
        (xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)
    )
    cin_g, cout_g = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0]) + out)
    for gi in range(groups):
        xs = xp[:, gi * cin_g : (gi + 1) * cin_g]
        ws = w[gi * cout_g : (gi + 1) * cout_g]
        for offs, win in _windows(xs, k, out, stride, dilation):
            y[:, gi * cout_g : (gi + 1) * cout_g] += np.einsum(
                "nc...,oc->no...", win, ws[(slice(None), slice(None)) + offs]
            )
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nd = x.ndim - 2
    k = w.shape[2:]
    stride, padding = _tuple(stride, nd), _tuple(padding, nd)
    output_padding, dilation = _tuple(output_padding, nd), _tuple(dilation, nd)
    ins = x.shape[2:]
    full = tuple(
        (ins[i] - 1) * stride[i] + dilation[i] * (k[i] - 1) + 1 + output_padding[i]
        for i in range(nd)
    )
    cin_g, cout_g = x.shape[1] // groups, w.shape[1]
    y = np.zeros((x.shape[0], cout_g * groups) + full)
    for gi in range(groups):
        xs = x[:, gi * cin_g : (gi + 1) * cin_g]
        ws = w[gi * cin_g : (gi + 1) * cin_g]
        for offs in itertools.product(*(range(kk) for kk in k)):
            sl = tuple(
                slice(o * dilation[i], o * dilation[i] + stride[i] * (ins[i] - 1) + 1, stride[i])
                for i, o in enumerate(offs)
            )
            y[(slice(None), slice(gi * cout_g, (gi + 1) * cout_g)) + sl] += np.einsum(
                "nc...,co->no...", xs, ws[(slice(None), slice(None)) + offs]
            )
    crop = tuple(slice(padding[i], full[i] - padding[i]) for i in range(nd))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y


def pool(x, kernel, stride=None, padding=0, nd=2, kind="max", count_include_pad=True):
    k = _tuple(kernel, nd)
    stride = _tuple(stride if stride is not None else kernel, nd)
    padding = _tuple(padding, nd)
    fill = -np.inf if kind == "max" else 0.0
    pads = [(0, 0)] * (x.ndim - nd) + [(p, p) for p in padding]
    xp = np.pad(x, pads, constant_values=fill)
    ones = np.pad(np.ones(x.shape[-nd:]), [(p, p) for p in padding])
    out = tuple((xp.shape[x.ndim - nd + i] - k[i]) // stride[i] + 1 for i in range(nd))
    wins = [w for _, w in _windows(xp, k, out, stride, (1,) * nd)]
    if kind == "max":
        return np.max(np.stack(wins), axis=0)
    total = np.sum(np.stack(wins), axis=0)
    if count_include_pad:
        return total / math.prod(k)
    counts = np.sum(np.stack([w for _, w in _windows(ones, k, out, stride, (1,) * nd)]), axis=0)
    return total / counts


def adaptive_avg(x, out, nd):
    out = _tuple(out, nd)
    ins = x.shape[-nd:]
    y = np.zeros(x.shape[:-nd] + out)
    for pos in itertools.product(*(range(o) for o in out)):
        sl = tuple(
            slice(math.floor(p * ins[i] / out[i]), math.ceil((p + 1) * ins[i] / out[i]))
            for i, p in enumerate(pos)
        )
        y[(Ellipsis,) + pos] = x[(Ellipsis,) + sl].mean(axis=tuple(range(-nd, 0)))
    return y


def interp_nearest(x, size):
    nd = len(size)
    for i in range(nd):
        axis = x.ndim - nd + i
        n_in = x.shape[axis]
        src = np.minimum(np.floor(np.arange(size[i]) * (n_in / size[i])).astype(int), n_in - 1)
        x = np.take(x, src, axis=axis)
    return x


def interp_linear(x, size, align_corners=False):
    nd = len(size)
    for i in range(nd):
        axis = x.ndim - nd + i
        n_in, n_out = x.shape[axis], size[i]
        dst = np.arange(n_out, dtype=np.float64)
        if align_corners:
            src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
        else:
            src = np.maximum((dst + 0.5) * (n_in / n_out) - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = (src - i0).reshape((-1,) + (1,) * (x.ndim - axis - 1))
        x = np.take(x, i0, axis=axis) * (1 - lam) + np.take(x, i1, axis=axis) * lam
    return x


def softmax(x, dim):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def log_softmax(x, dim):
    m = np.max(x, axis=dim, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "relu6": lambda x: np.clip(x, 0.0, 6.0),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "gelu": lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
    "silu": lambda x: x * sigmoid(x),
    "softplus": softplus,
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0.0, 1.0),
    "hard_swish": lambda x: x * np.clip(x / 6 + 0.5, 0.0, 1.0),
    "mish": lambda x: x * np.tanh(softplus(x)),
    "sigmoid": sigmoid,
    "tanh": np.tanh,
}


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(-len(shape), 0))
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def batch_norm(x, mean, var, w=None, b=None, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y
