"""Creating tensors: from data, constant fills, ranges and random draws."""

from __future__ import annotations

from .. import dtype as dt
from ..backend import Backend
from ..backends import default_backend, get_backend
from ..data import TensorData
from ..tensor import Tensor


def _backend(backend: str | Backend | None) -> Backend:
    return default_backend() if backend is None else get_backend(backend)


def _shape(size: tuple) -> tuple[int, ...]:
    """Accept ``zeros(2, 3)`` and ``zeros((2, 3))``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def tensor(data, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor from nested lists, a scalar, a numpy array or another tensor.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    b = _backend(backend)
    if isinstance(data, Tensor):
        out = data.to(b)
        return out if dtype is None else out.astype(dtype)
    if isinstance(data, TensorData):
        td = data
    elif hasattr(data, "__array_interface__") and hasattr(data, "dtype"):
        td = TensorData.from_numpy(data)
    else:
        td = TensorData.from_list(data, None if dtype is None else dt.as_dtype(dtype))
    if dtype is not None and td.dtype != dt.as_dtype(dtype):
        td = td.astype(dtype)
    b.caps.check_dtype(td.dtype, "tensor", b.name)
    return Tensor(b.from_data(td), b)


def from_numpy(array, backend: str | Backend | None = None) -> Tensor:
    """A tensor holding a copy of a numpy array (its dtype kept)."""
    return tensor(TensorData.from_numpy(array), backend=backend)


def full(size, fill_value, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    shape = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
    d = dt.as_dtype(dtype) if dtype is not None else dt.infer_scalar_dtype(fill_value)
    b = _backend(backend)
    b.caps.check_dtype(d, "full", b.name)
    return Tensor(b.full(shape, fill_value, d), b)


def zeros(*size, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor of zeros (default float dtype): ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return full(_shape(size), 0, dtype or dt.default_float, backend)


def ones(*size, dtype=None, backend: str | Backend | None = None) -> Tensor:
    return full(_shape(size), 1, dtype or dt.default_float, backend)
