"""Backward rules: one short entry per differentiable op, all in one place.

``@rule(name, inputs=..., out=..., cheap=...)`` registers ``fn(c, g)``: ``c`` is a
:class:`~ember.autodiff.graph.Context` (``c.b`` the inner backend, ``c.x(i)`` a saved input,
``c.out`` the saved output, ``c.params``, ``c.shape(i)``), ``g`` the output's gradient (an
inner primitive). It returns one gradient (or None) per primitive input. ``inputs`` lists the
inputs the rule reads and ``out`` whether it reads the output: only those are kept alive.
``cheap`` marks memory-bound ops that checkpointing recomputes instead of storing.

Rules use inner-backend primitives only, so they work on every backend (and on Autodiff
itself, which would give higher-order gradients).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    fn: Callable
    inputs: tuple[int, ...] = ()
    out: bool = False
    cheap: bool = False


RULES: dict[str, Rule] = {}


def rule(name: str, inputs: tuple[int, ...] = (), out: bool = False, cheap: bool = False):
    def register(fn: Callable) -> Callable:
        RULES[name] = Rule(fn, inputs, out, cheap)
        return fn

    return register


# ---------------------------------------------------------------------- helpers
def full(b, shape, value, dtype):
    return b.full(tuple(shape), value, dtype)


def like(b, x, value):
    return b.full(tuple(b.shape(x)), value, b.dtype(x))


def scale(b, x, value: float):
    return b.float_mul(x, like(b, x, value))


def mask(b, cond, x):
    """``x`` where ``cond`` else 0."""
    return b.where(cond, x, like(b, x, 0))


def swap_last(b, x):
    n = len(b.shape(x))
    return b.permute(x, tuple(range(n - 2)) + (n - 1, n - 2))


def expand_back(b, g, shape):
    """A gradient of a kept-dims reduction, broadcast back to the input's shape."""
    return b.expand(g, tuple(shape))


def count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


# ---------------------------------------------------------------------- binary
@rule("float_add", cheap=True)
def _add(c, g):
    return g, g


@rule("float_sub", cheap=True)
def _sub(c, g):
    return g, c.b.float_neg(g) if c.wants(1) else None


@rule("float_mul", inputs=(0, 1), cheap=True)
def _mul(c, g):
    b = c.b
    return (
        b.float_mul(g, c.x(1)) if c.wants(0) else None,
        b.float_mul(g, c.x(0)) if c.wants(1) else None,
    )


@rule("float_div", inputs=(0, 1), cheap=True)
def _div(c, g):
    b = c.b
    y = c.x(1)
    gx = b.float_div(g, y)
    gy = b.float_neg(b.float_div(b.float_mul(gx, c.x(0)), y)) if c.wants(1) else None
    return gx, gy


@rule("float_pow", inputs=(0, 1), out=True, cheap=True)
def _pow(c, g):
    # PyTorch's conventions: d/da is 0 where the exponent is 0; d/de is 0 where a == 0, e >= 0
    b = c.b
    a, e = c.x(0), c.x(1)
    ga = gb = None
    if c.wants(0):
        d = b.float_mul(e, b.float_pow(a, b.float_sub(e, like(b, e, 1.0))))
        ga = mask(b, b.bool_not(b.float_eq(e, like(b, e, 0.0))), b.float_mul(g, d))
    if c.wants(1):
        d = b.float_mul(c.out, b.float_log(a))
        zero_base = b.bool_and(b.float_eq(a, like(b, a, 0.0)), b.float_le(like(b, e, 0.0), e))
        gb = mask(b, b.bool_not(zero_base), b.float_mul(g, d))
    return ga, gb


@rule("float_atan2", inputs=(0, 1), cheap=True)
def _atan2(c, g):
    b = c.b
    y, x = c.x(0), c.x(1)
    gr = b.float_div(g, b.float_add(b.float_mul(x, x), b.float_mul(y, y)))
    return (
        b.float_mul(gr, x) if c.wants(0) else None,
        b.float_neg(b.float_mul(gr, y)) if c.wants(1) else None,
    )


