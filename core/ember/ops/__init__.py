"""The functional tensor API, re-exported as ``ember.<name>``.

Each module attaches its methods to Tensor when imported; importing this package imports them
all.
"""

from .arithmetic import (
    add, div, eq, floor_divide, ge, gt, le, logical_and, logical_not, logical_or, logical_xor,
    lt, maximum, minimum, mul, ne, neg, pow, remainder, sub, true_divide,
)
from .creation import from_numpy, full, ones, tensor, zeros
from .where import where

__all__ = [
    "add", "div", "eq", "floor_divide", "ge", "gt", "le", "logical_and", "logical_not",
    "logical_or", "logical_xor", "lt", "maximum", "minimum", "mul", "ne", "neg", "pow",
    "remainder", "sub", "true_divide", "from_numpy", "full", "ones", "tensor", "zeros", "where",
]
