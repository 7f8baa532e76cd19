"""Elementwise arithmetic, math functions and activations."""

from __future__ import annotations

import math

import ember
from ember.nn import functional as F

from . import op
from ._util import like, scalar


def _same(x, y, broadcast=0, axis=None):
    """ONNX binary ops take one dtype; keep x's (ember would promote weak mixes). Opsets < 7
    aligned a smaller ``y`` at ``axis`` when ``broadcast=1``."""
    y = y if y.dtype == x.dtype else y.astype(x.dtype)
    if broadcast and axis is not None and y.ndim:
        a = axis + x.ndim if axis < 0 else axis
        y = y.reshape(list(y.shape) + [1] * (x.ndim - a - y.ndim))
    return y


@op("Add")
def add(ctx, a, b, broadcast=0, axis=None):
    return a + _same(a, b, broadcast, axis)


@op("Sub")
def sub(ctx, a, b, broadcast=0, axis=None):
    return a - _same(a, b, broadcast, axis)


@op("Mul")
def mul(ctx, a, b, broadcast=0, axis=None):
    return a * _same(a, b, broadcast, axis)


@op("Div")
def div(ctx, a, b, broadcast=0, axis=None):
    b = _same(a, b, broadcast, axis)
    if a.dtype.is_float:
        return a / b
    return ember.div(a, b, rounding_mode="trunc").astype(a.dtype)


@op("Mod")
def mod(ctx, a, b, fmod=0):
    b = _same(a, b)
    if fmod:
        q = ember.div(a, b, rounding_mode="trunc")
        return (a - q * b).astype(a.dtype)
    return ember.remainder(a, b)


@op("Pow")
def pow_(ctx, x, y, broadcast=0, axis=None):
    y = _same(x, y, broadcast, axis) if broadcast else y
    if x.dtype.is_float:
        return ember.pow(x, y.astype(x.dtype))
    wide = ember.float64 if ember.float64 in x.backend.caps.dtypes else ember.float32
    return ember.pow(x.astype(wide), y.astype(wide)).round().astype(x.dtype)


def _variadic(fn):
    def run(ctx, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, _same(out, x))
        return out

    return run


op("Max")(_variadic(ember.maximum))
op("Min")(_variadic(ember.minimum))
op("Sum")(_variadic(lambda a, b: a + b))


@op("Mean")
def mean(ctx, *xs):
    return _variadic(lambda a, b: a + b)(ctx, *xs) / len(xs)


@op("Neg")
def neg(ctx, x):
    return -x


@op("Abs")
def abs_(ctx, x):
    return ember.abs(x)


@op("Sign")
def sign(ctx, x):
    return ember.sign(x)


@op("Reciprocal")
def reciprocal(ctx, x):
    return ember.reciprocal(x)


def _unary(name, fn):
    op(name)(lambda ctx, x: fn(x))


for _name, _fn in {
    "Exp": ember.exp, "Log": ember.log, "Sqrt": ember.sqrt, "Floor": ember.floor,
    "Ceil": ember.ceil, "Round": ember.round, "Sin": ember.sin, "Cos": ember.cos,
    "Tan": ember.tan, "Asin": ember.asin, "Acos": ember.acos, "Atan": ember.atan,
    "Sinh": ember.sinh, "Cosh": ember.cosh, "Erf": ember.erf, "Sigmoid": ember.sigmoid,
    "Tanh": ember.tanh, "Relu": F.relu, "IsNaN": ember.isnan, "Softsign": lambda x: x / (
        1 + ember.abs(x)),
    "Asinh": lambda x: ember.log(x + ember.sqrt(x * x + 1)),
    "Acosh": lambda x: ember.log(x + ember.sqrt(x * x - 1)),
    "Atanh": lambda x: 0.5 * ember.log((1 + x) / (1 - x)),
    "Mish": lambda x: x * ember.tanh(_softplus(x)),
    "HardSwish": lambda x: x * ember.clamp(x / 6 + 0.5, 0.0, 1.0),
}.items():
    _unary(_name, _fn)


