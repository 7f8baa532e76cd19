"""Data into tensors: ``ember.tensor`` and ``ember.from_numpy``, and the backend a new tensor
goes to. Below every other op module (they lift Python values with it)."""

from __future__ import annotations

from .. import dtype as dt
from ..backends import default_backend, get_backend
from ..contract import Backend
from ..tensordata import TensorData
from ..tensor import Tensor


def resolve_backend(backend: str | Backend | None) -> Backend:
    """The backend named (or given), else the default one."""
    return default_backend() if backend is None else get_backend(backend)


def tensor(data, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor from nested lists, a scalar, a numpy array or another tensor.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    b = resolve_backend(backend)
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
    """A tensor holding a copy of a numpy array (its dtype kept).

    >>> import ember, numpy as np
    >>> t = ember.from_numpy(np.array([1, 2], dtype=np.int32))
    >>> t.dtype, t.tolist()
    (ember.int32, [1, 2])
    """
    return tensor(TensorData.from_numpy(array), backend=backend)


