"""Data types and type promotion.

Ember follows numpy/PyTorch semantics. Where the two disagree, Ember takes PyTorch's rule,
because it keeps models in the dtype the user chose on every backend (GPUs have no float64):

- integer/bool combined with a float tensor gives that float dtype (numpy widens int32+float32
  to float64);
- Python scalars are "weak" (NEP 50): ``int_tensor + 2`` stays int, ``float16_tensor * 0.5``
  stays float16, ``int_tensor * 0.5`` becomes the default float dtype (float32);
- true division of integers gives the default float dtype;
- signed with unsigned integers gives the narrowest signed type holding both (uint8 with int8
  is int16, uint32 with int32 int64); uint64 with a signed integer has none and raises
  (numpy gives float64, the Array API standard leaves it undefined, PyTorch refuses).

>>> from ember import dtype
>>> dtype.promote_types(dtype.int32, dtype.float16)
ember.float16
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DTypeError


@dataclass(frozen=True)
class DType:
    """A tensor element type: its name, kind ('b' bool, 'u'/'i' integer, 'f' float) and size.

    >>> import ember
    >>> d = ember.int8
    >>> d.name, d.kind, d.itemsize, d.bits, d.is_int, d.is_signed, d.int_range
    ('int8', 'i', 1, 8, True, True, (-128, 127))
    >>> ember.float16.is_float, ember.bool.is_bool, ember.uint8.is_signed, str(ember.float32)
    (True, True, False, 'float32')
    """

    name: str
    kind: str
    itemsize: int
    struct_format: str  # little-endian struct code of one element
    array_typecode: str | None  # array.array code, None where array has none (float16)

    @property
    def is_float(self) -> bool:
        """Whether it is a float dtype (float16/32/64)."""
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """Whether it is an integer dtype (signed or unsigned)."""
        return self.kind in "iu"

    @property
    def is_bool(self) -> bool:
        """Whether it is the bool dtype."""
        return self.kind == "b"

    @property
    def is_signed(self) -> bool:
        """Whether values can be negative (floats and signed integers)."""
        return self.kind in "if"

    @property
    def bits(self) -> int:
        """The size of one element in bits."""
        return self.itemsize * 8

    @property
    def int_range(self) -> tuple[int, int]:
        """(min, max) representable by an integer dtype."""
        if self.kind == "u":
            return 0, (1 << self.bits) - 1
        if self.kind == "i":
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if self.kind == "b":
            return 0, 1
        raise DTypeError(f"int_range: {self.name} is not an integer dtype")

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __str__(self) -> str:
        return self.name


bool_ = DType("bool", "b", 1, "?", "B")
uint8 = DType("uint8", "u", 1, "B", "B")
int8 = DType("int8", "i", 1, "b", "b")
int16 = DType("int16", "i", 2, "h", "h")
uint16 = DType("uint16", "u", 2, "H", "H")
int32 = DType("int32", "i", 4, "i", "i")
uint32 = DType("uint32", "u", 4, "I", "I")
int64 = DType("int64", "i", 8, "q", "q")
uint64 = DType("uint64", "u", 8, "Q", "Q")
float16 = DType("float16", "f", 2, "e", None)
float32 = DType("float32", "f", 4, "f", "f")
float64 = DType("float64", "f", 8, "d", "d")

ALL: tuple[DType, ...] = (bool_, uint8, int8, int16, uint16, int32, uint32, int64, uint64,
                          float16, float32, float64)
FLOATS = (float16, float32, float64)
INTS = (uint8, int8, int16, uint16, int32, uint32, int64, uint64)

_BY_NAME = {d.name: d for d in ALL}
_ALIASES = {
    "bool_": bool_,
    "float": float32,
    "double": float64,
    "half": float16,
    "int": int64,
    "long": int64,
    "f2": float16,
    "f4": float32,
    "f8": float64,
    "short": int16,
    "i1": int8,
    "i2": int16,
    "i4": int32,
    "i8": int64,
    "u1": uint8,
    "u2": uint16,
    "u4": uint32,
    "u8": uint64,
    "b1": bool_,
}

# Default dtypes for Python scalars / nested lists, as in PyTorch.
default_float = float32
default_int = int64


def get_default_float() -> DType:
    """The float dtype used for Python floats and for ``rand``/``zeros`` without a dtype.

    >>> from ember import dtype
    >>> dtype.get_default_float()
    ember.float32
    """
    return default_float


def set_default_float(dt: DType | str) -> None:
    """Set the float dtype used for Python floats and for ``rand``/``zeros`` without a dtype.

    >>> import ember
    >>> ember.set_default_float("float64")
    >>> ember.zeros(1).dtype, ember.tensor([0.5]).dtype
    (ember.float64, ember.float64)
    >>> ember.set_default_float(ember.float32)
    """
    global default_float
    d = as_dtype(dt)
    if not d.is_float:
        raise DTypeError(f"set_default_float: {d} is not a float dtype; valid: float16, float32, float64")
    default_float = d


def as_dtype(obj: object) -> DType:
    """Turn a DType, its name, a numpy dtype or the Python types bool/int/float into a DType.

    >>> import ember
    >>> from ember.dtype import as_dtype
    >>> as_dtype("int32"), as_dtype(float), as_dtype(bool), as_dtype(ember.uint8)
    (ember.int32, ember.float32, ember.bool, ember.uint8)
    """
    if isinstance(obj, DType):
        return obj
    if obj is bool:
        return bool_
    if obj is int:
        return default_int
    if obj is float:
        return default_float
    name = getattr(obj, "name", None) if not isinstance(obj, str) else obj
    if name is None and isinstance(obj, type):  # numpy scalar types such as np.float32
        name = obj.__name__
    if isinstance(name, str):
        found = _BY_NAME.get(name) or _ALIASES.get(name)
        if found is not None:
            return found
    valid = ", ".join(d.name for d in ALL)
    raise DTypeError(f"unknown dtype {obj!r}; valid dtypes: {valid}")


def promote_types(a: DType, b: DType) -> DType:
    """The dtype two tensors are combined in (see the module docstring for the rules).

    >>> import ember
    >>> ember.promote_types(ember.int32, ember.int64), ember.promote_types(ember.uint8, ember.int8)
    (ember.int64, ember.int16)
    >>> ember.promote_types(ember.int64, ember.float16), ember.promote_types(ember.bool, ember.int8)
    (ember.float16, ember.int8)
    """
    if a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float and b.is_float:
        return a if a.itemsize >= b.itemsize else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize == 8:
        raise DTypeError(
            f"promote_types: {a} and {b} have no common integer dtype (uint64 values don't fit "
            "int64); cast one of them with .to(...)"
        )
    return _SIGNED[unsigned.itemsize * 2]


_SIGNED = {1: int8, 2: int16, 4: int32, 8: int64}


def holding(dtype: DType, held: frozenset) -> DType | None:
    """``dtype`` if it is in ``held``, else the narrowest integer dtype of ``held`` whose range
    covers ``dtype``'s (a backend without int16 computes uint8 with int8 in int32); None
    when there is none.

    >>> import ember
    >>> from ember.dtype import holding
    >>> held = frozenset({ember.int8, ember.uint8, ember.int32, ember.int64, ember.float32})
    >>> holding(ember.int16, held), holding(ember.uint64, held), holding(ember.int8, held)
    (ember.int32, None, ember.int8)
    """
    if dtype in held:
        return dtype
    if not dtype.is_int:
        return None
    lo, hi = dtype.int_range
    wider = [d for d in held if d.is_int and d.int_range[0] <= lo and d.int_range[1] >= hi]
    return min(wider, key=lambda d: d.itemsize, default=None)


def scalar_kind(value: object) -> str:
    """'b', 'i' or 'f' for a Python scalar; raises for anything else.

    >>> from ember.dtype import scalar_kind
    >>> scalar_kind(True), scalar_kind(3), scalar_kind(0.5)
    ('b', 'i', 'f')
    """
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    raise DTypeError(f"expected a Python bool, int or float scalar, got {type(value).__name__}")


def result_type_with_scalar(tensor_dtype: DType, value: object) -> DType:
    """Dtype of ``tensor op scalar``: the scalar is weak and only lifts the kind.

    >>> from ember import dtype
    >>> dtype.result_type_with_scalar(dtype.int32, 2), dtype.result_type_with_scalar(dtype.int32, 0.5)
    (ember.int32, ember.float32)
    >>> dtype.result_type_with_scalar(dtype.float16, 0.5)
    ember.float16
    """
    kind = scalar_kind(value)
    if kind == "f" and not tensor_dtype.is_float:
        return default_float
    if kind == "i" and tensor_dtype.is_bool:
        return default_int
    return tensor_dtype


def infer_scalar_dtype(value: object) -> DType:
    """The dtype of a Python scalar on its own: bool, the default int (int64) or the default float.

    >>> from ember.dtype import infer_scalar_dtype
    >>> infer_scalar_dtype(True), infer_scalar_dtype(1), infer_scalar_dtype(1.0)
    (ember.bool, ember.int64, ember.float32)
    """
    kind = scalar_kind(value)
    return {"b": bool_, "i": default_int, "f": default_float}[kind]
