"""Integer results out of range of the storage type: sums, products, cumulative sums, matmul
accumulations and casts, on every integer dtype.

References compute in int64 (exact for these values) and the case casts them to the result
dtype, so a result that must wrap (int8 @ int8 is int8, like numpy) wraps there, and one that
must not (a sum of int8 is int64) keeps its value. A backend that can't hold a result must
refuse it with a typed error (a known failure naming it), never return it wrapped.
"""

import numpy as np

from ..build import SHORT, case, t

_BIG = {"int8": 100, "uint8": 200, "int32": 2_000_000_000, "int64": 2_000_000_000}
# products of three leave the dtype (int64: int32) and stay exact in int64
_PROD = {"int8": 100, "uint8": 200, "int32": 100_000, "int64": 100_000}
_INTS = tuple(_BIG)
_PAST = {"int8": "i8", "uint8": "u8", "int32": "i32", "int64": "i32"}  # the range a case leaves


def _row(dtype: str, n: int = 4, values: dict = _BIG) -> np.ndarray:
    """``n`` copies of a value whose sum leaves ``dtype`` (int64: leaves int32)."""
    return np.full((n,), values[dtype], dtype)


for d in _INTS:
    s, p = SHORT[d], _PAST[d]
    case(f"sum/{s}/beyond_{p}", "Tensor.sum", t(_row(d)), ref=np.sum, out="int64")
    case(f"prod/{s}/beyond_{p}", "Tensor.prod", t(_row(d, 3, _PROD)), ref=np.prod, out="int64")
    case(f"cumsum/{s}/beyond_{p}", "ember.cumsum", t(_row(d)), 0,
         ref=lambda a, dim: np.cumsum(a, dim), out="int64")
    # matmul keeps the operands' dtype: int8/uint8/int32 accumulations wrap, int64's don't
    a = np.full((2, 3), _BIG[d] // 2 if d == "int64" else _BIG[d], d)
    case(f"matmul/{s}/accumulate_beyond_{p}", "operator.matmul", t(a), t(a.T.copy()),
         ref=np.matmul)
    # elementwise: wraps at the dtype's width (int64: past int32, where wgpu stores it)
    case(f"mul/{s}/beyond_{p}", "operator.mul", t(_row(d, 2)), t(np.array([3, 50], d)),
         ref=np.multiply)

case("add/i64/beyond_i32", "operator.add", t(np.array([2_000_000_000, -2_000_000_000], "int64")),
     t(np.array([2_000_000_000, -2_000_000_000], "int64")), ref=np.add)
case("sub/i64/beyond_i32", "operator.sub", t(np.array([-2_000_000_000, 5], "int64")),
     t(np.array([2_000_000_000, 7], "int64")), ref=np.subtract)
case("neg/i32/min_wraps", "operator.neg", t(np.array([-(2**31), 5], "int32")), ref=np.negative)
case("sum/b/count", "Tensor.sum", t(np.ones((300,), bool)), ref=np.sum, out="int64")

# casts: int -> narrower int wraps (numpy's astype); float -> int64 keeps values past int32
for src, dst, values in (
    ("int32", "int8", [300, -200, 128, -129]),
    ("int32", "uint8", [256 + 5, -1, 1000]),
    ("int64", "int32", [2**31, -(2**31) - 1, 7]),
    ("int64", "int8", [1000, -1000, 127]),
    ("uint8", "int8", [200, 128, 127]),
):
    case(f"cast/{SHORT[src]}_to_{SHORT[dst]}/wraps", "Tensor.astype", t(np.array(values, src)),
         dst, ref=lambda a, _d: a, out=dst)
case("cast/f32_to_i64/beyond_i32", "Tensor.astype",
     t(np.array([3e9, -3e9, 1.5], "float32")), "int64", ref=lambda a, _d: a, out="int64")
