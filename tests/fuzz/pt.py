"""Structure-aware mutations for PyTorch checkpoints: pickle opcodes and zip archives.

Pickle edits work on the opcode stream (``pickletools.genops``): integer and length arguments
set to interesting values, hostile globals, tensor geometry (huge sizes, zero strides),
snippets that nest deeply or share one object exponentially often, deleted and repeated
opcodes. Zip edits rewrite members (through ``zipfile``, so CRCs stay right) or poke header
fields; :func:`zip_checksum` repairs the CRCs of stored members after byte-level edits.
"""

from __future__ import annotations

import functools
import io
import pickletools
import random
import struct
import warnings
import zipfile
import zlib

from .mutate import INTERESTING, pack_int

# fixed-width integer arguments: opcode name -> struct code
_INT_ARGS = {"BININT": "<i", "BININT1": "<B", "BININT2": "<H", "BINPUT": "<B", "BINGET": "<B",
             "LONG_BINPUT": "<I", "LONG_BINGET": "<I", "PROTO": "<B", "FRAME": "<Q",
             "EXT1": "<B", "EXT2": "<H", "EXT4": "<i"}
# length prefixes of variable-size arguments: pickletools' ArgumentDescriptor.n -> struct code
_LENGTHS = {pickletools.TAKEN_FROM_ARGUMENT1: "<B", pickletools.TAKEN_FROM_ARGUMENT4: "<i",
            pickletools.TAKEN_FROM_ARGUMENT4U: "<I", pickletools.TAKEN_FROM_ARGUMENT8U: "<Q"}
GLOBALS = [("os", "system"), ("builtins", "eval"), ("builtins", "getattr"),
           ("posix", "system"), ("subprocess", "Popen"), ("torch", "load"),
           ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_parameter"),
           ("collections", "OrderedDict"), ("torch", "FloatStorage"), ("torch", "Size"),
           ("builtins", "set"), ("builtins", "frozenset"), ("torch", "UntypedStorage"),
           ("torch._utils", "_rebuild_qtensor"), ("torch.nn.modules.linear", "Linear"),
           ("__main__", "X"), ("torch", "BFloat16Storage"), ("torch.storage", "HalfStorage")]


def _u32(n: int) -> bytes:
    return struct.pack("<I", n)


def _dag(levels: int) -> bytes:
    """A list holding the previous level twice, ``levels`` deep: 2**levels paths, tiny file."""
    out = b"]r" + _u32(0)
    for i in range(1, levels):
        out += b"0](j" + _u32(i - 1) + b"j" + _u32(i - 1) + b"er" + _u32(i)
    return out


@functools.cache
def hostile_objects() -> list[bytes]:
    """Opcodes pushing one hostile value: deep nesting, exponential sharing, huge lengths."""
    key = b"X\x01\x00\x00\x00k"
    return [
        _dag(40), _dag(64),
        b"]" * 100_000 + b"a" * 99_999, b")" + b"\x85" * 100_000, b"(" * 50_000 + b"t" * 50_000,
        (b"}" + key) * 30_000 + b"}" + b"s" * 30_000,
        b"}(" + b"".join(b"J" + _u32(i) + b"N" for i in range(50_000)) + b"u",
        b"\x8b\xff\xff\xff\x7f", b"X\xff\xff\xff\x7f", b"B\xff\xff\xff\x7f",
        b"\x8d" + (1 << 62).to_bytes(8, "little"), b"\x96" + (1 << 62).to_bytes(8, "little"),
        b"j\xff\xff\xff\x7f", b"]r\xff\xff\xff\x7f", b"\x95" + (1 << 62).to_bytes(8, "little"),
        b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu"
        b"\x8a\x08" + (1 << 62).to_bytes(8, "little") + b"tQ",
        b"(X\x07\x00\x00\x00storageK\x01tQ", b"ccollections\nOrderedDict\nK\x05\x85R",
        b"cbuiltins\nset\n]]\x86\x85R", b"ctorch\nSize\nK\x05\x85R", b"I99999999999999999999\n",
    ]


def pickle_ops(data: bytes, max_pickles: int = 5) -> list[tuple]:
    """``(opcode, arg, position)`` of each opcode of up to ``max_pickles`` concatenated
    pickles at the start of ``data`` (a legacy checkpoint holds five)."""
    ops, pos = [], 0
    for _ in range(max_pickles):
        last = None
        try:
            for op, arg, p in pickletools.genops(io.BytesIO(data[pos:])):
                ops.append((op, arg, pos + p))
                last = (op, p)
        except Exception:  # noqa: BLE001 - a mutated pickle ends wherever it breaks
            return ops
        if last is None or last[0].name != "STOP":
            return ops
        pos += last[1] + 1
    return ops


