"""Comparisons, boolean logic and bitwise integer ops (ember's ``& | ^ ~ << >>``, numpy's
semantics; the int16/uint16/uint32 types ember holds widened are wrapped back afterwards by
:mod:`.._intwrap`)."""

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


def _bitwise(fn):
    def run(ctx, a, b=None):
        if b is None:
            return ember.logical_not(a) if a.dtype.is_bool else ~a
        return fn(a, _same(a, b))

    return run


op("BitwiseAnd")(_bitwise(lambda x, y: x & y))
op("BitwiseOr")(_bitwise(lambda x, y: x | y))
op("BitwiseXor")(_bitwise(lambda x, y: x ^ y))
op("BitwiseNot")(_bitwise(None))


@op("BitShift")
def bit_shift(ctx, x, y, direction="LEFT"):
    # unsigned operands (the spec): shifts wrap at x's width; a count of the width or more
    # gives 0
    y = _same(x, y)
    return x << y if direction == "LEFT" else x >> y
