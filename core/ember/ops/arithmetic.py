"""Arithmetic, comparison and logical operators (with their Python operator forms)."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError
from ..contract import families as fam
from ..tensor import Tensor
from ._dispatch import as_tensor, backend_op, binary, full_like_shape, prepare, result_dtype
from ._dispatch import unary, wrap


def _arith_dtype(op: str, a, b) -> dt.DType:
    """Arithmetic on bools is done in int64 (numpy/PyTorch reject or special-case it)."""
    out = result_dtype(op, a, b)
    return dt.int64 if out.is_bool else out


def _div_dtype(op: str, a, b) -> dt.DType:
    """True division of ints gives the default float."""
    out = result_dtype(op, a, b)
    return out if out.is_float else dt.default_float


def add(self, other, alpha=1) -> Tensor:
    """``self + alpha * other`` with broadcasting and promotion.

    >>> import ember
    >>> ember.add(ember.tensor([1, 2]), 10, alpha=2).tolist()
    [21, 22]
    >>> (ember.tensor([1.0, 2.0]) + ember.tensor([[10.0], [20.0]])).tolist()
    [[11.0, 12.0], [21.0, 22.0]]
    """
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return binary(fam.ADD, self, other, promote=_arith_dtype)


def sub(self, other, alpha=1) -> Tensor:
    """``self - alpha * other`` with broadcasting and promotion (``a - b`` too).

    >>> import ember
    >>> ember.sub(ember.tensor([5, 7]), 1, alpha=2).tolist()
    [3, 5]
    """
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return binary(fam.SUB, self, other, promote=_arith_dtype)


def mul(self, other) -> Tensor:
    """Elementwise product with broadcasting and promotion (``a * b`` too).

    >>> import ember
    >>> (ember.tensor([1, 2]) * 1.5).tolist()
    [1.5, 3.0]
    """
    return binary(fam.MUL, self, other, promote=_arith_dtype)


def div(self, other, rounding_mode: str | None = None) -> Tensor:
    """True division (ints give the default float); ``rounding_mode`` 'floor' or 'trunc'.

    >>> import ember
    >>> ember.div(ember.tensor([7, -7]), 2).tolist()
    [3.5, -3.5]
    >>> ember.div(ember.tensor([7, -7]), 2, rounding_mode="trunc").tolist()
    [3, -3]
    """
    if rounding_mode == "floor":
        return floor_divide(self, other)
    if rounding_mode == "trunc":
        return div(self, other).trunc().astype(result_dtype("div", self, other))
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
    return binary(fam.DIV, self, other, promote=_div_dtype)


true_divide = div


def floor_divide(self, other) -> Tensor:
    """Division rounded toward -inf, like Python's ``//`` (``a // b`` too).

    >>> import ember
    >>> (ember.tensor([7, -7]) // 2).tolist()
    [3, -4]
    """
    return binary(fam.FLOOR_DIVIDE, self, other, promote=_arith_dtype)


def remainder(self, other) -> Tensor:
    """Python's ``%``: the result has the sign of the divisor.

    >>> import ember
    >>> (ember.tensor([7, -7]) % 3).tolist()
    [1, 2]
    """
    return binary(fam.REMAINDER, self, other, promote=_arith_dtype)


def pow(self, exponent) -> Tensor:
    """``self ** exponent`` elementwise, with broadcasting (``a ** b`` too).

    >>> import ember
    >>> ember.pow(ember.tensor([2, 3]), 2).tolist()
    [4, 9]
    """
    return binary(fam.POW, self, exponent, promote=_arith_dtype)


def neg(self) -> Tensor:
    """``-self`` (not defined for bool tensors: use ``~``/``logical_not``).

    >>> import ember
    >>> (-ember.tensor([1, -2])).tolist()
    [-1, 2]
    """
    if self.dtype.is_bool:
        raise DTypeError("neg: negation of a bool tensor is not defined; use ~ (logical_not)")
    return unary(fam.NEG, self, float_only=False)


def maximum(self, other) -> Tensor:
    """Elementwise max (NaN propagates).

    >>> import ember
    >>> ember.maximum(ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0])).tolist()
    [3.0, 5.0]
    """
    return binary(fam.MAXIMUM, self, other, promote=_arith_dtype)


def minimum(self, other) -> Tensor:
    """Elementwise min (NaN propagates).

    >>> import ember
    >>> ember.minimum(ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0])).tolist()
    [1.0, 2.0]
    """
    return binary(fam.MINIMUM, self, other, promote=_arith_dtype)


def _compare(family: fam.Family, a, b) -> Tensor:
    x, y = prepare(family.name, a, b)
    if x.dtype.is_bool and family.method(x.dtype) is None:  # lt/le/gt/ge order False < True
        x, y = x.astype(dt.uint8), y.astype(dt.uint8)
    return wrap(x, backend_op(x, family)(x._prim, y._prim))


def eq(self, other) -> Tensor:
    """Elementwise ``==``, a bool tensor (``a == b`` too).

    >>> import ember
    >>> (ember.tensor([1, 2, 3]) == 2).tolist()
    [False, True, False]
    """
    return _compare(fam.EQ, self, other)


def ne(self, other) -> Tensor:
    """Elementwise ``!=``, a bool tensor (``a != b`` too).

    >>> import ember
    >>> ember.ne(ember.tensor([1, 2]), ember.tensor([1, 3])).tolist()
    [False, True]
    """
    return _compare(fam.NE, self, other)


def lt(self, other) -> Tensor:
    """Elementwise ``<``, a bool tensor (``a < b`` too).

    >>> import ember
    >>> (ember.tensor([1, 2, 3]) < 2).tolist()
    [True, False, False]
    """
    return _compare(fam.LT, self, other)


def le(self, other) -> Tensor:
    """Elementwise ``<=``, a bool tensor (``a <= b`` too).

    >>> import ember
    >>> ember.le(ember.tensor([1, 2, 3]), 2).tolist()
    [True, True, False]
    """
    return _compare(fam.LE, self, other)


def gt(self, other) -> Tensor:
    """Elementwise ``>``, a bool tensor (``a > b`` too).

    >>> import ember
    >>> (ember.tensor([1.0, 2.5]) > 2).tolist()
    [False, True]
    """
    return _compare(fam.GT, self, other)


def ge(self, other) -> Tensor:
    """Elementwise ``>=``, a bool tensor (``a >= b`` too).

    >>> import ember
    >>> ember.ge(ember.tensor([1, 2, 3]), 2).tolist()
    [False, True, True]
    """
    return _compare(fam.GE, self, other)


def _logical(family: fam.Family, a, b) -> Tensor:
    x, y = prepare(family.name, a, b, dtype=dt.bool_)
    return wrap(x, backend_op(x, family)(x._prim, y._prim))


def logical_and(self, other) -> Tensor:
    """Elementwise AND of the truth values (non-zero is True); a bool tensor.

    >>> import ember
    >>> ember.logical_and(ember.tensor([1, 0, 2]), ember.tensor([True, True, False])).tolist()
    [True, False, False]
    """
    return _logical(fam.AND, self, other)


def logical_or(self, other) -> Tensor:
    """Elementwise OR of the truth values (non-zero is True); a bool tensor.

    >>> import ember
    >>> ember.logical_or(ember.tensor([1, 0, 0]), ember.tensor([0, 0, 3])).tolist()
    [True, False, True]
    """
    return _logical(fam.OR, self, other)


def logical_xor(self, other) -> Tensor:
    """Elementwise XOR of the truth values (non-zero is True); a bool tensor.

    >>> import ember
    >>> ember.logical_xor(ember.tensor([True, True]), ember.tensor([True, False])).tolist()
    [False, True]
    """
    return _logical(fam.XOR, self, other)


def logical_not(self) -> Tensor:
    """Elementwise NOT of the truth values (``~t`` on bool tensors); a bool tensor.

    >>> import ember
    >>> ember.logical_not(ember.tensor([1, 0])).tolist()
    [False, True]
    >>> (~ember.tensor([True, False])).tolist()
    [False, True]
    """
    x = self.astype(dt.bool_)
    return wrap(x, x.backend.bool_not(x._prim))


def _no_floats(op: str, *operands) -> None:
    for x in operands:
        if isinstance(x, float) or (isinstance(x, Tensor) and x.dtype.is_float):
            got = x.dtype if isinstance(x, Tensor) else "a Python float"
            raise DTypeError(f"{op}: bitwise ops take integer or bool operands, got {got}")


def _bitwise(family: fam.Family, doc: str):
    """A binary bitwise operator: ``family``'s int op on integer tensors, its bool op (if any)
    on bool ones; float operands raise a DTypeError."""

    def operator(self, other):
        _no_floats(family.name, self, other)
        return binary(family, self, other)

    operator.__name__ = operator.__qualname__ = f"bitwise_{family.name}"
    operator.__doc__ = doc
    return operator


def invert(self) -> Tensor:
    """``~t``: every bit flipped on integer tensors (two's complement), NOT on bool tensors.

    >>> import ember
    >>> (~ember.tensor([5, -3])).tolist(), (~ember.tensor([True, False])).tolist()
    ([-6, 2], [False, True])
    """
    _no_floats("invert", self)
    return wrap(self, backend_op(self, fam.NOT)(self._prim))


def _reflected(fn):
    def reflected(self, other):
        return fn(as_tensor(other, self) if not isinstance(other, (bool, int, float)) else
                  _scalar_tensor(other, self), self)

    return reflected


def _scalar_tensor(value, like: Tensor) -> Tensor:
    """A weak scalar as a 0-d tensor of the dtype it would promote to against ``like``."""
    return full_like_shape(like, value, dt.result_type_with_scalar(like.dtype, value))


# the operator forms that are not plain functions above
radd, rsub, rmul = _reflected(add), _reflected(sub), _reflected(mul)
rtruediv, rfloordiv = _reflected(div), _reflected(floor_divide)
rmod, rpow = _reflected(remainder), _reflected(pow)
and_ = _bitwise(fam.AND, """``a & b``: bitwise AND of integers, logical AND of bools.

    >>> import ember
    >>> (ember.tensor([6, -1]) & 3).tolist(), (ember.tensor([True]) & False).tolist()
    ([2, 3], [False])
    """)
or_ = _bitwise(fam.OR, """``a | b``: bitwise OR of integers, logical OR of bools.

    >>> import ember
    >>> (ember.tensor([4, 1]) | 2).tolist()
    [6, 3]
    """)
xor = _bitwise(fam.XOR, """``a ^ b``: bitwise XOR of integers, logical XOR of bools.

    >>> import ember
    >>> (ember.tensor([5, -1]) ^ 3).tolist()
    [6, -4]
    """)
shift_left = _bitwise(fam.SHIFT_LEFT, """``a << b`` on integers, wrapping around at the dtype's
    width; a count outside [0, width) gives 0.

    >>> import ember
    >>> (ember.tensor([1, -3], dtype=ember.int8) << 2).tolist()
    [4, -12]
    """)
shift_right = _bitwise(fam.SHIFT_RIGHT, """``a >> b`` on integers, arithmetic (rounds toward
    -inf); a count outside [0, width) gives 0, or -1 for negative ``a``.

    >>> import ember
    >>> (ember.tensor([16, -16]) >> 2).tolist()
    [4, -4]
    """)
rlshift, rrshift = _reflected(shift_left), _reflected(shift_right)


def pos(self: Tensor) -> Tensor:
    """``+t``: the tensor itself."""
    return self