def _op_end(data: bytes, ops: list, i: int) -> int:
    return ops[i + 1][2] if i + 1 < len(ops) else len(data)


def _set_arg(data: bytes, op, arg, pos: int, rng: random.Random) -> bytes:
    name, n = op.name, op.arg.n if op.arg else 0
    if name in _INT_ARGS:
        code = _INT_ARGS[name]
        return data[:pos + 1] + pack_int(code, rng.choice(INTERESTING)) + \
            data[pos + 1 + struct.calcsize(code):]
    if n in _LENGTHS:
        code = _LENGTHS[n]
        return data[:pos + 1] + pack_int(code, rng.choice(INTERESTING)) + \
            data[pos + 1 + struct.calcsize(code):]
    if name in ("GLOBAL", "INST"):
        end = data.index(b"\n", data.index(b"\n", pos + 1) + 1) + 1
        module, attr = rng.choice(GLOBALS)
        return data[:pos + 1] + f"{module}\n{attr}\n".encode() + data[end:]
    if name in ("INT", "LONG"):
        end = data.index(b"\n", pos + 1) + 1
        return data[:pos + 1] + str(rng.choice(INTERESTING)).encode() + b"\n" + data[end:]
    return data


def _geometry(data: bytes, ops: list, rng: random.Random) -> bytes:
    """Tensor records: the ints after a storage reference (offset, sizes, strides) set to
    zero, one or huge — zero strides with huge sizes make broadcast views."""
    small = {"BININT", "BININT1", "BININT2"}
    spans, inside = [], False
    for op, _arg, pos in ops:
        if op.name == "BINPERSID":
            inside = True
        elif op.name in ("NEWFALSE", "NEWTRUE", "REDUCE"):
            inside = False
        elif inside and op.name in small:
            spans.append((op, pos))
    if not spans:
        return data
    picked = spans if rng.random() < 0.5 else rng.sample(spans, rng.randint(1, len(spans)))
    out = bytearray(data)
    for op, pos in picked:
        code = _INT_ARGS[op.name]
        value = rng.choice([0, 1, 2**31 - 1, 255]) if code != "<B" else rng.choice([0, 1, 255])
        out[pos + 1:pos + 1 + struct.calcsize(code)] = pack_int(code, value)
    return bytes(out)


def pickle_edit(data: bytes, rng: random.Random) -> bytes:
    """One opcode-level edit of the pickles at the start of ``data``."""
    ops = pickle_ops(data)
    if not ops:
        return data
    i = rng.randrange(len(ops))
    op, arg, pos = ops[i]
    edit = rng.randrange(6)
    if edit == 0:
        with_args = [j for j, (o, _a, _p) in enumerate(ops) if o.arg is not None]
        if with_args:
            j = rng.choice(with_args)
            return _set_arg(data, *ops[j], rng)
    if edit == 1:
        return _geometry(data, ops, rng)
    if edit == 2:
        return data[:pos] + rng.choice(hostile_objects()) + data[pos:]
    if edit == 3:
        return data[:pos] + data[_op_end(data, ops, i):]
    if edit == 4:
        chunk = data[pos:_op_end(data, ops, i)]
        return data[:pos] + chunk * rng.choice([2, 100]) + data[pos + len(chunk):]
    other = rng.choice(pickletools.opcodes)
    return data[:pos] + other.code.encode("latin-1") + data[pos + 1:]


def legacy_object(data: bytes, rng: random.Random) -> bytes:
    """Replace a legacy checkpoint's object pickle with a hostile value and no storages."""
    ops = pickle_ops(data)
    stops = [pos for op, _a, pos in ops if op.name == "STOP"]
    if len(stops) < 3:
        return data
    return data[:stops[2] + 1] + b"\x80\x02" + rng.choice(hostile_objects()) + b".\x80\x02]."


# ------------------------------------------------------------------ zip archives
def zip_members(data: bytes) -> list[tuple[str, bytes, int]] | None:
    """``[(name, raw stored bytes, compression)]`` read from the local headers (no CRC check)."""
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except Exception:  # noqa: BLE001 - not a zip any more
        return None
    out = []
    for info in infos:
        at = info.header_offset
        if data[at:at + 4] != b"PK\x03\x04":
            return None
        n, x = struct.unpack_from("<HH", data, at + 26)
        start = at + 30 + n + x
        out.append((info.filename, data[start:start + info.compress_size], info.compress_type))
    return out


