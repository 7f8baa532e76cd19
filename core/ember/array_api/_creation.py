"""Creation functions of the standard, on any backend (``device=`` names it).

>>> import ember.array_api as xp
>>> xp.full((2,), 7).dtype, xp.linspace(0, 1, 3, endpoint=False).tolist()
(ember.int64, [0.0, 0.3333333432674408, 0.6666666865348816])
"""

from __future__ import annotations

from .. import dtype as dt
from .. import ops
from ..tensor import Tensor
from ._common import backend_of, check_array, resolve_device
from ._interchange import from_dlpack


def _shape(shape) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _dtype(dtype):
    return None if dtype is None else dt.as_dtype(dtype)


def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> Tensor:
    """An array from an array, nested sequences, a scalar or a DLPack/buffer exporter.

    ``copy=False`` succeeds only where memory can be shared (an ember array already in
    ``dtype`` on ``device``, or a DLPack exporter the backend can adopt); it raises
    ``ValueError`` otherwise, as the standard asks.

    >>> import ember.array_api as xp
    >>> x = xp.asarray([[1, 2], [3, 4]], dtype=xp.float32, device="python")
    >>> x.shape, x.dtype, x.device, xp.asarray(x) is x
    ((2, 2), ember.float32, Device('python', 'cpu'), True)
    """
    d = _dtype(dtype)
    if isinstance(obj, Tensor):
        b = obj.backend if device is None else resolve_device(device)
        moves = b is not obj.backend or (d is not None and d != obj.dtype)
        if copy is False and moves:
            raise ValueError("asarray: copy=False but the dtype or device differs; a copy is needed")
        out = obj.to(b, d)
        # a new array object: `y[i] = v` on the copy swaps y's primitive, never obj's
        return out.clone() if copy and out is obj else out
    if hasattr(obj, "__dlpack__") and copy is not True:
        try:
            out = from_dlpack(obj, device=device, copy=copy)
        except BufferError as e:
            if copy is False:
                raise ValueError(f"asarray: copy=False but {e}") from e
        else:
            if d is not None and d != out.dtype:
                if copy is False:
                    raise ValueError("asarray: copy=False but the dtype differs")
                out = out.astype(d)
            return out
    if copy is False:
        raise ValueError(f"asarray: copy=False can't share the memory of a {type(obj).__name__}")
    if d is None and isinstance(obj, (list, tuple)) and _holds_arrays(obj):
        return ops.stack([asarray(o, device=device) for o in obj])
    return ops.tensor(obj, dtype=d, backend=resolve_device(device))


def _holds_arrays(seq) -> bool:
    return any(isinstance(o, Tensor) or (isinstance(o, (list, tuple)) and _holds_arrays(o))
               for o in seq)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """``start, start + step, ...`` up to ``stop`` (exclusive); ``arange(n)`` is ``0 .. n - 1``.

    >>> import ember.array_api as xp
    >>> xp.arange(5).tolist(), xp.arange(1.0, 2.0, 0.25).tolist()
    ([0, 1, 2, 3, 4], [1.0, 1.25, 1.5, 1.75])
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    b = resolve_device(device)
    d = _dtype(dtype)
    if d is None:
        as_float = any(isinstance(v, float) for v in (start, stop, step))
        d = dt.default_float if as_float else dt.default_int
    return ops.arange(start, stop, step, dtype=d, backend=b)


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    """An array of zeros (the default float dtype unless ``dtype`` is given).

    >>> import ember.array_api as xp
    >>> xp.zeros((2, 2), dtype=xp.int32).tolist()
    [[0, 0], [0, 0]]
    """
    return ops.zeros(_shape(shape), dtype=_dtype(dtype), backend=resolve_device(device))


def ones(shape, *, dtype=None, device=None) -> Tensor:
    """An array of ones (the default float dtype unless ``dtype`` is given).

    >>> import ember.array_api as xp
    >>> xp.ones(3).tolist()
    [1.0, 1.0, 1.0]
    """
    return ops.ones(_shape(shape), dtype=_dtype(dtype), backend=resolve_device(device))


def empty(shape, *, dtype=None, device=None) -> Tensor:
    """An "uninitialised" array; Ember fills it with zeros.

    >>> import ember.array_api as xp
    >>> xp.empty((2,)).tolist()
    [0.0, 0.0]
    """
    return zeros(shape, dtype=dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """An array filled with ``fill_value`` (the dtype follows the value unless given).

    >>> import ember.array_api as xp
    >>> xp.full((2,), 7).tolist(), xp.full((1,), 0.5).dtype
    ([7, 7], ember.float32)
    """
    d = _dtype(dtype) or dt.infer_scalar_dtype(fill_value)
    return ops.full(_shape(shape), fill_value, dtype=d, backend=resolve_device(device))


def _like(x: Tensor, dtype, device):
    x = check_array(x, "*_like")
    return (_dtype(dtype) or x.dtype), backend_of(x) if device is None else resolve_device(device)


def zeros_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Zeros with ``x``'s shape, dtype and device (or the given ``dtype``/``device``).

    >>> import ember.array_api as xp
    >>> xp.zeros_like(xp.asarray([1, 2])).tolist()
    [0, 0]
    """
    d, b = _like(x, dtype, device)
    return ops.full(x.shape, 0, dtype=d, backend=b)


