"""safetensors in pure Python: no torch, no safetensors package.

Layout: an 8-byte little-endian header size ``N``, ``N`` bytes of JSON
(``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}}``),
then the raw little-endian data. Reads are lazy: :class:`SafeTensorsFile` reads one tensor's
bytes at a time. Every offset and size is checked before anything is read, so a malformed file
gives a :class:`~ember.errors.RecordError`, never a crash or a huge allocation.

>>> import os, tempfile, ember
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> save_file({"w": ember.tensor([[1.0, 2.0]])}, path, metadata={"note": "demo"})
>>> load_file(path)["w"].tolist()
[[1.0, 2.0]]
"""

from __future__ import annotations

import json
import os
import struct
from array import array
from collections.abc import Mapping

from .. import dtype as dt
from .. import limits
from ..tensordata import TensorData
from ..errors import RecordError
from ..shape import numel
from .untrusted import parse_json, reading

# safetensors code → (ember dtype it loads as, bytes per element in the file)
_LOADS_AS = {
    "F64": (dt.float64, 8), "F32": (dt.float32, 4), "F16": (dt.float16, 2),
    "BF16": (dt.float32, 2), "I64": (dt.int64, 8), "I32": (dt.int32, 4), "I16": (dt.int32, 2),
    "I8": (dt.int8, 1), "U8": (dt.uint8, 1), "U16": (dt.int32, 2), "U32": (dt.int64, 4),
    "BOOL": (dt.bool_, 1),
}
_CODE = {
    dt.float64: "F64", dt.float32: "F32", dt.float16: "F16", dt.int64: "I64",
    dt.int32: "I32", dt.int8: "I8", dt.uint8: "U8", dt.bool_: "BOOL",
}
# widening conversions for codes with no ember dtype of their own: struct code of the source
_WIDEN = {"I16": "h", "U16": "H", "U32": "I"}


def _bf16_to_f32(raw: bytes) -> bytes:
    """bfloat16 is the top half of a float32: put each 2-byte value above two zero bytes."""
    halves = array("H")
    halves.frombytes(raw)
    out = array("I", (h << 16 for h in halves))
    return out.tobytes()


