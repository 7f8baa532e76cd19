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
from ..data import TensorData
from ..errors import RecordError
from ..shape import numel
from .atomic import atomic_write

MAX_HEADER = 100 * 1024 * 1024  # the reference implementation's limit

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
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        try:
            size = os.path.getsize(self.path)
        except OSError as e:
            raise RecordError(f"safetensors: can't open {self.path}: {e.strerror}") from e
        with open(self.path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise RecordError(f"safetensors: {self.path} is truncated (no header size)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER or 8 + n > size:
                raise RecordError(
                    f"safetensors: {self.path} declares a {n}-byte header but the file has "
                    f"{size} bytes (truncated or not a safetensors file)"
                )
            raw = f.read(n)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RecordError(f"safetensors: {self.path} has a corrupt JSON header: {e}") from e
        if not isinstance(header, dict):
            raise RecordError(f"safetensors: {self.path}: header is not a JSON object")
        self.metadata: dict[str, str] = header.pop("__metadata__", None) or {}
        self._data_start = 8 + n
        self._entries = {name: self._check(name, e, size - 8 - n) for name, e in header.items()}

    def _check(self, name: str, entry: object, data_size: int) -> tuple[str, tuple, int, int]:
        where = f"safetensors: {self.path}: tensor {name!r}"
        if not isinstance(entry, dict):
            raise RecordError(f"{where}: entry is not an object")
        code, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if code not in _LOADS_AS:
            raise RecordError(
                f"{where}: unsupported dtype {code!r} (supported: {', '.join(_LOADS_AS)})"
            )
        if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise RecordError(f"{where}: bad shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(isinstance(o, int) for o in offsets)):
            raise RecordError(f"{where}: bad data_offsets {offsets!r}")
        begin, end = offsets
        expected = numel(shape) * _LOADS_AS[code][1]
        if not 0 <= begin <= end <= data_size or end - begin != expected:
            raise RecordError(
                f"{where}: data_offsets {offsets} don't fit {expected} bytes of {code}{shape} "
                f"inside a {data_size}-byte data section (truncated or corrupt file)"
            )
        return code, tuple(shape), begin, end

    def keys(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def info(self, name: str) -> tuple[str, tuple[int, ...]]:
        code, shape, _, _ = self._entry(name)
        return code, shape

    def _entry(self, name: str):
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"safetensors: {self.path} has no tensor {name!r}") from None

    def get(self, name: str) -> TensorData:
        code, shape, begin, end = self._entry(name)
        with open(self.path, "rb") as f:
            f.seek(self._data_start + begin)
            raw = f.read(end - begin)
        if len(raw) != end - begin:
            raise RecordError(f"safetensors: {self.path}: tensor {name!r} is truncated")
        target = _LOADS_AS[code][0]
        if code == "BF16":
            raw = _bf16_to_f32(raw)
        elif code in _WIDEN:
            values = struct.unpack(f"<{numel(shape)}{_WIDEN[code]}", raw)
            return TensorData.from_values(values, shape, target)
        return TensorData(raw, shape, target)

    def items(self):
        for name in self._entries:
            yield name, self.get(name)


def load_file(path: str | os.PathLike, backend=None) -> dict:
    """All tensors of a file as ember Tensors (on ``backend``, default backend if None)."""
    from ..ops.creation import tensor

    f = SafeTensorsFile(path)
    return {name: tensor(data, backend=backend) for name, data in f.items()}


def save_file(
    tensors: Mapping[str, object], path: str | os.PathLike, metadata: Mapping[str, str] | None = None
) -> None:
    """Write tensors (ember Tensors or TensorData) atomically; ``metadata`` is str → str."""
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
        if data.dtype not in _CODE:
            raise RecordError(f"safetensors: can't store {name!r} of dtype {data.dtype}")
        header[name] = {
            "dtype": _CODE[data.dtype], "shape": list(data.shape),
            "data_offsets": [offset, offset + len(data.buffer)],
        }
        blobs.append(data.buffer)
        offset += len(data.buffer)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # align the data section to 8 bytes, as the reference does
    with atomic_write(path) as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)