def _softplus(x):
    # log(1 + exp(x)) without overflow for large x
    return ember.maximum(x, like(x, 0)) + ember.log1p(ember.exp(-ember.abs(x)))


@op("Softplus")
def softplus(ctx, x):
    return _softplus(x)


@op("IsInf")
def isinf(ctx, x, detect_negative=1, detect_positive=1):
    pos = x == math.inf if detect_positive else ember.zeros_like(x, dtype=ember.bool)
    neg_ = x == -math.inf if detect_negative else ember.zeros_like(x, dtype=ember.bool)
    return pos | neg_


@op("LeakyRelu")
def leaky_relu(ctx, x, alpha=0.01):
    return ember.where(x >= 0, x, x * alpha)


@op("PRelu")
def prelu(ctx, x, slope):
    if slope.ndim == 1 and x.ndim > 2 and slope.shape[0] == x.shape[1] != x.shape[-1]:
        slope = slope.reshape([-1] + [1] * (x.ndim - 2))  # opset < 7: per-channel slopes
    return ember.where(x >= 0, x, x * _same(x, slope))


@op("Elu")
def elu(ctx, x, alpha=1.0):
    return ember.where(x > 0, x, alpha * (ember.exp(x) - 1))


@op("Selu")
def selu(ctx, x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return gamma * ember.where(x > 0, x, alpha * (ember.exp(x) - 1))


@op("Celu")
def celu(ctx, x, alpha=1.0):
    return ember.maximum(x, like(x, 0)) + ember.minimum(
        like(x, 0), alpha * (ember.exp(x / alpha) - 1))


@op("HardSigmoid")
def hard_sigmoid(ctx, x, alpha=0.2, beta=0.5):
    return ember.clamp(x * alpha + beta, 0.0, 1.0)


@op("ThresholdedRelu")
def thresholded_relu(ctx, x, alpha=1.0):
    return ember.where(x > alpha, x, like(x, 0))


@op("Shrink")
def shrink(ctx, x, bias=0.0, lambd=0.5):
    return ember.where(x < -lambd, x + bias, ember.where(x > lambd, x - bias, like(x, 0)))


@op("Gelu")
def gelu(ctx, x, approximate="none"):
    return F.gelu(x, approximate=approximate)


@op("Swish")
def swish(ctx, x, alpha=1.0):
    return x * ember.sigmoid(x * alpha)


@op("Clip")
def clip(ctx, x, lo=None, hi=None, min=None, max=None):
    lo = scalar(lo, min)
    hi = scalar(hi, max)
    if lo is not None:
        x = ember.maximum(x, like(x, lo))
    if hi is not None:
        x = ember.minimum(x, like(x, hi))
    return x


@op("Where")
def where(ctx, cond, x, y):
    return ember.where(cond, x, _same(x, y))


def _softmax_2d(x, axis, fn, opset):
    if opset >= 13:
        return fn(x, axis)
    axis = axis + x.ndim if axis < 0 else axis
    shape = x.shape
    lead = math.prod(shape[:axis])
    return fn(x.reshape(lead, -1), 1).reshape(shape)


def _hardmax(x, axis):
    idx = ember.argmax(x, dim=axis, keepdim=True)
    return ember.zeros_like(x).scatter(axis, idx, 1.0)


@op("Softmax")
def softmax(ctx, x, axis=None):
    return _softmax_2d(x, axis if axis is not None else (-1 if ctx.opset >= 13 else 1),
                       lambda t, a: F.softmax(t, dim=a), ctx.opset)


@op("LogSoftmax")
def log_softmax(ctx, x, axis=None):
    return _softmax_2d(x, axis if axis is not None else (-1 if ctx.opset >= 13 else 1),
                       lambda t, a: F.log_softmax(t, dim=a), ctx.opset)


@op("Hardmax")
def hardmax(ctx, x, axis=None):
    return _softmax_2d(x, axis if axis is not None else (-1 if ctx.opset >= 13 else 1),
                       _hardmax, ctx.opset)