def _select_grads(c, g, first_wins):
    """maximum/minimum: the gradient goes to the selected operand; ties split it evenly
    (as PyTorch does)."""
    b = c.b
    x, y = c.x(0), c.x(1)
    half = b.where(b.float_eq(x, y), like(b, g, 0.5), like(b, g, 0.0))
    to_x = b.where(first_wins(b, x, y), like(b, g, 1.0), half)
    to_y = b.where(first_wins(b, y, x), like(b, g, 1.0), half)
    return b.float_mul(g, to_x), b.float_mul(g, to_y)


@rule("float_maximum", inputs=(0, 1), cheap=True)
def _maximum(c, g):
    return _select_grads(c, g, lambda b, p, q: b.float_lt(q, p))


@rule("float_minimum", inputs=(0, 1), cheap=True)
def _minimum(c, g):
    return _select_grads(c, g, lambda b, p, q: b.float_lt(p, q))


# ---------------------------------------------------------------------- unary
@rule("float_neg", cheap=True)
def _neg(c, g):
    return (c.b.float_neg(g),)


@rule("float_abs", inputs=(0,), cheap=True)
def _abs(c, g):
    b = c.b
    x = c.x(0)
    zero = like(b, x, 0.0)
    sign = b.where(
        b.float_lt(zero, x), like(b, x, 1.0), b.where(b.float_lt(x, zero), like(b, x, -1.0), zero)
    )
    return (b.float_mul(g, sign),)


@rule("float_exp", out=True, cheap=True)
def _exp(c, g):
    return (c.b.float_mul(g, c.out),)


@rule("float_log", inputs=(0,), cheap=True)
def _log(c, g):
    return (c.b.float_div(g, c.x(0)),)


@rule("float_sqrt", out=True, cheap=True)
def _sqrt(c, g):
    b = c.b
    return (b.float_div(g, scale(b, c.out, 2.0)),)


@rule("float_sin", inputs=(0,), cheap=True)
def _sin(c, g):
    return (c.b.float_mul(g, c.b.float_cos(c.x(0))),)


@rule("float_cos", inputs=(0,), cheap=True)
def _cos(c, g):
    b = c.b
    return (b.float_neg(b.float_mul(g, b.float_sin(c.x(0)))),)


@rule("float_atan", inputs=(0,), cheap=True)
def _atan(c, g):
    b = c.b
    x = c.x(0)
    return (b.float_div(g, b.float_add(like(b, x, 1.0), b.float_mul(x, x))),)


@rule("float_tanh", out=True, cheap=True)
def _tanh(c, g):
    b = c.b
    y = c.out
    return (b.float_mul(g, b.float_sub(like(b, y, 1.0), b.float_mul(y, y))),)


@rule("float_erf", inputs=(0,), cheap=True)
def _erf(c, g):
    b = c.b
    x = c.x(0)
    d = scale(b, b.float_exp(b.float_neg(b.float_mul(x, x))), 2.0 / math.sqrt(math.pi))
    return (b.float_mul(g, d),)


def _zero(c, g):
    return (like(c.b, g, 0.0),)


for _name in ("float_floor", "float_ceil", "float_round"):
    rule(_name, cheap=True)(_zero)


@rule("float_sigmoid", out=True, cheap=True)
def _sigmoid(c, g):
    b = c.b
    y = c.out
    return (b.float_mul(g, b.float_mul(y, b.float_sub(like(b, y, 1.0), y))),)


@rule("relu", out=True, cheap=True)
def _relu(c, g):
    b = c.b
    y = c.out
    return (mask(b, b.float_lt(like(b, y, 0.0), y), g),)


@rule("cast", cheap=True)
def _cast(c, g):
    return (c.b.cast(g, c.dtype(0)),)


@rule("where", inputs=(0,), cheap=True)
def _where(c, g):
    b = c.b
    cond, zero = c.x(0), like(b, g, 0.0)
    return None, b.where(cond, g, zero), b.where(cond, zero, g)


# ---------------------------------------------------------------------- reductions, scans
@rule("float_sum")
def _sum(c, g):
    return (expand_back(c.b, g, c.shape(0)),)


@rule("float_mean")
def _mean(c, g):
    b, shape = c.b, c.shape(0)
    n = count(shape, c.params[0])
    return (expand_back(b, scale(b, g, 1.0 / n if n else math.nan), shape),)


