"""How the Tensor API reaches the backend: scalar lifting, dtype promotion, broadcasting and
the choice of the backend op by dtype kind (an op :class:`~ember.contract.families.Family`).

``x + y`` runs ``binary(ADD, x, y)``: same-shape, same-dtype tensors and tensor-scalar pairs
that keep the tensor's dtype take a fast path straight to ``backend.float_add``; everything
else is lifted, promoted and broadcast by :func:`prepare` first.
"""

from __future__ import annotations

from .. import dtype as dt
from ..contract.families import Family
from ..errors import DTypeError, ShapeError
from ..shape import broadcast_shapes
from ..tensor import Tensor, check_same_backend, co_locate
from .conversion import tensor

Scalar = bool | int | float


def backend_op(t: Tensor, family: Family, dtype: dt.DType | None = None):
    """The bound backend method of ``family`` for ``dtype`` (default: ``t``'s dtype)."""
    return getattr(t.backend, family.require(dtype or t.dtype))


def is_scalar(x: object) -> bool:
    return isinstance(x, (bool, int, float)) or (
        hasattr(x, "dtype") and hasattr(x, "item") and getattr(x, "shape", None) == ()
        and not isinstance(x, Tensor)
    )


def scalar_value(x: object) -> Scalar:
    return x.item() if hasattr(x, "item") and not isinstance(x, (bool, int, float)) else x


def full_like_shape(ref: Tensor, value: Scalar, dtype: dt.DType, shape=None) -> Tensor:
    shape = ref.shape if shape is None else tuple(shape)
    return Tensor(ref.backend.full(shape, value, dtype), ref.backend)


def as_tensor(x: object, like: Tensor | None = None) -> Tensor:
    """Tensors pass through; scalars, lists and numpy arrays become tensors on ``like``'s
    backend (or the default backend)."""
    if isinstance(x, Tensor):
        return x
    backend = like.backend if like is not None else None
    return tensor(x, backend=backend)


def result_dtype(op: str, *operands: object) -> dt.DType:
    """Promotion over tensors (strong) and Python scalars (weak), widened to an integer dtype
    the first tensor's backend holds where it lacks the promoted one (uint8 with int8 is int16,
    int32 on a backend without int16)."""
    tensors = [o for o in operands if isinstance(o, Tensor)]
    if not tensors:
        raise DTypeError(f"{op}: needs at least one tensor operand")
    out = tensors[0].dtype
    for t in tensors[1:]:
        out = dt.promote_types(out, t.dtype)
    for o in operands:
        if not isinstance(o, Tensor):
            out = dt.result_type_with_scalar(out, scalar_value(o))
    return dt.holding(out, tensors[0].backend.caps.dtypes) or out


def broadcast_to(t: Tensor, shape: tuple[int, ...], op: str = "broadcast_to") -> Tensor:
    """``t`` viewed with ``shape`` (numpy broadcasting rules)."""
    if t.shape == shape:
        return t
    broadcast_shapes(t.shape, shape, op=op)  # raises a clear error when they don't fit
    if len(shape) < t.ndim:
        raise ShapeError(f"{op}: can't broadcast shape {t.shape} to fewer dims {shape}")
    b = t.backend
    prim = t._prim
    if t.ndim < len(shape):
        prim = b.reshape(prim, (1,) * (len(shape) - t.ndim) + t.shape)
    return Tensor(b.expand(prim, tuple(shape)), b)


