"""What the Array API standard (revision 2024.12) says, written down from the specification:
the names a namespace has, the dtypes, and the type promotion table. The compliance suite
checks ``ember.array_api`` against these, never against itself."""

CONSTANTS = ["e", "inf", "nan", "newaxis", "pi"]
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]
CREATION = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full",
            "full_like", "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros",
            "zeros_like"]
DATA_TYPE_FUNCTIONS = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]
ELEMENTWISE = (
    "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift "
    "bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh "
    "divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf "
    "isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or "
    "logical_xor maximum minimum multiply negative nextafter not_equal positive pow real "
    "reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc"
).split()
OTHER = (
    "take take_along_axis __array_namespace_info__ matmul matrix_transpose tensordot vecdot "
    "broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape "
    "roll squeeze stack tile unstack argmax argmin count_nonzero nonzero searchsorted where "
    "unique_all unique_counts unique_inverse unique_values argsort sort cumulative_prod "
    "cumulative_sum max mean min prod std sum var all any diff"
).split()
LINALG = (
    "cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank "
    "matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm"
).split()
NAMES = CONSTANTS + DTYPES + CREATION + DATA_TYPE_FUNCTIONS + ELEMENTWISE + OTHER

ARRAY_ATTRIBUTES = ["dtype", "device", "mT", "ndim", "shape", "size", "T"]
ARRAY_METHODS = (
    "__abs__ __add__ __and__ __array_namespace__ __bool__ __complex__ __dlpack__ "
    "__dlpack_device__ __eq__ __float__ __floordiv__ __ge__ __getitem__ __gt__ __index__ "
    "__int__ __invert__ __le__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ "
    "__or__ __pos__ __pow__ __rshift__ __setitem__ __sub__ __truediv__ __xor__ to_device"
).split()

# the promotion lattice of the standard, for pairs of the dtypes Ember has. Mixed kinds
# (integer with float, bool with numbers) are left to the implementation: not listed.
_SIGNED = ["int8", "int16", "int32", "int64"]
_UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
_FLOATS = ["float32", "float64"]


def _wider(a: str, b: str, order: list[str]) -> str:
    return a if order.index(a) >= order.index(b) else b


def promotion(a: str, b: str) -> str | None:
    """The standard's result dtype for ``a`` with ``b``; None where it defines none."""
    if a == b:
        return a
    for order in (_SIGNED, _UNSIGNED, _FLOATS):
        if a in order and b in order:
            return _wider(a, b, order)
    if {a, b} <= set(_SIGNED + _UNSIGNED):
        u, s = (a, b) if a in _UNSIGNED else (b, a)
        need = {"uint8": "int16", "uint16": "int32", "uint32": "int64"}.get(u)
        return None if need is None else _wider(need, s, _SIGNED)
    return None