@rule("float_var", inputs=(0,))
def _var(c, g):
    b, shape = c.b, c.shape(0)
    dims, correction = c.params
    x = c.x(0)
    centered = b.float_sub(x, expand_back(b, b.float_mean(x, dims), shape))
    n = count(shape, dims)
    factor = 2.0 / (n - correction) if n > correction else math.nan
    return (b.float_mul(expand_back(b, scale(b, g, factor), shape), centered),)


@rule("float_logsumexp", inputs=(0,), out=True)
def _logsumexp(c, g):
    b, shape = c.b, c.shape(0)
    soft = b.float_exp(b.float_sub(c.x(0), expand_back(b, c.out, shape)))
    return (b.float_mul(expand_back(b, g, shape), soft),)


def _extreme(c, g):
    """max/min over dims: the gradient is shared evenly by the tied extremes (torch.amax)."""
    b, shape = c.b, c.shape(0)
    dims = c.params[0]
    hit = b.float_eq(c.x(0), expand_back(b, c.out, shape))
    n = b.float_sum(b.cast(hit, b.dtype(g)), dims)
    return (mask(b, hit, expand_back(b, b.float_div(g, n), shape)),)


rule("float_max", inputs=(0,), out=True)(_extreme)
rule("float_min", inputs=(0,), out=True)(_extreme)


@rule("float_prod", inputs=(0,))
def _prod(c, g):
    # product of the *other* elements, as exclusive cumprods from both ends: exact with zeros
    b, shape = c.b, c.shape(0)
    dims = c.params[0]
    keep = [d for d in range(len(shape)) if d not in dims]
    order = tuple(keep + list(dims))
    n = count(shape, dims)
    flat_shape = tuple(shape[d] for d in keep) + (n,)
    x = b.reshape(b.permute(c.x(0), order), flat_shape)
    last = len(flat_shape) - 1
    left = _exclusive_cumprod(b, x, last)
    right = b.flip(_exclusive_cumprod(b, b.flip(x, (last,)), last), (last,))
    others = b.float_mul(left, right)
    gx = b.float_mul(
        others, b.expand(b.reshape(b.permute(g, order), flat_shape[:-1] + (1,)), flat_shape)
    )
    inverse = tuple(order.index(i) for i in range(len(shape)))
    return (b.permute(b.reshape(gx, tuple(shape[d] for d in order)), inverse),)


def _exclusive_cumprod(b, x, dim):
    shape = tuple(b.shape(x))
    if shape[dim] == 0:
        return x
    ones = full(b, shape[:dim] + (1,) + shape[dim + 1 :], 1.0, b.dtype(x))
    head = b.slice(
        b.float_cumprod(x, dim),
        tuple((0, s - 1 if d == dim else s, 1) for d, s in enumerate(shape)),
    )
    return b.cat([ones, head], dim)


@rule("float_cumsum")
def _cumsum(c, g):
    b, dim = c.b, c.params[0]
    return (b.flip(b.float_cumsum(b.flip(g, (dim,)), dim), (dim,)),)


@rule("float_cumprod", inputs=(0,), out=True)
def _cumprod(c, g):
    # dout_j/dx_i = prod_{k<=j, k!=i} x_k. Before the first zero, sum_j g_j out_j / x_i;
    # at the first zero, the same sums with that zero taken as 1; after it, 0. Exact with zeros.
    b, dim = c.b, c.params[0]
    x = c.x(0)

    def rev_cumsum(v):
        return b.flip(b.float_cumsum(b.flip(v, (dim,)), dim), (dim,))

    zero = b.float_eq(x, like(b, x, 0.0))
    seen = b.float_cumsum(b.cast(zero, b.dtype(x)), dim)
    before = b.float_eq(seen, like(b, seen, 0.0))
    first = b.bool_and(zero, b.float_eq(seen, like(b, seen, 1.0)))
    one = like(b, x, 1.0)
    safe_x = b.where(before, x, one)
    g_before = b.float_div(rev_cumsum(b.float_mul(g, c.out)), safe_x)
    g_first = rev_cumsum(b.float_mul(g, b.float_cumprod(b.where(first, one, x), dim)))
    return (b.where(before, g_before, mask(b, first, g_first)),)