def prepare(op: str, *operands: object, dtype: dt.DType | None = None) -> list[Tensor]:
    """Lift scalars, bring the tensors onto one backend (:func:`~ember.tensor.co_locate`), cast
    to a common dtype (``dtype`` or the promoted one) and broadcast to a common shape. Returns
    the tensors ready for a backend primitive."""
    operands = co_locate(op, *operands)
    tensors = [o for o in operands if isinstance(o, Tensor)]
    if not tensors:
        raise DTypeError(f"{op}: needs at least one tensor operand")
    ref = tensors[0]
    target = dtype or result_dtype(op, *operands)
    ref.backend.caps.check_dtype(target, op, ref.backend.name)
    shape = broadcast_shapes(*(o.shape for o in tensors), op=op)
    out = []
    for o in operands:
        if isinstance(o, Tensor):
            out.append(broadcast_to(o.astype(target), shape, op))
        else:
            if not is_scalar(o):
                raise DTypeError(
                    f"{op}: expected a tensor or a Python scalar, got {type(o).__name__}"
                )
            value = scalar_value(o)
            if type(value) is int and target.is_int and not _fits(value, target):
                lo, hi = target.int_range  # numpy 2 refuses too; wrapping is a wrong number
                raise DTypeError(
                    f"{op}: the Python int {value} is out of range for {target.name} ({lo} to "
                    f"{hi}), the dtype the result takes from the tensor; use a tensor of a "
                    f"wider dtype (x.astype(ember.int64)) or a value in range")
            out.append(full_like_shape(ref, value, target, shape))
    return out


def binary(family: Family, a: object, b: object, dtype: dt.DType | None = None,
           promote=None) -> Tensor:
    """Run ``family``'s backend op on ``a`` and ``b`` in ``dtype``; without one, in
    ``promote(name, a, b)`` (default: :func:`result_dtype`), which only runs when the operands
    don't already share a dtype."""
    if type(a) is Tensor:
        backend, pa = a.backend, a._prim
        da = backend.dtype(pa)
        if dtype is None or dtype is da:
            kind_b = type(b)
            if kind_b is Tensor:
                pb = b._prim
                if (b.backend is backend and backend.dtype(pb) is da
                        and backend.shape(pa) == backend.shape(pb)):
                    name = family.method(da)
                    if name is not None:
                        return Tensor(getattr(backend, name)(pa, pb), backend)
            elif (kind_b is float and da.kind == "f") or (kind_b is int and da.kind in "fiu"
                                                          and _fits(b, da)):
                # a weak scalar that keeps the tensor's dtype: no promotion, no broadcast
                name = family.method(da)
                if name is not None:
                    pb = backend.full(backend.shape(pa), b, da)
                    return Tensor(getattr(backend, name)(pa, pb), backend)
    if dtype is None and promote is not None:
        dtype = promote(family.name, a, b)
    x, y = prepare(family.name, a, b, dtype=dtype)
    return Tensor(backend_op(x, family)(x._prim, y._prim), x.backend)


def _fits(value: int, dtype: dt.DType) -> bool:
    if dtype.kind == "f":
        return True
    lo, hi = dtype.int_range
    return lo <= value <= hi


def unary(family: Family, x: Tensor, float_only: bool = True) -> Tensor:
    """Run ``family``'s backend op; with ``float_only`` int/bool inputs become the default
    float."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    if float_only and not x.dtype.is_float:
        x = x.astype(dt.default_float)
    return Tensor(backend_op(x, family)(x._prim), x.backend)


def wrap(t: Tensor, prim) -> Tensor:
    return Tensor(prim, t.backend)


# ---------------------------------------------------------------- argument checks (ops and nn)
def as_input(x, op: str) -> Tensor:
    """Tensors pass through; lists and numpy arrays become tensors on the default backend."""
    if isinstance(x, Tensor):
        return x
    if x is None:
        raise TypeError(f"{op}: expected a tensor, got None")
    return as_tensor(x)


def check_float(op: str, x: Tensor, *others: tuple[str, Tensor | None]) -> None:
    """``x`` is floating point and every named ``(name, tensor)`` shares its dtype and backend."""
    if not x.dtype.is_float:
        raise DTypeError(
            f"{op}: needs a floating point input, got {x.dtype}; convert with .float()"
        )
    present = [t for _, t in others if t is not None]
    check_same_backend(op, x, *present)
    for name, t in others:
        if t is not None and t.dtype != x.dtype:
            raise DTypeError(
                f"{op}: input is {x.dtype} but {name} is {t.dtype}; they must match "
                f"(convert one with .to({x.dtype.name}))"
            )