def ones_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """Ones with ``x``'s shape, dtype and device (or the given ``dtype``/``device``).

    >>> import ember.array_api as xp
    >>> xp.ones_like(xp.asarray([1, 2]), dtype=xp.float64).tolist()
    [1.0, 1.0]
    """
    d, b = _like(x, dtype, device)
    return ops.full(x.shape, 1, dtype=d, backend=b)


def empty_like(x: Tensor, /, *, dtype=None, device=None) -> Tensor:
    """An "uninitialised" (zero-filled) array like ``x``.

    >>> import ember.array_api as xp
    >>> xp.empty_like(xp.asarray([[1.5]])).tolist()
    [[0.0]]
    """
    return zeros_like(x, dtype=dtype, device=device)


def full_like(x: Tensor, /, fill_value, *, dtype=None, device=None) -> Tensor:
    """``fill_value`` with ``x``'s shape, dtype and device (or the given ``dtype``/``device``).

    >>> import ember.array_api as xp
    >>> xp.full_like(xp.asarray([1, 2]), 9).tolist()
    [9, 9]
    """
    d, b = _like(x, dtype, device)
    return ops.full(x.shape, fill_value, dtype=d, backend=b)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype=None,
        device=None) -> Tensor:
    """A 2-d array with ones on diagonal ``k`` (0: the main one; positive: above it).

    >>> import ember.array_api as xp
    >>> xp.eye(2, 3, k=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    n_cols = n_rows if n_cols is None else n_cols
    d = _dtype(dtype) or dt.default_float
    b = resolve_device(device)
    if k == 0:
        return ops.eye(n_rows, n_cols, dtype=d, backend=b)
    rows = ops.arange(n_rows, dtype=dt.int64, backend=b).reshape(n_rows, 1)
    cols = ops.arange(n_cols, dtype=dt.int64, backend=b).reshape(1, n_cols)
    return ((cols - rows) == k).astype(d)


def linspace(start, stop, /, num: int, *, dtype=None, device=None,
             endpoint: bool = True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless ``endpoint=False``).

    >>> import ember.array_api as xp
    >>> xp.linspace(0.0, 1.0, 5).tolist(), xp.linspace(0.0, 1.0, 4, endpoint=False).tolist()
    ([0.0, 0.25, 0.5, 0.75, 1.0], [0.0, 0.25, 0.5, 0.75])
    """
    b = resolve_device(device)
    d = _dtype(dtype) or dt.default_float
    if endpoint:
        return ops.linspace(start, stop, num, dtype=d, backend=b)
    step = (stop - start) / num if num else 0.0
    idx = ops.arange(num, dtype=dt.float64 if dt.float64 in b.caps.dtypes else dt.float32,
                     backend=b)
    return (idx * step + start).astype(d)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate arrays from 1-d arrays; ``indexing="xy"`` (Cartesian) or ``"ij"`` (matrix).

    >>> import ember.array_api as xp
    >>> gx, gy = xp.meshgrid(xp.asarray([1, 2, 3]), xp.asarray([10, 20]))
    >>> gx.tolist(), gy.tolist()
    ([[1, 2, 3], [1, 2, 3]], [[10, 10, 10], [20, 20, 20]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    if not arrays:
        return []
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = 1 - i if indexing == "xy" and len(arrays) > 1 and i < 2 else i
        view = [1] * len(arrays)
        view[axis] = a.shape[0]
        out.append(a.reshape(view).broadcast_to(tuple(shape)))
    return out


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle (``j - i <= k``) of the last two axes; the rest zeroed.

    >>> import ember.array_api as xp
    >>> xp.tril(xp.ones((2, 2))).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    return check_array(x, "tril").tril(k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle (``j - i >= k``) of the last two axes; the rest zeroed.

    >>> import ember.array_api as xp
    >>> xp.triu(xp.ones((2, 2)), k=1).tolist()
    [[0.0, 1.0], [0.0, 0.0]]
    """
    return check_array(x, "triu").triu(k)
