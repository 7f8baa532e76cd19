"""Elementwise ``int_*`` and ``bool_*`` ops, ``where`` and ``cast``.

Integer results wrap around at the dtype's width like numpy; integer division or remainder by
zero gives 0 (numpy's result, without its warning). None of these carries a gradient except
``where`` and float-to-float ``cast``.
"""

from __future__ import annotations

from . import infer
from .prims import like
from .registry import Kind, declare

E = Kind.ELEMENTWISE


def _int(name: str, args: str = "a, b", result=infer.same, doc: str = ""):
    return declare(name, E, args, result, differentiable=False, doc=doc)


# ---------------------------------------------------------------------- int primitives
int_add = _int("int_add")
int_sub = _int("int_sub")
int_mul = _int("int_mul")
int_floor_divide = _int(
    "int_floor_divide", doc="Floor division (rounds toward -inf, as Python's ``//``); x // 0 is 0."
)
int_remainder = _int("int_remainder", doc="Python ``%``: the divisor's sign; x % 0 is 0.")
int_pow = _int(
    "int_pow", doc="``a ** b`` wrapping around; negative exponents raise ``ValueError`` like numpy."
)
int_maximum = _int("int_maximum")
int_minimum = _int("int_minimum")
int_eq = _int("int_eq", result=infer.to_bool)
int_lt = _int("int_lt", result=infer.to_bool)
int_le = _int("int_le", result=infer.to_bool)
int_neg = _int("int_neg", "x", infer.same)
int_abs = _int("int_abs", "x", infer.same)
int_bitwise_and = _int("int_bitwise_and", doc="AND of the two's-complement bits.")
int_bitwise_or = _int("int_bitwise_or", doc="OR of the two's-complement bits.")
int_bitwise_xor = _int("int_bitwise_xor", doc="XOR of the two's-complement bits.")
int_bitwise_not = _int("int_bitwise_not", "x", infer.same, doc="``~x``: every bit flipped.")
int_shift_left = _int(
    "int_shift_left",
    doc="``a << b`` wrapping around at the dtype's width; a count outside [0, width) gives 0.",
)
int_shift_right = _int(
    "int_shift_right",
    doc="``a >> b``, arithmetic (rounds toward -inf); a count outside [0, width) gives 0 for "
    "a >= 0 and -1 for a < 0 (numpy's results).",
)

# ---------------------------------------------------------------------- int composites
int_ne = _int("int_ne", result=infer.to_bool)
int_gt = _int("int_gt", result=infer.to_bool)
int_ge = _int("int_ge", result=infer.to_bool)
int_sign = _int("int_sign", "x", infer.same)

# ---------------------------------------------------------------------- bool
bool_and = _int("bool_and")
bool_or = _int("bool_or")
bool_not = _int("bool_not", "x", infer.same)
bool_xor = _int("bool_xor")
bool_eq = _int("bool_eq")
bool_ne = _int("bool_ne")

# ---------------------------------------------------------------------- default bodies
@int_ne.implements
def int_ne(self, a, b):
    return self.bool_not(self.int_eq(a, b))


@int_gt.implements
def int_gt(self, a, b):
    return self.int_lt(b, a)


@int_ge.implements
def int_ge(self, a, b):
    return self.int_le(b, a)


@int_sign.implements
def int_sign(self, x):
    zero = self.full(self.shape(x), 0, self.dtype(x))
    pos = self.cast(self.int_lt(zero, x), self.dtype(x))
    neg = self.cast(self.int_lt(x, zero), self.dtype(x))
    return self.int_sub(pos, neg)


@bool_xor.implements
def bool_xor(self, a, b):
    return self.bool_and(self.bool_or(a, b), self.bool_not(self.bool_and(a, b)))


@bool_eq.implements
def bool_eq(self, a, b):
    return self.bool_not(self.bool_xor(a, b))


@bool_ne.implements
def bool_ne(self, a, b):
    return self.bool_xor(a, b)


# ---------------------------------------------------------------------- where, cast
where = declare(
    "where", E, "cond, a, b", infer.where,
    doc="Elementwise ``a if cond else b``; all three have one shape, ``a``/``b`` one dtype.",
)
cast = declare(
    "cast", E, "x, dtype", infer.cast,
    doc="``x`` converted to ``dtype``: float→int truncates toward zero, int→int wraps around, "
    "anything→bool is ``!= 0``. NaN/inf → int is unspecified (numpy gives INT_MIN).",
)


@where.gradient(inputs=(0,), cheap=True)
def _(c, g):
    b = c.b
    cond, zero = c.x(0), like(b, g, 0.0)
    return None, b.where(cond, g, zero), b.where(cond, zero, g)


@cast.gradient(cheap=True)
def _(c, g):
    return (c.b.cast(g, c.dtype(0)),)
