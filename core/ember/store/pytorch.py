"""PyTorch checkpoints in pure Python: no torch, and no code from the file is ever run.

Both layouts ``torch.save`` has written are read:

* **zip** (the default since PyTorch 1.6): ``<name>/data.pkl`` pickles the object with storages
  as persistent ids; storage ``k`` is the raw entry ``<name>/data/k``; ``<name>/byteorder``
  says ``little`` or ``big`` (little when absent).
* **legacy** (``_use_new_zipfile_serialization=False`` and PyTorch < 1.6): five pickles and the
  raw storages in one stream — magic number, protocol version, system info, the object, the
  list of storage keys — then, per key in that order, an 8-byte element count and the bytes.

The pickles go through a restricted unpickler that knows only tensor and parameter rebuilding
(``torch._utils._rebuild_tensor_v2`` and friends), storage types (``torch.FloatStorage`` …),
``collections.OrderedDict`` and plain containers. Any other global (``os.system``,
``builtins.eval``, a model class …) raises :class:`~ember.errors.RecordError` when the pickle
names it, before anything is called. Tensors come back as lazy references: :meth:`get` reads
only the span of the storage a tensor covers, then gathers strided views (offset, strides,
storages shared between tensors) into contiguous :class:`~ember.data.TensorData`.

>>> import ember
>>> f = PyTorchFile("model.pth")                     # doctest: +SKIP
>>> f.keys()[:2], f.info("fc.weight")                # doctest: +SKIP
(['conv.weight', 'conv.bias'], ('float32', (10, 84)))
>>> weights = read_pytorch("model.pth")  # name -> TensorData   # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from array import array
from collections import OrderedDict
from typing import Any

from .. import dtype as dt
from ..data import TensorData
from ..errors import RecordError
from ..shape import numel
from .safetensors import _bf16_to_f32

try:  # zlib errors surface from compressed entries; keep the module importable without zlib
    from zlib import error as zlibError
except ImportError:  # pragma: no cover
    zlibError = OSError

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

# storage class → (name of the element type, bytes per element, ember dtype it loads as)
_STORAGES = {
    "FloatStorage": ("float32", 4, dt.float32), "DoubleStorage": ("float64", 8, dt.float64),
    "HalfStorage": ("float16", 2, dt.float16), "BFloat16Storage": ("bfloat16", 2, dt.float32),
    "LongStorage": ("int64", 8, dt.int64), "IntStorage": ("int32", 4, dt.int32),
    "ShortStorage": ("int16", 2, dt.int32), "CharStorage": ("int8", 1, dt.int8),
    "ByteStorage": ("uint8", 1, dt.uint8), "BoolStorage": ("bool", 1, dt.bool_),
    "UntypedStorage": ("uint8", 1, dt.uint8),
}


class _StorageType:
    """Stands in for ``torch.FloatStorage`` & co. inside a pickle (never instantiated)."""

    def __init__(self, name: str):
        self.name = name
        self.elem, self.itemsize, self.dtype = _STORAGES[name]

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Storage:
    """One storage of the file: where its bytes are and how many elements it has."""

    __slots__ = ("base", "key", "numel", "type")

    def __init__(self, key: str, stype: _StorageType, n: int, base: int = 0):
        self.key, self.type, self.numel, self.base = key, stype, n, base


class TensorRef:
    """A tensor in the checkpoint, not read yet: storage + element offset + shape + strides."""

    __slots__ = ("offset", "requires_grad", "shape", "storage", "stride")

    def __init__(self, storage: _Storage, offset: int, shape: tuple, stride: tuple,
                 requires_grad: bool = False):
        self.storage, self.offset = storage, offset
        self.shape, self.stride, self.requires_grad = shape, stride, requires_grad

    @property
    def dtype_name(self) -> str:
        return self.storage.type.elem

    def __repr__(self) -> str:
        return f"TensorRef({self.dtype_name}, shape={self.shape})"


# ---------------------------------------------------------------------------- the unpickler
def _ints(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise RecordError(f"pytorch: a tensor's {what} is {value!r}, not a tuple of ints")
    return tuple(value)


def _rebuild_tensor(storage, storage_offset, size, stride, *_ignored) -> TensorRef:
    if not isinstance(storage, _Storage) or not isinstance(storage_offset, int):
        raise RecordError(f"pytorch: bad tensor record (storage {storage!r}, offset "
                          f"{storage_offset!r})")
    shape, strides = _ints(size, "size"), _ints(stride, "stride")
    if len(shape) != len(strides) or any(s < 0 for s in shape + strides) or storage_offset < 0:
        raise RecordError(f"pytorch: bad tensor geometry: size {shape}, stride {strides}, "
                          f"offset {storage_offset}")
    if numel(shape):
        last = storage_offset + sum((n - 1) * s for n, s in zip(shape, strides))
        if last >= storage.numel:
            raise RecordError(
                f"pytorch: a tensor of size {shape}, stride {strides} at offset "
                f"{storage_offset} reaches element {last} of a storage of {storage.numel}"
            )
    return TensorRef(storage, storage_offset, shape, strides)


def _rebuild_parameter(data, requires_grad=True, *_ignored) -> TensorRef:
    if not isinstance(data, TensorRef):
        raise RecordError(f"pytorch: _rebuild_parameter got {type(data).__name__}, not a tensor")
    data.requires_grad = bool(requires_grad)
    return data


_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("torch", "Size"): tuple,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the globals in ``_ALLOWED`` and storage types; refuses the rest."""

    def __init__(self, file, where: str, storage):
        super().__init__(file)
        self.where, self.storage = where, storage

    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module in ("torch", "torch.storage") and name in _STORAGES:
            return _StorageType(name)
        raise RecordError(
            f"pytorch: {self.where} refers to the global '{module}.{name}', which is not "
            "allowed: only tensors, storages, OrderedDict and plain containers are rebuilt "
            "(a checkpoint that needs other globals could run code; nothing was executed)"
        )

    def persistent_load(self, pid):
        if self.storage is None:
            raise RecordError(f"pytorch: {self.where}: unexpected storage reference {pid!r}")
        return self.storage(pid)


