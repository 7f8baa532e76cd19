"""The functional tensor API, re-exported as ``ember.<name>``.

Each module attaches its methods to Tensor when imported; importing this package imports them
all.
"""

from .arithmetic import (
    add, div, eq, floor_divide, ge, gt, le, logical_and, logical_not, logical_or, logical_xor,
    lt, maximum, minimum, mul, ne, neg, pow, remainder, sub, true_divide,
)
from .conversion import from_numpy, tensor
from .creation import (
    arange, bernoulli, empty, empty_like, eye, full, full_like, linspace, normal, ones,
    ones_like, rand, rand_like, randint, randn, randn_like, uniform, zeros, zeros_like,
)
from .indexing import (
    gather, index_add, index_select, masked_fill, masked_select, narrow,
    one_hot, scatter, scatter_add, select, take, take_along_dim,
)
from .linalg import (
    bmm, diagonal, dot, einsum, ger, matmul, mm, outer, trace, tril, triu,
)
from .math import (
    abs, absolute, acos, arccos, arcsin, arctan, arctan2, asin, atan, atan2, ceil, clamp, clip,
    cos, cosh, erf, exp, expm1, floor, isfinite, isinf, isnan, log, log1p, log2, log10,
    nan_to_num, reciprocal, round, rsqrt, sigmoid, sign, sin, sinh, sqrt, square, tan, tanh,
    trunc,
)
from .reduction import (
    all, amax, amin, any, argmax, argmin, count_nonzero, cumprod, cumsum, logsumexp, max, mean,
    min, norm, prod, std, sum, var,
)
from .shape_ops import (
    atleast_1d, atleast_2d, broadcast_tensors, broadcast_to, cat, chunk, concat, concatenate,
    expand, expand_as, flatten, flip, fliplr, flipud, hstack, moveaxis, movedim, permute,
    ravel, repeat, reshape, roll, split, squeeze, stack, swapaxes, swapdims, t, tile, transpose,
    unbind, unflatten, unsqueeze, view, vstack,
)
from .padding import pad
from .sorting import argsort, kthvalue, median, msort, sort, topk, unique
from .where import argwhere, nonzero, where

__all__ = [
    "add", "div", "eq", "floor_divide", "ge", "gt", "le", "logical_and", "logical_not",
    "logical_or", "logical_xor", "lt", "maximum", "minimum", "mul", "ne", "neg", "pow",
    "remainder", "sub", "true_divide", "from_numpy", "full", "ones", "tensor", "zeros", "where",
    # creation
    "arange", "bernoulli", "empty", "empty_like", "eye", "full_like", "linspace", "normal",
    "ones_like", "rand", "rand_like", "randint", "randn", "randn_like", "uniform", "zeros_like",
    # math
    "abs", "absolute", "acos", "arccos", "arcsin", "arctan", "arctan2", "asin", "atan", "atan2",
    "ceil", "clamp", "clip", "cos", "cosh", "erf", "exp", "expm1", "floor", "isfinite", "isinf",
    "isnan", "log", "log1p", "log2", "log10", "nan_to_num", "reciprocal", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
    # reduction
    "all", "amax", "amin", "any", "argmax", "argmin", "count_nonzero", "cumprod", "cumsum",
    "logsumexp", "max", "mean", "min", "norm", "prod", "std", "sum", "var",
    # shape ops
    "atleast_1d", "atleast_2d", "broadcast_tensors", "broadcast_to", "cat", "chunk", "concat",
    "concatenate", "expand", "expand_as", "flatten", "flip", "fliplr", "flipud", "hstack",
    "moveaxis", "movedim", "pad", "permute", "ravel", "repeat", "reshape", "roll", "split",
    "squeeze", "stack", "swapaxes", "swapdims", "t", "tile", "transpose", "unbind", "unflatten",
    "unsqueeze", "view", "vstack",
    # indexing
    "argwhere", "gather", "index_add", "index_select", "masked_fill", "masked_select", "narrow",
    "nonzero", "one_hot", "scatter", "scatter_add", "select", "take", "take_along_dim",
    # linalg
    "bmm", "diagonal", "dot", "einsum", "ger", "matmul", "mm", "outer", "trace", "tril", "triu",
    # sorting
    "argsort", "kthvalue", "median", "msort", "sort", "topk", "unique",
]
