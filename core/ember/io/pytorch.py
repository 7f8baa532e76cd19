"""PyTorch checkpoints in pure Python: no torch, and no code from the file is ever run.

Both layouts ``torch.save`` has written are read:

* **zip** (the default since PyTorch 1.6): ``<name>/data.pkl`` pickles the object with storages
  as persistent ids; storage ``k`` is the raw entry ``<name>/data/k``; ``<name>/byteorder``
  says ``little`` or ``big`` (little when absent).
* **legacy** (``_use_new_zipfile_serialization=False`` and PyTorch < 1.6): five pickles and the
  raw storages in one stream — magic number, protocol version, system info, the object, the
  list of storage keys — then, per key in that order, an 8-byte element count and the bytes.

The pickles go through a restricted, bounded unpickler (:mod:`.pickle_reader`) that knows
only tensor and parameter rebuilding (``torch._utils._rebuild_tensor_v2`` and friends), storage
types (``torch.FloatStorage`` …), ``collections.OrderedDict`` and plain containers. Any other
global (``os.system``, ``builtins.eval``, a model class …) raises
:class:`~ember.errors.RecordError` when the pickle names it, before anything is called.
Tensors come back as lazy references: :meth:`get` reads only the span of the storage a tensor
covers, then gathers strided views (offset, strides, storages shared between tensors) into
contiguous :class:`~ember.tensordata.TensorData`. Every size the file declares — zip entries, the
pickles, each view's reach and its materialised bytes — is checked against the file and
:mod:`ember.limits` before anything is allocated.

>>> import ember
>>> f = PyTorchFile("model.pth")                     # doctest: +SKIP
>>> f.keys()[:2], f.info("fc.weight")                # doctest: +SKIP
(['conv.weight', 'conv.bias'], ('float32', (10, 84)))
>>> weights = read_pytorch("model.pth")  # name -> TensorData   # doctest: +SKIP
"""

from __future__ import annotations

import os
import struct
import zipfile
from array import array
from collections import OrderedDict
from typing import Any, BinaryIO

from .. import dtype as dt
from .. import limits
from ..tensordata import TensorData
from ..errors import RecordError
from ..shape import numel
from .pickle_reader import brief, load_pickle, named_leaves
from .safetensors import _bf16_to_f32
from .untrusted import reading

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


class _FromFile:
    """Objects the unpickler hands to a pickle: a BUILD opcode can't change them after
    they were checked (an object without ``__setstate__`` takes its slots from BUILD)."""

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        raise RecordError(f"pytorch: the pickle sets the state of {self!r} (a BUILD opcode), "
                          "which torch.save never writes")


class _StorageType(_FromFile):
    """Stands in for ``torch.FloatStorage`` & co. inside a pickle (never instantiated)."""

    __slots__ = ("dtype", "elem", "itemsize", "name")

    def __init__(self, name: str):
        self.name = name
        self.elem, self.itemsize, self.dtype = _STORAGES[name]

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Storage(_FromFile):
    """One storage of the file: where its bytes are and how many elements it has."""

    __slots__ = ("base", "key", "numel", "type")

    def __init__(self, key: str, stype: _StorageType, n: int, base: int = 0):
        self.key, self.type, self.numel, self.base = key, stype, n, base

    def __repr__(self) -> str:
        return f"storage {self.key!r}"


class TensorRef(_FromFile):
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
        return f"TensorRef({self.dtype_name}, shape={brief(self.shape)})"


# ---------------------------------------------------------------------------- the unpickler
def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0  # not bool


def _counts(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(_is_count(v) for v in value):
        raise RecordError(f"a tensor's {what} is {brief(value)}, not a tuple of ints >= 0")
    return tuple(value)


def _extent(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """How many storage elements a view spans, from its first element to its last."""
    return 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))