def _unpickle(data, where: str, storage=None) -> Any:
    """Load one pickle from a file object (or bytes), turning every failure into RecordError."""
    f = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        return _RestrictedUnpickler(f, where, storage).load()
    except RecordError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, struct.error, MemoryError, OverflowError) as e:
        raise RecordError(f"pytorch: {where} is truncated or corrupt ({type(e).__name__}: "
                          f"{e})") from None


def _storage_type(value, where: str) -> _StorageType:
    if not isinstance(value, _StorageType):
        raise RecordError(f"pytorch: {where}: {value!r} is not a supported storage type "
                          f"(supported: {', '.join(_STORAGES)})")
    return value


# ---------------------------------------------------------------------------- the file
class PyTorchFile:
    """A PyTorch checkpoint opened for lazy, per-tensor reads (zip or legacy format).

    ``keys()`` are the tensors' dotted names (nested dicts and lists flattened:
    ``{"model": {"fc.weight": t}}`` → ``"model.fc.weight"``), ``info(name)`` →
    (element type name, shape), ``get(name)`` → :class:`~ember.data.TensorData` (bfloat16
    becomes float32, int16 int32), ``obj`` the whole unpickled object with
    :class:`TensorRef` in place of tensors.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        try:
            with open(self.path, "rb") as f:
                head = f.read(4)
            self._size = os.path.getsize(self.path)
        except OSError as e:
            raise RecordError(f"pytorch: can't open {self.path}: {e.strerror}") from e
        self._storages: dict[str, _Storage] = {}
        self.byteorder = "little"
        if head.startswith(b"PK"):
            self.format = "zip"
            self.obj = self._open_zip()
        elif head[:1] == b"\x80":
            self.format = "legacy"
            self.obj = self._open_legacy()
        else:
            raise RecordError(
                f"pytorch: {self.path} is not a PyTorch checkpoint (starts with {head!r}; "
                "expected a zip archive or a pickle)"
            )
        self._tensors: dict[str, TensorRef] = {}
        self._collect(self.obj, "")

    # ------------------------------------------------------------------ zip
    def _open_zip(self) -> Any:
        try:
            self._zip = zipfile.ZipFile(self.path)
            names = self._zip.namelist()
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise RecordError(f"pytorch: {self.path} is a truncated or corrupt zip archive "
                              f"({e})") from None
        pkls = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pkls) != 1:
            raise RecordError(f"pytorch: {self.path} is a zip archive without one "
                              f"'<name>/data.pkl' (found {pkls or 'none'}); not a torch.save file")
        self._prefix = pkls[0][: -len("data.pkl")]
        self._names = set(names)
        if self._prefix + "byteorder" in self._names:
            self.byteorder = self._read_entry(self._prefix + "byteorder").decode().strip()
        return _unpickle(self._read_entry(pkls[0]), f"{self.path}:{pkls[0]}", self._zip_storage)

    def _read_entry(self, name: str, start: int = 0, length: int | None = None) -> bytes:
        try:
            with self._zip.open(name) as f:
                if start:
                    f.seek(start)
                return f.read() if length is None else f.read(length)
        except (zipfile.BadZipFile, OSError, EOFError, KeyError, zlibError) as e:
            raise RecordError(f"pytorch: {self.path}: entry {name!r} is truncated or corrupt "
                              f"({e})") from None

    def _zip_storage(self, pid) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RecordError(f"pytorch: {self.path}: unsupported persistent id {pid!r}")
        _, stype, key, _location, n = pid
        stype = _storage_type(stype, self.path)
        key = str(key)
        if key not in self._storages:
            entry = f"{self._prefix}data/{key}"
            if entry not in self._names:
                raise RecordError(f"pytorch: {self.path} has no storage entry {entry!r}")
            have = self._zip.getinfo(entry).file_size
            if stype.name == "UntypedStorage" and n * stype.itemsize != have:
                n = have
            if n * stype.itemsize > have:
                raise RecordError(f"pytorch: {self.path}: storage {key} holds {have} bytes, "
                                  f"{n} × {stype.itemsize} expected (truncated)")
            self._storages[key] = _Storage(key, stype, n)
        return self._storages[key]

    # ------------------------------------------------------------------ legacy
    def _open_legacy(self) -> Any:
        if self._size < 16:
            raise RecordError(f"pytorch: {self.path} is truncated ({self._size} bytes)")
        f = open(self.path, "rb")  # noqa: SIM115 - kept for the storages' offsets below
        with f:
            magic = _unpickle(f, f"{self.path} (magic number)")
            if magic != LEGACY_MAGIC:
                raise RecordError(
                    f"pytorch: {self.path}: wrong magic number {magic!r} (a legacy torch.save "
                    f"file starts with {LEGACY_MAGIC:#x}); not a PyTorch checkpoint"
                )
            protocol = _unpickle(f, f"{self.path} (protocol version)")
            if protocol != LEGACY_PROTOCOL:
                raise RecordError(f"pytorch: {self.path}: unsupported protocol version "
                                  f"{protocol!r} (expected {LEGACY_PROTOCOL})")
            info = _unpickle(f, f"{self.path} (system info)")
            if not isinstance(info, dict):
                raise RecordError(f"pytorch: {self.path}: corrupt system info {info!r}")
            self.byteorder = "little" if info.get("little_endian", True) else "big"
            pending: dict[str, tuple[_StorageType, int, list]] = {}
            obj = _unpickle(f, self.path, lambda pid: self._legacy_storage(pid, pending))
            keys = _unpickle(f, f"{self.path} (storage keys)")
            if not isinstance(keys, list):
                raise RecordError(f"pytorch: {self.path}: corrupt storage key list {keys!r}")
            pos = f.tell()
        order = "<" if self.byteorder == "little" else ">"
        with open(self.path, "rb") as f:
            for key in keys:
                if key not in pending:
                    raise RecordError(f"pytorch: {self.path}: storage {key!r} is listed but "
                                      "no tensor uses it (corrupt file)")
                stype, n, views = pending.pop(key)
                f.seek(pos)
                raw = f.read(8)
                if len(raw) < 8:
                    raise RecordError(f"pytorch: {self.path}: storage {key!r} is truncated "
                                      f"(file ends at byte {self._size})")
                (count,) = struct.unpack(order + "q", raw)
                end = pos + 8 + count * stype.itemsize
                if count != n or end > self._size:
                    raise RecordError(
                        f"pytorch: {self.path}: storage {key!r} declares {count} elements "
                        f"({n} expected) ending at byte {end} of {self._size} (truncated or "
                        "corrupt)"
                    )
                for view in views:
                    view.base += pos + 8
                pos = end
        if pending:
            raise RecordError(f"pytorch: {self.path}: storages {sorted(pending)} are missing "
                              "(truncated file)")
        return obj

    def _legacy_storage(self, pid, pending) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            what = pid[0] if isinstance(pid, tuple) and pid else pid
            raise RecordError(f"pytorch: {self.path}: unsupported persistent id {what!r} "
                              "(only storages; saved modules are not loaded)")
        _, stype, root_key, _location, n, view = pid
        stype = _storage_type(stype, self.path)
        root_key = str(root_key)
        if root_key not in pending:
            pending[root_key] = (stype, n, [])
        offset, count = 0, n
        if view is not None:  # an old storage view: (view key, element offset, size)
            _, offset, count = view
            if offset < 0 or offset + count > n:
                raise RecordError(f"pytorch: {self.path}: bad storage view {view!r}")
        # base holds the byte offset inside the storage until the data start is known
        storage = _Storage(f"{root_key}+{offset}", stype, count, offset * stype.itemsize)
        pending[root_key][2].append(storage)
        return storage

    # ------------------------------------------------------------------ tensors
    def _collect(self, obj: Any, prefix: str) -> None:
        if isinstance(obj, TensorRef):
            self._tensors[prefix or "tensor"] = obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                self._collect(v, f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                self._collect(v, f"{prefix}.{i}" if prefix else str(i))

    def keys(self) -> list[str]:
        return list(self._tensors)

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def ref(self, name: str) -> TensorRef:
        try:
            return self._tensors[name]
        except KeyError:
            raise KeyError(f"pytorch: {self.path} has no tensor {name!r}") from None

    def info(self, name: str) -> tuple[str, tuple[int, ...]]:
        ref = self.ref(name)
        return ref.dtype_name, ref.shape

    def get(self, name: str) -> TensorData:
        ref = self.ref(name)
        st = ref.storage
        size = st.type.itemsize
        n = numel(ref.shape)
        span = 0 if n == 0 else 1 + sum((d - 1) * s for d, s in zip(ref.shape, ref.stride))
        raw = self._read_span(st, ref.offset * size, span * size)
        raw = _gather(raw, ref.shape, ref.stride, size)
        return _to_data(raw, ref.shape, st.type, self.byteorder)

    def _read_span(self, st: _Storage, start: int, length: int) -> bytes:
        if length == 0:
            return b""
        if self.format == "zip":
            raw = self._read_entry(f"{self._prefix}data/{st.key}", start, length)
        else:
            with open(self.path, "rb") as f:
                f.seek(st.base + start)
                raw = f.read(length)
        if len(raw) != length:
            raise RecordError(f"pytorch: {self.path}: storage {st.key} is truncated")
        return raw

    def items(self):
        for name in self._tensors:
            yield name, self.get(name)

    def close(self) -> None:
        z = getattr(self, "_zip", None)
        if z is not None:
            z.close()

    def __enter__(self) -> PyTorchFile:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _gather(raw: bytes, shape: tuple, stride: tuple, size: int) -> bytes:
    """The elements of a strided view (``raw`` starts at its first element), row-major."""
    n = numel(shape)
    if n == 0:
        return b""
    contiguous, expect = True, 1
    for d, s in zip(reversed(shape), reversed(stride)):
        if d != 1 and s != expect:
            contiguous = False
            break
        expect *= d
    if contiguous:
        return raw[: n * size]
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        base = np.frombuffer(raw, dtype=np.uint8)
        view = np.lib.stride_tricks.as_strided(
            base, shape=(*shape, size), strides=(*(s * size for s in stride), 1), writeable=False
        )
        return np.ascontiguousarray(view).tobytes()
    mv = memoryview(raw)
    out = bytearray()
    inner, inner_stride = shape[-1], stride[-1]

    def walk(dim: int, base: int) -> None:
        if dim == len(shape) - 1:
            if inner_stride == 1:
                out.extend(mv[base * size:(base + inner) * size])
            else:
                for i in range(inner):
                    at = (base + i * inner_stride) * size
                    out.extend(mv[at:at + size])
            return
        for i in range(shape[dim]):
            walk(dim + 1, base + i * stride[dim])

    walk(0, 0)
    return bytes(out)


def _to_data(raw: bytes, shape: tuple, stype: _StorageType, byteorder: str) -> TensorData:
    if byteorder not in ("little", "big"):
        raise RecordError(f"pytorch: unknown byte order {byteorder!r}")
    if byteorder == "big" and stype.itemsize > 1:  # TensorData is little-endian
        a = array({2: "H", 4: "I", 8: "Q"}[stype.itemsize])
        a.frombytes(raw)
        a.byteswap()
        raw = a.tobytes()
    if stype.elem == "bfloat16":
        raw = _bf16_to_f32(raw)
    elif stype.elem == "int16":
        return TensorData.from_values(struct.unpack(f"<{numel(shape)}h", raw), shape, dt.int32)
    return TensorData(raw, shape, stype.dtype)


def read_pytorch(path: str | os.PathLike) -> dict[str, TensorData]:
    """Every tensor of a PyTorch checkpoint as ``name → TensorData`` (no torch needed).

    >>> weights = read_pytorch("resnet18.pth")   # doctest: +SKIP
    >>> weights["fc.weight"].shape               # doctest: +SKIP
    (1000, 512)
    """
    with PyTorchFile(path) as f:
        return dict(f.items())


def load_pytorch(path: str | os.PathLike, backend=None) -> dict:
    """Every tensor of a PyTorch checkpoint as ember Tensors (on ``backend``)."""
    from ..ops.creation import tensor

    return {name: tensor(data, backend=backend) for name, data in read_pytorch(path).items()}