class SafeTensorsFile:
    """A safetensors file opened for lazy, per-tensor reads.

    ``keys()``, ``metadata``, ``info(name)`` → (safetensors dtype, shape), ``get(name)`` →
    TensorData (F16 stays float16; BF16 becomes float32; I16/U16 become int32; U32 int64).
    Opening checks the whole header as the format requires (every entry well-typed, the
    tensors back to back from byte 0 to the end of the file, each exactly its shape's size)
    within :mod:`ember.limits`; any problem is a :class:`~ember.errors.RecordError`.

    >>> import os, tempfile, ember
    >>> path = os.path.join(tempfile.mkdtemp(), "a.safetensors")
    >>> save_file({"a": ember.tensor([1, 2])}, path, metadata={"note": "example"})
    >>> f = SafeTensorsFile(path)
    >>> f.keys(), "a" in f, f.metadata, f.info("a"), f.get("a").tolist()
    (['a'], True, {'note': 'example'}, ('I64', (2,)), [1, 2])
    >>> [(name, data.shape) for name, data in f.items()]
    [('a', (2,))]
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        with reading(f"safetensors: {self.path}"):
            self._open()

    def _open(self) -> None:
        try:
            size = os.path.getsize(self.path)
            with open(self.path, "rb") as f:
                head = f.read(8)
                if len(head) < 8:
                    raise RecordError(f"safetensors: {self.path} is truncated (no header size)")
                (n,) = struct.unpack("<Q", head)
                if 8 + n > size:
                    raise RecordError(
                        f"safetensors: {self.path} declares a {n}-byte header but the file has "
                        f"{size} bytes (truncated or not a safetensors file)"
                    )
                limits.check(RecordError, f"safetensors: {self.path}: header size", n,
                             "max_header_bytes")
                raw = f.read(n)
        except OSError as e:
            raise RecordError(f"safetensors: can't open {self.path}: {e.strerror}") from e
        header = parse_json(raw, f"safetensors: {self.path}: header")
        if not isinstance(header, dict):
            raise RecordError(f"safetensors: {self.path}: header is not a JSON object")
        self.metadata: dict[str, str] = self._check_metadata(header.pop("__metadata__", None))
        limits.check(RecordError, f"safetensors: {self.path}: tensors", len(header),
                     "max_tensors")
        self.header_size = n
        self._data_start = 8 + n
        data_size = size - 8 - n
        self._entries = {name: self._check(name, e, data_size) for name, e in header.items()}
        self._check_layout(data_size)

    def _check_metadata(self, metadata: object) -> dict[str, str]:
        if metadata is None:
            return {}
        if not (isinstance(metadata, dict)
                and all(isinstance(v, str) for v in metadata.values())):
            raise RecordError(
                f"safetensors: {self.path}: __metadata__ must be an object of strings, got "
                f"{str(metadata)[:80]}"
            )
        return metadata

    def _check(self, name: str, entry: object, data_size: int) -> tuple[str, tuple, int, int]:
        where = f"safetensors: {self.path}: tensor {name!r}"
        if not isinstance(entry, dict):
            raise RecordError(f"{where}: entry is not an object")
        code, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(code, str) or code not in _LOADS_AS:
            raise RecordError(
                f"{where}: unsupported dtype {code!r} (supported: {', '.join(_LOADS_AS)})"
            )
        if not (isinstance(shape, list) and all(_is_count(s) for s in shape)):
            raise RecordError(f"{where}: bad shape {shape!r} (a list of integers >= 0)")
        limits.check_shape(RecordError, where, shape)
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(_is_count(o) for o in offsets) and offsets[0] <= offsets[1]):
            raise RecordError(
                f"{where}: bad data_offsets {offsets!r} ([begin, end], 0 <= begin <= end)"
            )
        begin, end = offsets
        expected = _nbytes(shape, _LOADS_AS[code][1], data_size)
        if end > data_size or end - begin != expected:
            takes = "more than that" if expected is None else f"{expected} bytes"
            raise RecordError(
                f"{where}: data_offsets {offsets} span {end - begin} bytes of a "
                f"{data_size}-byte data section, but {code}{shape} takes {takes} "
                "(truncated or corrupt file)"
            )
        return code, tuple(shape), begin, end

    def _check_layout(self, data_size: int) -> None:
        """The format's rule: tensors back to back, no gap or overlap, covering the data."""
        position = 0
        for begin, end, name in sorted((b, e, k) for k, (_, _, b, e) in self._entries.items()):
            if begin != position:
                raise RecordError(
                    f"safetensors: {self.path}: tensor {name!r} starts at byte {begin} of the "
                    f"data section where byte {position} was expected (tensors must be stored "
                    "back to back, without gaps or overlaps; corrupt file)"
                )
            position = end
        if position != data_size:
            raise RecordError(
                f"safetensors: {self.path}: the tensors cover {position} bytes but the data "
                f"section has {data_size} (a wrong header size, or a truncated or padded file)"
            )

    def keys(self) -> list[str]:
        """The tensor names, in header order."""
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def info(self, name: str) -> tuple[str, tuple[int, ...]]:
        """``(safetensors dtype code, shape)`` of tensor ``name``, without reading it."""
        code, shape, _, _ = self._entry(name)
        return code, shape

    def _entry(self, name: str):
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"safetensors: {self.path} has no tensor {name!r}") from None

    def get(self, name: str) -> TensorData:
        """Tensor ``name`` read from the file, as TensorData (converted as the class says)."""
        try:
            with open(self.path, "rb") as f:
                return self._read(f, name)
        except OSError as e:
            raise RecordError(f"safetensors: can't read {self.path}: {e.strerror}") from e

    def items(self):
        """``(name, TensorData)`` of every tensor, read one at a time through one file handle."""
        try:
            with open(self.path, "rb") as f:  # one handle for all: a file may hold 10^6
                for name in self._entries:
                    yield name, self._read(f, name)
        except OSError as e:
            raise RecordError(f"safetensors: can't read {self.path}: {e.strerror}") from e

    def _read(self, f, name: str) -> TensorData:
        code, shape, begin, end = self._entry(name)
        target = _LOADS_AS[code][0]
        limits.check(RecordError, f"safetensors: {self.path}: tensor {name!r}: bytes",
                     numel(shape) * target.itemsize, "max_tensor_bytes")
        f.seek(self._data_start + begin)
        raw = f.read(end - begin)
        if len(raw) != end - begin:
            raise RecordError(f"safetensors: {self.path}: tensor {name!r} is truncated (the "
                              "file shrank after it was opened)")
        if code == "BF16":
            raw = _bf16_to_f32(raw)
        elif code in _WIDEN:
            values = struct.unpack(f"<{numel(shape)}{_WIDEN[code]}", raw)
            return TensorData.from_values(values, shape, target)
        return TensorData(raw, shape, target)


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0  # not bool, not float


