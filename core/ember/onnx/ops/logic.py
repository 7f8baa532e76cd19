"""Comparisons, boolean logic and bitwise integer ops.

ember's ``&``/``|``/``^`` work on bool tensors only, so the bitwise integer ops are built from
arithmetic: a two's-complement bit ``k`` of ``x`` is ``floor(x / 2**k) mod 2`` (floor division
keeps it right for negative numbers too).
"""

from __future__ import annotations

import ember

from . import op
from .elementwise import _same


@op("Equal")
def equal(ctx, a, b):
    return a == _same(a, b)


@op("Less")
def less(ctx, a, b):
    return a < _same(a, b)


@op("Greater")
def greater(ctx, a, b):
    return a > _same(a, b)


@op("LessOrEqual")
def less_equal(ctx, a, b):
    return a <= _same(a, b)


@op("GreaterOrEqual")
def greater_equal(ctx, a, b):
    return a >= _same(a, b)


@op("And")
def and_(ctx, a, b):
    return ember.logical_and(a, b)


@op("Or")
def or_(ctx, a, b):
    return ember.logical_or(a, b)


@op("Xor")
def xor(ctx, a, b):
    return ember.logical_xor(a, b)


@op("Not")
def not_(ctx, a):
    return ember.logical_not(a)


def _bits(x):
    wide = x.astype(ember.int64)
    return [ember.remainder(ember.floor_divide(wide, 1 << k), 2) for k in range(x.dtype.bits)]


def _from_bits(bits, dtype):
    n = dtype.bits
    out = ember.zeros_like(bits[0])
    for k, b in enumerate(bits):
        weight = -(1 << k) if (k == n - 1 and dtype.is_signed) else (1 << k)
        out = out + b * weight
    return out.astype(dtype)


def _bitwise(fn):
    def run(ctx, a, b=None):
        if a.dtype.is_bool:
            return fn(a, b) if b is not None else ember.logical_not(a)
        if b is None:
            return _from_bits([1 - bit for bit in _bits(a)], a.dtype)
        b = _same(a, b)
        a, b = ember.broadcast_tensors(a, b)
        return _from_bits([fn(x, y) for x, y in zip(_bits(a), _bits(b))], a.dtype)

    return run


op("BitwiseAnd")(_bitwise(lambda x, y: x * y))
op("BitwiseOr")(_bitwise(lambda x, y: x + y - x * y))
op("BitwiseXor")(_bitwise(lambda x, y: (x + y) % 2))
op("BitwiseNot")(_bitwise(None))


@op("BitShift")
def bit_shift(ctx, x, y, direction="LEFT"):
    # unsigned operands only (the spec); shifts by powers of two in int64, wrapped to x's width
    wide = x.astype(ember.int64)
    p = ember.pow(ember.full_like(wide, 2), y.astype(ember.int64))
    out = wide * p if direction == "LEFT" else ember.floor_divide(wide, p)
    if x.dtype.bits < 64:
        out = ember.remainder(out, 1 << x.dtype.bits)
    return out.astype(x.dtype)
