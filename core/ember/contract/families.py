"""Op families: one user-level op (``add``) and the backend op each dtype kind runs.

The front end picks the op from a family by the operands' dtype: ``ADD.method(dt.int32)`` is
``"int_add"``. Backend method names carry the kind (Burn's convention); user names do not.

>>> from ember import dtype as dt
>>> ADD.method(dt.float32), ADD.method(dt.uint8), SUM.method(dt.bool_) is None
('float_add', 'int_add', True)
"""

from __future__ import annotations

from .. import dtype as dt
from ..errors import UnsupportedOpError
from . import float_math as f
from . import int_bool as i
from . import reductions as r
from .registry import Kind, Op, ops


class Family:
    """The ops behind one user-level name, by dtype kind (float, int, bool)."""

    __slots__ = ("_methods", "name", "ops")

    def __init__(self, name: str, float: Op | None = None, int: Op | None = None,  # noqa: A002
                 bool: Op | None = None):  # noqa: A002
        self.name = name
        self.ops = {"f": float, "i": int, "u": int, "b": bool}
        # method names by dtype kind, looked up on every call (kept flat for speed)
        self._methods = {k: (op.name if op is not None else None) for k, op in self.ops.items()}

    def method(self, dtype: dt.DType) -> str | None:
        """The backend method name for ``dtype``, or None when the family has no such op."""
        return self._methods[dtype.kind]

    def require(self, dtype: dt.DType) -> str:
        """The backend method name for ``dtype``; UnsupportedOpError naming valid dtypes."""
        name = self._methods[dtype.kind]
        if name is None:
            kinds = sorted({k for k, op in (("float", self.ops["f"]), ("int", self.ops["i"]),
                                            ("bool", self.ops["b"])) if op is not None})
            raise UnsupportedOpError(
                f"{self.name}: not defined for {dtype.name} tensors (valid: {', '.join(kinds)})"
            )
        return name

    def __repr__(self) -> str:
        return f"<family {self.name}>"


ADD = Family("add", f.float_add, i.int_add)
SUB = Family("sub", f.float_sub, i.int_sub)
MUL = Family("mul", f.float_mul, i.int_mul)
DIV = Family("div", f.float_div)
FLOOR_DIVIDE = Family("floor_divide", f.float_floor_divide, i.int_floor_divide)
REMAINDER = Family("remainder", f.float_remainder, i.int_remainder)
POW = Family("pow", f.float_pow, i.int_pow)
MAXIMUM = Family("maximum", f.float_maximum, i.int_maximum)
MINIMUM = Family("minimum", f.float_minimum, i.int_minimum)
ATAN2 = Family("atan2", f.float_atan2)
EQ = Family("eq", f.float_eq, i.int_eq, i.bool_eq)
NE = Family("ne", f.float_ne, i.int_ne, i.bool_ne)
LT = Family("lt", f.float_lt, i.int_lt)
LE = Family("le", f.float_le, i.int_le)
GT = Family("gt", f.float_gt, i.int_gt)
GE = Family("ge", f.float_ge, i.int_ge)
AND = Family("and", int=i.int_bitwise_and, bool=i.bool_and)
OR = Family("or", int=i.int_bitwise_or, bool=i.bool_or)
XOR = Family("xor", int=i.int_bitwise_xor, bool=i.bool_xor)
NOT = Family("not", int=i.int_bitwise_not, bool=i.bool_not)
SHIFT_LEFT = Family("shift_left", int=i.int_shift_left)
SHIFT_RIGHT = Family("shift_right", int=i.int_shift_right)
NEG = Family("neg", f.float_neg, i.int_neg)
ABS = Family("abs", f.float_abs, i.int_abs)
SIGN = Family("sign", f.float_sign, i.int_sign)
SUM = Family("sum", r.float_sum, r.int_sum)
PROD = Family("prod", r.float_prod, r.int_prod)
MAX = Family("max", r.float_max, r.int_max)
MIN = Family("min", r.float_min, r.int_min)
ARGMAX = Family("argmax", r.float_argmax, r.int_argmax)
ARGMIN = Family("argmin", r.float_argmin, r.int_argmin)
CUMSUM = Family("cumsum", r.float_cumsum, r.int_cumsum)
CUMPROD = Family("cumprod", r.float_cumprod, r.int_cumprod)
SORT = Family("sort", r.float_sort, r.int_sort)
MATMUL = Family("matmul", r.float_matmul, r.int_matmul)
ANY = Family("any", bool=r.bool_any)
ALL = Family("all", bool=r.bool_all)

# float-only math by user name (exp, log, ...): every one-argument elementwise float op; the
# front end casts int/bool inputs to the default float
FLOAT_UNARY = {
    op.name.removeprefix("float_"): Family(op.name.removeprefix("float_"), op)
    for op in ops(Kind.ELEMENTWISE)
    if op.name.startswith("float_") and op.args == ("x",)
}
