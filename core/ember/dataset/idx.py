"""The IDX file format of MNIST and Fashion-MNIST (optionally gzip-compressed).

Header: two zero bytes, a type code (0x08 = unsigned byte), the number of dims, then one
big-endian uint32 per dim. Everything is validated before use, so a malformed file gives a
:class:`~ember.errors.DatasetError` naming the file and the problem.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

from ..errors import DatasetError
from ..shape import numel

MAX_ITEMS = 10_000_000  # guards against absurd dims in a corrupt header


def read_idx(path: str | os.PathLike) -> tuple[bytes, tuple[int, ...]]:
    r"""The raw uint8 payload and shape of an IDX file (``.gz`` is decompressed).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny-images.gz")
    >>> write_idx(path, bytes(range(6)), (2, 3))
    >>> read_idx(path)
    (b'\x00\x01\x02\x03\x04\x05', (2, 3))
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DatasetError(f"IDX: can't read {path}: {e.strerror}") from e
    if path.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetError(f"IDX: {path} is not a valid gzip file ({e})") from e
    return parse_idx(raw, path)


def parse_idx(raw: bytes, name: str = "<bytes>") -> tuple[bytes, tuple[int, ...]]:
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise DatasetError(f"IDX: {name} doesn't start with an IDX magic number")
    type_code, ndim = raw[2], raw[3]
    if type_code != 0x08:
        raise DatasetError(
            f"IDX: {name} holds type code 0x{type_code:02x}; only unsigned bytes (0x08) are read"
        )
    if not 1 <= ndim <= 4 or len(raw) < 4 + 4 * ndim:
        raise DatasetError(f"IDX: {name} has a truncated or invalid header ({ndim} dims)")
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    count = numel(shape)
    if shape[0] > MAX_ITEMS or len(raw) - 4 - 4 * ndim != count:
        raise DatasetError(
            f"IDX: {name} declares shape {shape} ({count} bytes) but holds "
            f"{len(raw) - 4 - 4 * ndim} bytes of data (truncated or corrupt)"
        )
    return raw[4 + 4 * ndim :], tuple(shape)


def write_idx(path: str | os.PathLike, payload: bytes, shape: tuple[int, ...]) -> None:
    r"""Write uint8 data as IDX (gzip when the name ends in ``.gz``), atomically.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.idx")
    >>> write_idx(path, bytes([7, 1]), (2,))
    >>> open(path, "rb").read()  # magic (uint8, 1 dim), the dim as big-endian uint32, the data
    b'\x00\x00\x08\x01\x00\x00\x00\x02\x07\x01'
    """
    from ..io.atomic import atomic_write

    if numel(shape) != len(payload):
        raise ValueError(f"write_idx: {len(payload)} bytes don't fit shape {shape}")
    raw = bytes([0, 0, 0x08, len(shape)]) + struct.pack(f">{len(shape)}I", *shape) + payload
    if os.fspath(path).endswith(".gz"):
        raw = gzip.compress(raw, mtime=0)
    with atomic_write(path) as f:
        f.write(raw)