def _rebuild_tensor(storage, storage_offset, size, stride, *_ignored) -> TensorRef:
    if not isinstance(storage, _Storage) or not _is_count(storage_offset):
        raise RecordError(f"bad tensor record ({brief(storage)}, offset {brief(storage_offset)})")
    shape, strides = _counts(size, "size"), _counts(stride, "stride")
    if len(shape) != len(strides):
        raise RecordError(f"a tensor of size {brief(shape)} has {len(strides)} strides")
    limits.check_shape(RecordError, "pytorch: a tensor", shape)
    end = storage_offset + _extent(shape, strides)
    if 0 not in shape and end > storage.numel:
        raise RecordError(
            f"a tensor of size {brief(shape)}, stride {brief(strides)} at offset "
            f"{storage_offset} reaches element {end - 1} of a storage of {storage.numel}"
        )
    return TensorRef(storage, storage_offset, shape, strides)


def _rebuild_parameter(data, requires_grad=True, *_ignored) -> TensorRef:
    if not isinstance(data, TensorRef):
        raise RecordError(f"_rebuild_parameter got {type(data).__name__}, not a tensor")
    data.requires_grad = bool(requires_grad)
    return data


def _size(values) -> tuple[int, ...]:
    return _counts(values, "torch.Size")


class _OrderedDict(OrderedDict):
    """``collections.OrderedDict`` as a checkpoint builds it. Attributes pickled with one
    (torch's ``_metadata``) are dropped: they are not tensors, and a BUILD opcode could
    otherwise re-insert one large memoised dict's keys a million times."""

    def __setstate__(self, state: Any) -> None:
        pass


_STORAGE_TYPES = {name: _StorageType(name) for name in _STORAGES}
# what each global a checkpoint may name stands for; anything else is refused
_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): _OrderedDict,
    ("torch", "Size"): _size,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    **{(module, name): stype for module in ("torch", "torch.storage")
       for name, stype in _STORAGE_TYPES.items()},
}
_REFUSAL = ("only tensors, storages, OrderedDict and plain containers are rebuilt (a "
            "checkpoint that needs other globals could run code; nothing was executed)")


def _storage_type(value, where: str) -> _StorageType:
    if not isinstance(value, _StorageType):
        raise RecordError(f"pytorch: {where}: {brief(value)} is not a supported storage type "
                          f"(supported: {', '.join(_STORAGES)})")
    return value