def _nbytes(shape: list[int], itemsize: int, cap: int) -> int | None:
    """``prod(shape) * itemsize``, or None once it passes ``cap`` (huge dims stay cheap)."""
    if 0 in shape:
        return 0
    n = itemsize
    for s in shape:
        n *= s
        if n > cap:
            return None
    return n


def load_file(path: str | os.PathLike, backend=None) -> dict:
    """All tensors of a file as ember Tensors (on ``backend``, default backend if None).

    >>> import os, tempfile, ember
    >>> path = os.path.join(tempfile.mkdtemp(), "a.safetensors")
    >>> save_file({"a": ember.tensor([1.5, 2.5])}, path)
    >>> load_file(path, backend="python")["a"].tolist()
    [1.5, 2.5]
    """
    from ..ops.creation import tensor

    f = SafeTensorsFile(path)
    return {name: tensor(data, backend=backend) for name, data in f.items()}


def save_file(
    tensors: Mapping[str, object], path: str | os.PathLike, metadata: Mapping[str, str] | None = None
) -> None:
    """Write tensors (ember Tensors or TensorData) atomically; ``metadata`` is str → str.

    >>> import os, tempfile, ember
    >>> path = os.path.join(tempfile.mkdtemp(), "a.safetensors")
    >>> save_file({"x": ember.zeros(2, 3)}, path)
    >>> SafeTensorsFile(path).info("x")
    ('F32', (2, 3))
    """
    write_parts(path, encode(tensors, metadata))


def encode(tensors: Mapping[str, object], metadata: Mapping[str, str] | None = None) -> list:
    """The file as a list of byte strings: the header size and header, then each tensor's
    data (what :func:`save_file` writes; records patch the header before writing)."""
    header: dict[str, object] = {}
    if metadata:
        bad = [k for k, v in metadata.items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad:
            raise TypeError(f"safetensors: metadata must map str to str; bad keys: {bad}")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, value in tensors.items():
        data = value if isinstance(value, TensorData) else value.to_data()
        if data.dtype not in _CODE or name == "__metadata__":
            raise RecordError(f"safetensors: can't store {name!r} of dtype {data.dtype}")
        header[name] = {
            "dtype": _CODE[data.dtype], "shape": list(data.shape),
            "data_offsets": [offset, offset + len(data.buffer)],
        }
        blobs.append(data.buffer)
        offset += len(data.buffer)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # align the data section to 8 bytes, as the reference does
    return [struct.pack("<Q", len(raw)) + raw, *blobs]


def write_parts(path: str | os.PathLike, parts: list) -> None:
    """Write ``parts`` one after the other to ``path``, atomically."""
    from .atomic import atomic_write  # tempfile, shutil: imported only to write

    with atomic_write(path) as f:
        for part in parts:
            f.write(part)