def zip_build(members: list[tuple[str, bytes, int]]) -> bytes:
    """An archive of raw members (deflated ones stay deflated); zipfile writes right CRCs."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are one of the edits
        with zipfile.ZipFile(buf, "w") as zf:
            for name, raw, method in members:
                if method == zipfile.ZIP_DEFLATED:
                    try:
                        raw = zlib.decompress(raw, -15)
                    except zlib.error:
                        method = zipfile.ZIP_STORED
                zf.writestr(zipfile.ZipInfo(name), raw, compress_type=method)
    return buf.getvalue()


def zip_member_edit(data: bytes, rng: random.Random) -> bytes:
    """Edit one member (the pickle, byteorder, a storage), rename/drop/add members or deflate
    one, and rebuild the archive."""
    members = zip_members(data)
    if not members:
        return data
    i = rng.randrange(len(members))
    name, raw, method = members[i]
    edit = rng.randrange(5)
    if edit == 0 or name.endswith("data.pkl"):
        pkl = next((j for j, m in enumerate(members) if m[0].endswith("data.pkl")), i)
        name, raw, method = members[pkl]
        raw = (b"\x80\x02" + rng.choice(hostile_objects()) + b"."
               if rng.random() < 0.2 else pickle_edit(raw, rng))
        members[pkl] = (name, raw, method)
    elif edit == 1 or name.endswith("byteorder"):
        members[i] = (name, rng.choice([b"big", b"middle", b"", b"\xff\xfe", b"little\n" * 99]),
                      method)
    elif edit == 2:
        members[i] = (name, raw[: rng.randrange(len(raw) + 1)] if rng.random() < 0.5
                      else raw + bytes(rng.choice([1, 4, 4096])), method)
    elif edit == 3:
        prefix = name.split("/")[0]
        new = rng.choice([f"{prefix}/data.pkl", "other/data.pkl", "../evil", "/abs/path",
                          f"{prefix}/data/../data.pkl", f"{prefix}/data/999", name + "\0x",
                          "é/data.pkl", ""])
        if rng.random() < 0.5:
            members[i] = (new, raw, method)
        elif rng.random() < 0.5:
            members.append((new, raw, method))
        else:
            del members[i]
    else:
        raw = _zeros_deflated() if rng.random() < 0.3 else zlib.compress(raw, 9)[2:-4]
        members[i] = (name, raw, zipfile.ZIP_DEFLATED)
    return zip_build(members)


@functools.cache
def _zeros_deflated() -> bytes:
    """64 MiB of zeros as a raw deflate stream (~64 KiB): a member that inflates a lot."""
    return zlib.compress(bytes(64 << 20), 9)[2:-4]


# (signature, field offsets and widths) of the local header, central entry and end record
_ZIP_FIELDS = {
    b"PK\x03\x04": [(4, 2), (6, 2), (8, 2), (14, 4), (18, 4), (22, 4), (26, 2), (28, 2)],
    b"PK\x01\x02": [(10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (30, 2), (32, 2), (34, 2),
                    (42, 4)],
    b"PK\x05\x06": [(4, 2), (8, 2), (10, 2), (12, 4), (16, 4), (20, 2)],
}


def zip_header_edit(data: bytes, rng: random.Random) -> bytes:
    """Set a field of a local header, central directory entry or end record (sizes, offsets,
    name lengths, compression method, entry counts) to an interesting value."""
    spots = [(i, sig) for sig in _ZIP_FIELDS for i in _find_all(data, sig)]
    if not spots:
        return data
    at, sig = rng.choice(spots)
    off, width = rng.choice(_ZIP_FIELDS[sig])
    value = rng.choice(INTERESTING + [8, 12, 14, 99])
    field = pack_int("<H" if width == 2 else "<I", value)
    return data[:at + off] + field + data[at + off + width:]


def _find_all(data: bytes, sig: bytes) -> list[int]:
    out, i = [], data.find(sig)
    while i >= 0:
        out.append(i)
        i = data.find(sig, i + 1)
    return out


def zip_checksum(data: bytes) -> bytes:
    """Recompute the CRC-32 of every stored member, in its central entry and local header."""
    out = bytearray(data)
    for c in _find_all(data, b"PK\x01\x02"):
        if c + 46 > len(data):
            continue
        method, = struct.unpack_from("<H", data, c + 10)
        size, = struct.unpack_from("<I", data, c + 20)
        local, = struct.unpack_from("<I", data, c + 42)
        if method != 0 or local + 30 > len(data) or data[local:local + 4] != b"PK\x03\x04":
            continue
        n, x = struct.unpack_from("<HH", data, local + 26)
        start = local + 30 + n + x
        crc = struct.pack("<I", zlib.crc32(data[start:start + size]) & 0xFFFFFFFF)
        out[c + 16:c + 20] = crc
        out[local + 14:local + 18] = crc
    return bytes(out)