def _storage_key(value, where: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise RecordError(f"pytorch: {where}: storage key {brief(value)} is not a string")
    return str(value)


def _byteorder(raw: bytes, where: str) -> str:
    text = raw.decode("ascii", "replace").strip()
    if text not in ("little", "big"):
        raise RecordError(f"pytorch: {where}: byteorder entry is {brief(raw)}; expected "
                          "'little' or 'big'")
    return text


# ---------------------------------------------------------------------------- the file
class PyTorchFile:
    r"""A PyTorch checkpoint opened for lazy, per-tensor reads (zip or legacy format).

    ``keys()`` are the tensors' dotted names (nested dicts and lists flattened:
    ``{"model": {"fc.weight": t}}`` → ``"model.fc.weight"``), ``info(name)`` →
    (element type name, shape), ``get(name)`` → :class:`~ember.tensordata.TensorData` (bfloat16
    becomes float32, int16 int32), ``obj`` the whole unpickled object with
    :class:`TensorRef` in place of tensors. Every problem with the file, including a size
    past :mod:`ember.limits`, is a :class:`~ember.errors.RecordError`.

    A tiny zip checkpoint made by hand, with the pickle ``torch.save({"w": torch.tensor([1.0,
    2.0])}, path)`` writes (here as protocol-0 text) and the storage's raw little-endian floats:

    >>> import os, struct, tempfile, zipfile
    >>> pkl = (b"(dVw\nctorch._utils\n_rebuild_tensor_v2\n((Vstorage\nctorch\nFloatStorage\nV0\n"
    ...        b"Vcpu\nI2\ntQI0\n(I2\nt(I1\ntI00\nccollections\nOrderedDict\n)RtRs.")
    >>> path = os.path.join(tempfile.mkdtemp(), "w.pt")
    >>> with zipfile.ZipFile(path, "w") as z:
    ...     z.writestr("archive/data.pkl", pkl)
    ...     z.writestr("archive/data/0", struct.pack("<2f", 1.0, 2.0))
    >>> with PyTorchFile(path) as f:
    ...     print(f.keys(), "w" in f, f.info("w"), f.ref("w"), f.get("w").tolist())
    ...     print([(name, data.shape) for name, data in f.items()])
    ['w'] True ('float32', (2,)) TensorRef(float32, shape=(2,)) [1.0, 2.0]
    [('w', (2,))]
    >>> f = PyTorchFile(path); f.close()
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
        self._zip: zipfile.ZipFile | None = None
        self.byteorder = "little"
        try:
            with reading(f"pytorch: {self.path}"):
                self.obj = self._open(head)
                self._tensors: dict[str, TensorRef] = named_leaves(
                    self.obj, _is_tensor, f"pytorch: {self.path}", "tensor")
        except BaseException:
            self.close()
            raise

    def _open(self, head: bytes) -> Any:
        if head.startswith(b"PK"):
            self.format = "zip"
            return self._open_zip()
        if head[:1] == b"\x80":
            self.format = "legacy"
            return self._open_legacy()
        raise RecordError(
            f"pytorch: {self.path} is not a PyTorch checkpoint (starts with {head!r}; "
            "expected a zip archive or a pickle)"
        )

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
                              f"'<name>/data.pkl' (found {brief(pkls) if pkls else 'none'}); "
                              "not a torch.save file")
        self._prefix = pkls[0][: -len("data.pkl")]
        self._names = set(names)
        if self._prefix + "byteorder" in self._names:
            raw = self._read_whole(self._prefix + "byteorder")
            self.byteorder = _byteorder(raw, f"{self.path}:{self._prefix}byteorder")
        return load_pickle(self._read_whole(pkls[0]), f"pytorch: {self.path}:{pkls[0]}",
                           _GLOBALS, self._zip_storage, _REFUSAL)

    def _member(self, name: str) -> zipfile.ZipInfo:
        """The zip entry ``name``, once what reading it would cost is known to be bounded."""
        info = self._zip.getinfo(name)
        where = f"pytorch: {self.path}: entry {name!r}"
        if info.flag_bits & 0x1:
            raise RecordError(f"{where} is encrypted; torch.save never encrypts, and Ember "
                              "reads no encrypted entries")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise RecordError(f"{where} uses compression method {info.compress_type}; only "
                              f"stored ({zipfile.ZIP_STORED}) and deflated "
                              f"({zipfile.ZIP_DEFLATED}) entries are read")
        limits.check(RecordError, f"{where}: uncompressed size in bytes", info.file_size,
                     "max_zip_member_bytes")
        limits.check(RecordError, f"{where}: uncompressed bytes beyond the file's own "
                     f"{self._size}", info.file_size - self._size, "max_expansion_bytes")
        return info

    def _read_whole(self, name: str) -> bytes:
        """A metadata entry (the pickle, the byte order), read only if it is a sane size."""
        info = self._member(name)
        limits.check(RecordError, f"pytorch: {self.path}: entry {name!r}: size in bytes",
                     info.file_size, "max_header_bytes")
        # the declared size can lie: ask for one byte more, and refuse anything else
        raw = self._read_entry(name, 0, info.file_size + 1)
        if len(raw) != info.file_size:
            raise RecordError(f"pytorch: {self.path}: entry {name!r} declares "
                              f"{info.file_size} bytes and holds {len(raw)}")
        return raw

    def _read_entry(self, name: str, start: int, length: int) -> bytes:
        try:
            with self._zip.open(name) as f:
                if start:
                    f.seek(start)
                return f.read(length)
        except (zipfile.BadZipFile, OSError, EOFError, KeyError, zlibError) as e:
            raise RecordError(f"pytorch: {self.path}: entry {name!r} is truncated or corrupt "
                              f"({e})") from None

    def _zip_storage(self, pid) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RecordError(f"pytorch: {self.path}: unsupported persistent id {brief(pid)}")
        _, stype, key, _location, n = pid
        stype = _storage_type(stype, self.path)
        key = _storage_key(key, self.path)
        if not _is_count(n):
            raise RecordError(f"pytorch: {self.path}: storage {key!r} has {brief(n)} elements")
        if key not in self._storages:
            entry = f"{self._prefix}data/{key}"
            if entry not in self._names:
                raise RecordError(f"pytorch: {self.path} has no storage entry {entry!r}")
            have = self._member(entry).file_size
            if stype.name == "UntypedStorage" and n * stype.itemsize != have:
                n = have
            if n * stype.itemsize > have:
                raise RecordError(f"pytorch: {self.path}: storage {key} holds {have} bytes, "
                                  f"{n} × {stype.itemsize} expected (truncated)")
            self._storages[key] = _Storage(key, stype, n)
        elif self._storages[key].type is not stype:
            raise RecordError(f"pytorch: {self.path}: storage {key!r} is read as "
                              f"{self._storages[key].type!r} and as {stype!r}")
        return self._storages[key]

    # ------------------------------------------------------------------ legacy
    def _open_legacy(self) -> Any:
        if self._size < 16:
            raise RecordError(f"pytorch: {self.path} is truncated ({self._size} bytes)")
        with open(self.path, "rb") as f:
            magic = load_pickle(f, f"pytorch: {self.path} (magic number)", {})
            if magic != LEGACY_MAGIC:
                raise RecordError(
                    f"pytorch: {self.path}: wrong magic number {brief(magic)} (a legacy "
                    f"torch.save file starts with {LEGACY_MAGIC:#x}); not a PyTorch checkpoint"
                )
            protocol = load_pickle(f, f"pytorch: {self.path} (protocol version)", {})
            if protocol != LEGACY_PROTOCOL:
                raise RecordError(f"pytorch: {self.path}: unsupported protocol version "
                                  f"{brief(protocol)} (expected {LEGACY_PROTOCOL})")
            info = load_pickle(f, f"pytorch: {self.path} (system info)", {})
            if not isinstance(info, dict):
                raise RecordError(f"pytorch: {self.path}: corrupt system info {brief(info)}")
            self.byteorder = "little" if info.get("little_endian", True) else "big"
            pending: dict[str, tuple[_StorageType, int, list]] = {}
            obj = load_pickle(f, f"pytorch: {self.path}", _GLOBALS,
                              lambda pid: self._legacy_storage(pid, pending), _REFUSAL)
            keys = load_pickle(f, f"pytorch: {self.path} (storage keys)", {})
            if not isinstance(keys, list):
                raise RecordError(f"pytorch: {self.path}: corrupt storage key list "
                                  f"{brief(keys)}")
            self._place_legacy_storages(f, keys, pending)
        return obj

    def _place_legacy_storages(self, f: BinaryIO, keys: list, pending: dict) -> None:
        """After the pickles: per key, an element count and the bytes. Point each view at
        its bytes, checking the counts against the pickle's and the file's size."""
        order = "<" if self.byteorder == "little" else ">"
        pos = f.tell()
        for key in keys:
            key = _storage_key(key, self.path)
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
            raise RecordError(f"pytorch: {self.path}: storages {brief(sorted(pending))} are "
                              "missing (truncated file)")

    def _legacy_storage(self, pid, pending) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            what = pid[0] if isinstance(pid, tuple) and pid else pid
            raise RecordError(f"pytorch: {self.path}: unsupported persistent id {brief(what)} "
                              "(only storages; saved modules are not loaded)")
        _, stype, root_key, _location, n, view = pid
        stype = _storage_type(stype, self.path)
        root_key = _storage_key(root_key, self.path)
        if not _is_count(n):
            raise RecordError(f"pytorch: {self.path}: storage {root_key!r} has {brief(n)} "
                              "elements")
        if root_key not in pending:
            pending[root_key] = (stype, n, [])
        elif pending[root_key][:2] != (stype, n):
            raise RecordError(f"pytorch: {self.path}: storage {root_key!r} is declared twice, "
                              "differently")
        offset, count = 0, n
        if view is not None:  # an old storage view: (view key, element offset, size)
            if not (isinstance(view, tuple) and len(view) == 3 and _is_count(view[1])
                    and _is_count(view[2]) and view[1] + view[2] <= n):
                raise RecordError(f"pytorch: {self.path}: bad storage view {brief(view)}")
            _, offset, count = view
        # base holds the byte offset inside the storage until the data start is known
        storage = _Storage(f"{root_key}+{offset}", stype, count, offset * stype.itemsize)
        pending[root_key][2].append(storage)
        return storage

    # ------------------------------------------------------------------ tensors
    def keys(self) -> list[str]:
        """The dotted names of every tensor in the file, in file order."""
        return list(self._tensors)

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def ref(self, name: str) -> TensorRef:
        """The lazy reference to tensor ``name`` (storage, offset, shape, strides); no read."""
        try:
            return self._tensors[name]
        except KeyError:
            raise KeyError(f"pytorch: {self.path} has no tensor {name!r}") from None

    def info(self, name: str) -> tuple[str, tuple[int, ...]]:
        """``(dtype name, shape)`` of tensor ``name``, without reading it."""
        ref = self.ref(name)
        return ref.dtype_name, ref.shape

    def get(self, name: str) -> TensorData:
        """The tensor's values, contiguous; RecordError if they would pass ``max_tensor_bytes``
        or make the file expand by more than ``max_expansion_bytes`` (a zero-stride view of
        one element can claim terabytes).
        """
        ref = self.ref(name)
        with reading(f"pytorch: {self.path}: tensor {name!r}"):
            st = ref.storage
            nbytes = numel(ref.shape) * st.type.dtype.itemsize
            bounds = limits.current()
            if nbytes > min(bounds.max_tensor_bytes, self._size + bounds.max_expansion_bytes):
                what = f"pytorch: {self.path}: tensor {name!r} of shape {brief(ref.shape)}"
                limits.check(RecordError, f"{what}: bytes", nbytes, "max_tensor_bytes")
                limits.check(RecordError, f"{what}: bytes beyond the file's own {self._size}",
                             nbytes - self._size, "max_expansion_bytes")
            size = st.type.itemsize
            raw = self._read_span(st, ref.offset * size, _extent(ref.shape, ref.stride) * size)
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
        """``(name, TensorData)`` of every tensor, read one at a time."""
        for name in self._tensors:
            yield name, self.get(name)

    def close(self) -> None:
        """Close the zip archive (the ``with`` block does it too)."""
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> PyTorchFile:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _is_tensor(value: Any) -> bool:
    return isinstance(value, TensorRef)


def _gather(raw: bytes, shape: tuple, stride: tuple, size: int) -> bytes:
    """The elements of a strided view (``raw`` starts at its first element), row-major."""
    n = numel(shape)
    if n == 0:
        return b""
    # size-1 dims don't move through memory; without them a view has at most ~64 dims
    dims = [(d, s) for d, s in zip(shape, stride) if d != 1]
    shape, stride = tuple(d for d, _ in dims), tuple(s for _, s in dims)
    contiguous, expect = True, 1
    for d, s in zip(reversed(shape), reversed(stride)):
        if s != expect:
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
    r"""Every tensor of a PyTorch checkpoint as ``name → TensorData`` (no torch needed).

    >>> weights = read_pytorch("resnet18.pth")   # doctest: +SKIP
    >>> weights["fc.weight"].shape               # doctest: +SKIP
    (1000, 512)

    The tiny checkpoint of :class:`PyTorchFile`'s example (``_tiny_checkpoint()`` writes it):

    >>> path = _tiny_checkpoint()
    >>> {name: data.tolist() for name, data in read_pytorch(path).items()}
    {'w': [1.0, 2.0]}
    """
    with PyTorchFile(path) as f:
        return dict(f.items())


def _tiny_checkpoint() -> str:
    """The checkpoint of :class:`PyTorchFile`'s example, for the other examples: its path."""
    import struct
    import tempfile
    import zipfile

    pkl = (b"(dVw\nctorch._utils\n_rebuild_tensor_v2\n((Vstorage\nctorch\nFloatStorage\nV0\n"
           b"Vcpu\nI2\ntQI0\n(I2\nt(I1\ntI00\nccollections\nOrderedDict\n)RtRs.")
    path = os.path.join(tempfile.mkdtemp(), "w.pt")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/data/0", struct.pack("<2f", 1.0, 2.0))
    return path


def load_pytorch(path: str | os.PathLike, backend=None) -> dict:
    r"""Every tensor of a PyTorch checkpoint as ember Tensors (on ``backend``).

    >>> path = _tiny_checkpoint()  # PyTorchFile's example: {"w": tensor([1.0, 2.0])}
    >>> load_pytorch(path, backend="python")["w"].tolist()
    [1.0, 2.0]
    """
    from ..ops.creation import tensor

    return {name: tensor(data, backend=backend) for name, data in read_pytorch(path).items()}
