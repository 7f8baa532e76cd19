"""Arithmetic, comparison and logical operators (with their Python operator forms)."""

from __future__ import annotations

from .. import dtype as dt
from ..errors import DTypeError
from ..tensor import Tensor, tensor_method
from ._dispatch import binary, prepare, result_dtype, unary, wrap


def _arith_dtype(op: str, a, b) -> dt.DType:
    """Arithmetic on bools is done in int64 (numpy/PyTorch reject or special-case it)."""
    out = result_dtype(op, a, b)
    return dt.int64 if out.is_bool else out


@tensor_method
def add(self, other, alpha=1) -> Tensor:
    """``self + alpha * other`` with broadcasting and promotion."""
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return binary("add", self, other, _arith_dtype("add", self, other))


@tensor_method
def sub(self, other, alpha=1) -> Tensor:
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return binary("sub", self, other, _arith_dtype("sub", self, other))


@tensor_method
def mul(self, other) -> Tensor:
    return binary("mul", self, other, _arith_dtype("mul", self, other))


@tensor_method
def div(self, other, rounding_mode: str | None = None) -> Tensor:
    """True division (ints give the default float); ``rounding_mode`` 'floor' or 'trunc'."""
    if rounding_mode == "floor":
        return floor_divide(self, other)
    if rounding_mode == "trunc":
        return div(self, other).trunc().astype(result_dtype("div", self, other))
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
    target = result_dtype("div", self, other)
    if not target.is_float:
        target = dt.default_float
    return binary("div", self, other, target)


true_divide = tensor_method(div, name="true_divide")


@tensor_method
def floor_divide(self, other) -> Tensor:
    return binary("floor_divide", self, other, _arith_dtype("floor_divide", self, other))


@tensor_method
def remainder(self, other) -> Tensor:
    """Python's ``%``: the result has the sign of the divisor."""
    return binary("remainder", self, other, _arith_dtype("remainder", self, other))


@tensor_method
def pow(self, exponent) -> Tensor:
    return binary("pow", self, exponent, _arith_dtype("pow", self, exponent))


@tensor_method
def neg(self) -> Tensor:
    if self.dtype.is_bool:
        raise DTypeError("neg: negation of a bool tensor is not defined; use ~ (logical_not)")
    return unary("neg", self, float_only=False)


@tensor_method
def maximum(self, other) -> Tensor:
    """Elementwise max (NaN propagates)."""
    return binary("maximum", self, other, _arith_dtype("maximum", self, other))


@tensor_method
def minimum(self, other) -> Tensor:
    return binary("minimum", self, other, _arith_dtype("minimum", self, other))


def _compare(op: str, a, b) -> Tensor:
    x, y = prepare(op, a, b)
    if x.dtype.is_bool and op in ("lt", "le", "gt", "ge"):
        x, y = x.astype(dt.uint8), y.astype(dt.uint8)
    from ._dispatch import backend_op

    return wrap(x, backend_op(x, op)(x._prim, y._prim))


@tensor_method
def eq(self, other) -> Tensor:
    return _compare("eq", self, other)


@tensor_method
def ne(self, other) -> Tensor:
    return _compare("ne", self, other)


@tensor_method
def lt(self, other) -> Tensor:
    return _compare("lt", self, other)


@tensor_method
def le(self, other) -> Tensor:
    return _compare("le", self, other)


@tensor_method
def gt(self, other) -> Tensor:
    return _compare("gt", self, other)


@tensor_method
def ge(self, other) -> Tensor:
    return _compare("ge", self, other)


def _logical(op: str, a, b) -> Tensor:
    x, y = prepare(op, a, b, dtype=dt.bool_)
    return wrap(x, getattr(x.backend, f"bool_{op}")(x._prim, y._prim))


@tensor_method
def logical_and(self, other) -> Tensor:
    return _logical("and", self, other)


@tensor_method
def logical_or(self, other) -> Tensor:
    return _logical("or", self, other)


@tensor_method
def logical_xor(self, other) -> Tensor:
    return _logical("xor", self, other)


@tensor_method
def logical_not(self) -> Tensor:
    x = self.astype(dt.bool_)
    return wrap(x, x.backend.bool_not(x._prim))


def _bitwise_or_logical(op: str):
    def operator(self, other):
        if self.dtype.is_bool and (not isinstance(other, Tensor) or other.dtype.is_bool):
            return _logical(op, self, other)
        raise DTypeError(
            f"{op}: bitwise ops on {self.dtype} are not supported; &, |, ^ work on bool tensors"
        )

    return operator


def _reflected(fn):
    def reflected(self, other):
        from ._dispatch import as_tensor

        return fn(as_tensor(other, self) if not isinstance(other, (bool, int, float)) else
                  _scalar_tensor(other, self), self)

    return reflected


def _scalar_tensor(value, like: Tensor) -> Tensor:
    """A weak scalar as a 0-d tensor of the dtype it would promote to against ``like``."""
    from ._dispatch import full_like_shape

    return full_like_shape(like, value, dt.result_type_with_scalar(like.dtype, value), ())


Tensor.__add__ = add
Tensor.__radd__ = _reflected(add)
Tensor.__sub__ = sub
Tensor.__rsub__ = _reflected(sub)
Tensor.__mul__ = mul
Tensor.__rmul__ = _reflected(mul)
Tensor.__truediv__ = div
Tensor.__rtruediv__ = _reflected(div)
Tensor.__floordiv__ = floor_divide
Tensor.__rfloordiv__ = _reflected(floor_divide)
Tensor.__mod__ = remainder
Tensor.__rmod__ = _reflected(remainder)
Tensor.__pow__ = pow
Tensor.__rpow__ = _reflected(pow)
Tensor.__neg__ = neg
Tensor.__pos__ = lambda self: self
Tensor.__eq__ = eq
Tensor.__ne__ = ne
Tensor.__lt__ = lt
Tensor.__le__ = le
Tensor.__gt__ = gt
Tensor.__ge__ = ge
Tensor.__and__ = _bitwise_or_logical("and")
Tensor.__or__ = _bitwise_or_logical("or")
Tensor.__xor__ = _bitwise_or_logical("xor")
Tensor.__rand__ = Tensor.__and__
Tensor.__ror__ = Tensor.__or__
Tensor.__rxor__ = Tensor.__xor__
Tensor.__invert__ = logical_not
