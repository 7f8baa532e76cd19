"""``from_dlpack``: an array from any DLPack exporter (numpy, PyTorch, JAX, an ember array).

On the numpy backend the result *is* the producer's memory (numpy's view of the capsule,
held as the primitive); on every other backend it is a copy (``copy=False`` raises
``BufferError`` there). ``copy=True`` always copies.

>>> import numpy as np, ember
>>> a = np.arange(3.0)
>>> t = ember.from_dlpack(a, device="numpy")
>>> np.from_dlpack(t).ctypes.data == a.ctypes.data
True
"""

from __future__ import annotations

from .. import dlpack
from ..errors import DTypeError
from ..tensor import Tensor
from ._common import resolve_device


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Tensor:
    """An array sharing (or copying) the memory of a DLPack exporter: a numpy array, a torch tensor,
    another Ember array. ``device`` moves it; ``copy=False`` refuses a copy.

    >>> import numpy as np, ember.array_api as xp
    >>> host = np.array([1.0, 2.0], dtype=np.float32)
    >>> x = xp.from_dlpack(host)
    >>> x.tolist(), x.dtype
    ([1.0, 2.0], ember.float32)
    """
    b = resolve_device(device)
    if _holds_numpy(b) and dlpack.device_of(b) == (dlpack.KDL_CPU, 0):
        return _adopt(x, b, copy)
    if copy is False:
        raise BufferError(
            f"from_dlpack: backend {b.name} can't share a producer's memory (copy=False); "
            f"pass copy=None or True to copy, or device='numpy' to share"
        )
    capsule = dlpack.capsule_of(x, copy=copy)
    return Tensor(b.from_data(dlpack.read_capsule(capsule)), b)


def _holds_numpy(backend) -> bool:
    try:
        from ..backends.numpy.backend import NumpyBackend
    except ImportError:  # no numpy here: every backend copies
        return False
    return isinstance(backend, NumpyBackend)


def _adopt(x, backend, copy):
    """numpy's view of the producer's memory, held by the numpy backend as it is."""
    import numpy as np

    from .. import dtype as dt

    arr = np.from_dlpack(x, copy=copy)
    try:
        dt.as_dtype(arr.dtype.name)
    except DTypeError as e:
        raise DTypeError(f"from_dlpack: {e}") from None
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return Tensor(arr, backend)