# ---------------------------------------------------------------------- matmul
@rule("float_matmul", inputs=(0, 1))
def _matmul(c, g):
    b = c.b
    ga = b.float_matmul(g, swap_last(b, c.x(1))) if c.wants(0) else None
    gb = b.float_matmul(swap_last(b, c.x(0)), g) if c.wants(1) else None
    return ga, gb


# ---------------------------------------------------------------------- layout
@rule("reshape", cheap=True)
def _reshape(c, g):
    return (c.b.reshape(g, c.shape(0)),)


@rule("permute", cheap=True)
def _permute(c, g):
    axes = c.params[0]
    return (c.b.permute(g, tuple(axes.index(i) for i in range(len(axes)))),)


@rule("expand", cheap=True)
def _expand(c, g):
    # the front end broadcasts binary operands with expand: broadcast grads are summed here
    src, dst = c.shape(0), c.params[0]
    dims = tuple(d for d, (s, t) in enumerate(zip(src, dst)) if s == 1 and t != 1)
    return (c.b.float_sum(g, dims) if dims else g,)


@rule("slice")
def _slice(c, g):
    b = c.b
    return (b.slice_assign(full(b, c.shape(0), 0.0, b.dtype(g)), c.params[0], g),)


@rule("slice_assign")
def _slice_assign(c, g):
    b, ranges = c.b, c.params[0]
    gx = b.slice_assign(g, ranges, full(b, c.shape(1), 0.0, b.dtype(g))) if c.wants(0) else None
    return gx, b.slice(g, ranges) if c.wants(1) else None


@rule("cat")
def _cat(c, g):
    b, dim = c.b, c.params[0]
    shape = tuple(b.shape(g))
    out, start = [], 0
    for i in range(len(c.node.shapes)):
        size = c.shape(i)[dim]
        if c.wants(i):
            ranges = tuple(
                (start, start + size, 1) if d == dim else (0, s, 1) for d, s in enumerate(shape)
            )
            out.append(b.slice(g, ranges))
        else:
            out.append(None)
        start += size
    return tuple(out)


# ---------------------------------------------------------------------- indexing
@rule("gather", inputs=(1,))
def _gather(c, g):
    b = c.b
    zeros = full(b, c.shape(0), 0.0, b.dtype(g))
    return b.scatter(zeros, c.params[0], c.x(1), g, "add"), None


@rule("scatter", inputs=(1,))
def _scatter(c, g):
    # replace mode: overwritten positions of x get no gradient; each src element gets the
    # gradient of the position it was written to (with duplicates, as PyTorch: all of them)
    b = c.b
    dim, reduce = c.params
    index = c.x(1)
    gx = None
    if c.wants(0):
        gx = (
            g
            if reduce == "add"
            else b.scatter(g, dim, index, full(b, c.shape(1), 0.0, b.dtype(g)), "none")
        )
    gsrc = b.gather(g, dim, index) if c.wants(2) else None
    return gx, None, gsrc


@rule("index_select", inputs=(1,))
def _index_select(c, g):
    b = c.b
    dim = c.params[0]
    shape, gshape = c.shape(0), tuple(b.shape(g))
    view = tuple(gshape[d] if d == dim else 1 for d in range(len(shape)))
    index = b.expand(b.reshape(c.x(1), view), gshape)
    return b.scatter(full(b, shape, 0.0, b.dtype(g)), dim, index, g, "add"), None


@rule("float_sort", inputs=(1,))
def _sort(c, g):
    # input 1 is the (untracked) permutation the sort produced
    b = c.b
    zeros = full(b, c.shape(0), 0.0, b.dtype(g))
    return b.scatter(zeros, c.params[0], c.x(1), g, "none"), None


# ---------------------------------------------------------------------- activations
@rule("softmax", out=True)
def _softmax(c, g):
    b, dim = c.b, c.params[0]
    y = c.out
    shape = tuple(b.shape(y))
    dot = b.expand(b.float_sum(b.float_mul(g, y), (dim,)), shape)
    return (b.float_mul(y, b.float_sub(g, dot)),)


@rule("log_softmax", out=True)
def _log_softmax(c, g):
    b, dim = c.b, c.params[0]
    y = c.out
    shape = tuple(b.shape(y))
    total = b.expand(b.float_sum(g, (dim,)), shape)
    return (b.float_sub(g, b.float_mul(b.float_exp(y), total)),)
