"""What every part of the namespace shares: the backend a call runs on (its ``device``),
Python scalars lifted next to an array, and the host path for the few functions the op
contract has no primitive for (``nextafter``, ``hypot``...).

The host path reads the values (``to_data``), computes them with Python's own arithmetic
and writes them back to the same backend: slower than a kernel, but it gives every backend
(python, numpy, wasm, wgpu) the whole namespace with one definition.
"""

from __future__ import annotations

from .. import dtype as dt
from ..backends import available, default_backend, get_backend
from ..contract import Backend
from ..errors import DTypeError
from ..ops.conversion import tensor as _tensor
from ..tensor import Device, Tensor
from ..tensordata import TensorData


def resolve_device(device) -> Backend:
    """The backend a ``device=`` argument names.

    An array's ``device``, a Backend or a backend name selects that backend; a hardware
    string ("cpu") selects the default backend when it runs there, else an undecorated
    backend that does.
    """
    if device is None:
        return default_backend()
    if isinstance(device, Device):
        return device.backend
    if isinstance(device, Backend):
        return device
    if isinstance(device, str):
        if device in available():
            return get_backend(device)
        if default_backend().device == device:
            return default_backend()
        for name in available():
            b = get_backend(name)
            if b.device == device and b.inner is None:
                return b
    raise ValueError(
        f"unknown device {device!r}; valid: an array's device, a backend, a backend name "
        f"({', '.join(available())}) or 'cpu'"
    )


def backend_of(*args, device=None) -> Backend:
    """The backend of the first array among ``args``, else the one ``device`` names."""
    for a in args:
        if isinstance(a, Tensor):
            return a.backend
    return resolve_device(device)


def is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, Tensor)


def check_array(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected an ember array, got {type(x).__name__}")
    return x


def lift(x, like: Tensor, op: str) -> Tensor:
    """``x`` as an array beside ``like``: Python scalars are weak (they take ``like``'s kind
    of dtype when they fit it, as the standard asks)."""
    if isinstance(x, Tensor):
        return x
    if not is_scalar(x):
        raise TypeError(f"{op}: expected an array or a Python scalar, got {type(x).__name__}")
    kind = dt.scalar_kind(x)
    if like.dtype.is_bool and kind != "b":
        raise TypeError(f"{op}: a Python {type(x).__name__} can't combine with a bool array")
    if like.dtype.is_int and kind == "f":
        raise TypeError(f"{op}: a Python float can't combine with an integer array")
    return _tensor(x, dtype=like.dtype, backend=like.backend)


def pair(x1, x2, op: str) -> tuple[Tensor, Tensor]:
    """Two operands of a binary function as arrays (one of them may be a Python scalar)."""
    if isinstance(x1, Tensor):
        return x1, lift(x2, x1, op)
    if isinstance(x2, Tensor):
        return lift(x1, x2, op), x2
    raise TypeError(f"{op}: at least one argument must be an ember array")


def host_map(fn, dtype: dt.DType, *arrays: Tensor) -> Tensor:
    """``fn`` applied element by element on the host, written back to the arrays' backend.

    >>> import ember
    >>> from ember.array_api._common import host_map
    >>> host_map(max, ember.int32, ember.tensor([6, 5]), ember.tensor([3, 7])).tolist()
    [6, 7]
    """
    from ..ops.shape_ops import broadcast_tensors

    arrays = broadcast_tensors(*arrays) if len(arrays) > 1 else arrays
    b = arrays[0].backend
    b.caps.check_dtype(dtype, "host_map", b.name)
    columns = [a.to_data().values() for a in arrays]
    values = [fn(*v) for v in zip(*columns)]
    data = TensorData.from_values(values, arrays[0].shape, dtype)
    return Tensor(b.from_data(data), b)


def require(x: Tensor, op: str, *kinds: str) -> None:
    """A typed error unless ``x``'s dtype is of one of ``kinds`` ('b', 'i' signed or unsigned
    integer, 'f')."""
    kind = "i" if x.dtype.kind in "iu" else x.dtype.kind
    if kind not in kinds:
        names = {"b": "bool", "i": "integer", "f": "real floating"}
        valid = " or ".join(names[k] for k in kinds)
        raise DTypeError(f"{op}: expected a {valid} array, got {x.dtype}")
