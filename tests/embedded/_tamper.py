"""Edit MCU model files the way an attacker would: change a header or layer field, then (or
not) fix the checksum. Offsets come from the documented layout (core/ember/export/format.py),
written out here so the tests don't take them from the code under test."""

from __future__ import annotations

import struct
import zlib

HEADER = 48
LAYER = 52
# header fields: (offset, struct code)
N_LAYERS, MAX_ACT, CRC = (8, "<H"), (20, "<I"), (44, "<I")
# layer record fields, relative to the record
GROUPS, LFLAGS = (28, "<H"), (3, "<B")


def rechecksum(data: bytes) -> bytes:
    """``data`` with its CRC-32 recomputed over every byte but the checksum field."""
    out = bytearray(data)
    struct.pack_into("<I", out, CRC[0], zlib.crc32(bytes(out[:44]) + bytes(out[HEADER:])))
    return bytes(out)


def patch(data: bytes, field: tuple[int, str], value: int, *, layer: int | None = None,
          fix_crc: bool = True) -> bytes:
    """Set a header ``field`` (or that field of layer record ``layer``) to ``value``."""
    out = bytearray(data)
    offset = field[0] + (HEADER + LAYER * layer if layer is not None else 0)
    struct.pack_into(field[1], out, offset, value)
    return rechecksum(bytes(out)) if fix_crc else bytes(out)
