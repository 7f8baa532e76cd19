"""The Tensor: Ember's user API.

A tensor holds ``(primitive, backend)``: the backend's own array and the backend that made it.
Methods follow numpy/PyTorch names and semantics. This file keeps the core (metadata,
conversion, dtype and backend moves); the ops are functions in ``ember.ops.*``, bound as
methods and operators in one table, :mod:`ember.tensor_methods`.

>>> import ember
>>> t = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (t * 2 + 1).sum(dim=1).tolist()
[8.0, 16.0]
"""

from __future__ import annotations

from . import dtype as dt
from .tensordata import TensorData
from .contract.backend import Device
from .errors import BackendMismatchError, DTypeError, ShapeError
from .shape import numel


class Tensor:
    """An n-dimensional array on one backend: ``(primitive, backend)``.

    Make tensors with :func:`ember.tensor`, :func:`ember.zeros`, :func:`ember.arange`...; every
    op of the functional API is also a method (``t.sum()``, ``t.relu()``) and Python's operators
    work (``a @ b``, ``t[1:, ::2]``, ``a + 1``). Metadata, conversion and moves:

    >>> import ember
    >>> t = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> t.shape, t.ndim, t.dim(), t.numel(), t.size(1), t.dtype, t.device
    ((2, 2), 2, 2, 4, 2, ember.float32, Device('numpy', 'cpu'))
    >>> t.tolist(), t[1, 0].item(), t.is_floating_point()
    ([[1.0, 2.0], [3.0, 4.0]], 3.0, True)
    >>> t.long().dtype, t.int().dtype, t.bool().dtype, t.half().dtype, t.double().dtype
    (ember.int64, ember.int32, ember.bool, ember.float16, ember.float64)
    >>> t.long().float().dtype, t.astype("int8").tolist()
    (ember.float32, [[1, 2], [3, 4]])
    >>> t.to_data().shape, t.numpy().sum().item(), t.clone().contiguous().tolist()[0]
    ((2, 2), 10.0, [1.0, 2.0])
    >>> import asyncio
    >>> asyncio.run(t.to_data_async()).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    __slots__ = ("_prim", "backend", "__weakref__")
    __array_priority__ = 1000  # numpy defers `ndarray op tensor` to our reflected ops

    def __init__(self, primitive, backend):
        self._prim = primitive
        self.backend = backend

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dim, a tuple of ints."""
        return tuple(self.backend.shape(self._prim))

    @property
    def dtype(self) -> dt.DType:
        """The element type, an :class:`ember.DType`."""
        return self.backend.dtype(self._prim)

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)

    @property
    def device(self) -> Device:
        """Where the tensor lives: a :class:`Device` for its backend (``device.type`` is the
        hardware, ``"cpu"``, ``"gpu:..."``)."""
        return Device(self.backend)

    def dim(self) -> int:
        """The number of dims (PyTorch's name for ``ndim``)."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements."""
        return numel(self.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dim (PyTorch's ``size``)."""
        if dim is None:
            return self.shape
        from .shape import normalize_dim

        return self.shape[normalize_dim(dim, self.ndim, "size")]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def is_floating_point(self) -> bool:
        """Whether the dtype is a float dtype."""
        return self.dtype.is_float

    # ------------------------------------------------------------------ conversion
    def to_data(self) -> TensorData:
        """The values as a backend-neutral :class:`ember.TensorData` (reads the device)."""
        return self.backend.to_data(self._prim)

    async def to_data_async(self) -> TensorData:
        """Awaitable read, for backends whose reads are asynchronous (browser WebGPU)."""
        return await self.backend.to_data_async(self._prim)

    def tolist(self):
        """The values as nested Python lists (a scalar for a 0-d tensor)."""
        return self.to_data().tolist()

    def item(self):
        """The one element as a Python scalar (a :class:`ShapeError` for more elements)."""
        if self.numel() != 1:
            raise ShapeError(
                f"item: only a tensor with one element converts to a Python scalar, "
                f"got shape {self.shape}"
            )
        return self.to_data().values()[0]

    def numpy(self):
        """The values as a numpy array (a copy; needs numpy)."""
        return self.to_data().to_numpy()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this tensor: the same memory on the numpy backend, a host copy
        on the others (``copy=False`` refuses the copy); see :mod:`ember.dlpack`."""
        from .dlpack import export

        return export(self._prim, self.backend, stream=stream, max_version=max_version,
                      dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        from .dlpack import device_of

        return device_of(self.backend)

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if not (self.dtype.is_int or self.dtype.is_bool):
            raise DTypeError(f"__index__: only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ShapeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.item())

    def __repr__(self) -> str:
        from .printing import format_tensor

        return format_tensor(self)

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.shape[0]):
            yield self[i]

    # ------------------------------------------------------------------ dtype / backend moves
    def astype(self, dtype) -> Tensor:
        """A copy in ``dtype`` (numpy's name for ``to(dtype)``)."""
        dtype = dt.as_dtype(dtype)
        if dtype == self.dtype:
            return self
        self.backend.caps.check_dtype(dtype, "astype", self.backend.name)
        return Tensor(self.backend.cast(self._prim, dtype), self.backend)

    def to(self, target=None, dtype=None, *, device=None, non_blocking: bool = False) -> Tensor:
        """Move to a device or backend and/or convert to a dtype, as PyTorch's ``to``.

        ``target`` is a device string (``"cpu"``, ``"cuda"``, ``"gpu"``, ``"webgpu"``: see
        :mod:`ember.backends.devices` for the backend each means), a backend name or Backend,
        a tensor's ``device``, a dtype, or another tensor (its backend and dtype). ``device=`` is
        the keyword spelling; ``non_blocking`` is accepted for PyTorch code, Ember's moves are synchronous.
        An unknown name raises a :class:`~ember.errors.DeviceError` listing the valid ones.

        >>> import ember
        >>> x = ember.tensor([1, 2])
        >>> x.to("cpu") is x, x.to("python", ember.float32).backend.name
        (True, 'python')
        >>> x.to(ember.float16).dtype, x.to("float64").dtype, x.to(x.float()).dtype
        (ember.float16, ember.float64, ember.float32)
        >>> x.to(device="cpu", dtype="int8").dtype
        ember.int8
        """
        from .backends.devices import resolve, split

        if device is not None:
            if target is not None:
                raise TypeError(f"to: got {target!r} and device={device!r}; pass one of them")
            target = device
        if isinstance(target, Tensor):
            target, dtype = target.backend, target.dtype if dtype is None else dtype
        target, dtype = split(target, dtype, "to")
        out = self
        if target is not None:
            backend = resolve(target, self.backend)
            if backend is not self.backend:
                backend.caps.check_dtype(self.dtype, "to", backend.name)
                out = Tensor(backend.from_data(self.to_data()), backend)
        return out if dtype is None else out.astype(dtype)

    def float(self) -> Tensor:
        """A copy in float32."""
        return self.astype(dt.float32)

    def double(self) -> Tensor:
        """A copy in float64."""
        return self.astype(dt.float64)

    def half(self) -> Tensor:
        """A copy in float16."""
        return self.astype(dt.float16)

    def int(self) -> Tensor:
        """A copy in int32."""
        return self.astype(dt.int32)

    def long(self) -> Tensor:
        """A copy in int64."""
        return self.astype(dt.int64)

    def bool(self) -> Tensor:
        """A copy in bool (non-zero is True)."""
        return self.astype(dt.bool_)

    def clone(self) -> Tensor:
        """An independent tensor with the same values (and, on Autodiff, the same graph).

        Primitives are never changed in place (``t[i] = v`` swaps in a new one), so sharing
        the primitive is a copy in every observable way, and costs nothing."""
        return Tensor(self._prim, self.backend)

    def __deepcopy__(self, memo) -> Tensor:
        """``copy.deepcopy``: :meth:`clone` — the same backend, shared, never copied (it is a
        connection to a device: a model's deep copy runs where the model runs, with no
        backend mismatch between the two), and the same never-changed primitive.

        >>> import copy, ember
        >>> t = ember.tensor([1.0, 2.0])
        >>> c = copy.deepcopy(t)
        >>> c.backend is t.backend, (c + t).tolist()
        (True, [2.0, 4.0])
        """
        return self.clone()

    def contiguous(self) -> Tensor:
        """The tensor itself: Ember tensors have no strided views to compact (PyTorch compatibility)."""
        return self


def check_same_backend(op: str, *tensors: Tensor) -> None:
    """Raise :class:`~ember.errors.BackendMismatchError` unless the tensors share one backend."""
    first = tensors[0].backend
    for t in tensors[1:]:
        if t.backend is not first:
            raise _mismatch(op, first, t.backend)


def _mismatch(op: str, a, b) -> BackendMismatchError:
    return BackendMismatchError(
        f"{op}: tensors live on different backends ({a.name} on {a.device} and {b.name} on "
        f"{b.device}); move one with .to(backend)"
    )


def _movable(t: object) -> bool:
    """A 0-d tensor whose value lives in host memory and carries no gradient record."""
    return (isinstance(t, Tensor) and t.ndim == 0 and t.backend.device == "cpu"
            and not t.backend.caps.gradients)


def co_locate(op: str, *operands: object) -> list:
    """The operands with their tensors on one backend, by PyTorch's rule for 0-d CPU tensors:
    a 0-d tensor on a host backend (device type ``"cpu"``, not recording gradients) moves to
    the backend of the other tensors: the first tensor's that is not such a 0-d tensor; when
    all are, the first one's off the default backend (code that makes a scalar without
    ``device=`` puts it on the default backend). Any other mix of backends raises
    :class:`~ember.errors.BackendMismatchError`; non-tensor operands pass through.

    >>> import ember
    >>> from ember.tensor import co_locate
    >>> n = ember.tensor(4.0, backend="numpy")
    >>> x, k = co_locate("add", ember.tensor([1.0, 2.0], backend="python"), n)
    >>> k.backend.name, k.item()
    ('python', 4.0)
    """
    tensors = [o for o in operands if isinstance(o, Tensor)]
    if all(t.backend is tensors[0].backend for t in tensors):
        return list(operands)
    home = _home(tensors)
    moved = [o.to(home) if _movable(o) and o.backend is not home else o for o in operands]
    for o in moved:
        if isinstance(o, Tensor) and o.backend is not home:
            raise _mismatch(op, home, o.backend)
    return moved


def _home(tensors: list[Tensor]):
    from .backends import default_backend

    fixed = [t.backend for t in tensors if not _movable(t)]
    if fixed:
        return fixed[0]
    default = default_backend()
    return next((t.backend for t in tensors if t.backend is not default), tensors[0].backend)
