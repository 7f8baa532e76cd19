"""Structure-aware mutations and checksum fixups: safetensors / record JSON headers, MCU model
files, PNG chunks. (Pickles and zip archives: :mod:`.pt`; ONNX protobufs: :mod:`.onnx_mut`.)

A mutation takes ``(data, rng)`` and returns new bytes; when ``data`` no longer parses as its
format it is returned unchanged. A fixup repairs what the format checks first (a length, a
CRC) so the mutation reaches the code behind that check; there is one small fixup per format,
kept next to the layout it mirrors, so a layout change touches one function.
"""

from __future__ import annotations

import functools
import json
import random
import re
import struct
import zlib

from .mutate import INTERESTING, pack_int

# ------------------------------------------------------------------ JSON trees (any JSON)
_RAW = "@@RAW{}@@"
#: raw JSON text a parser may choke on, substituted for a placeholder after json.dumps
RAW_TEXT = ["[" * 100_000 + "]" * 100_000, "[" * 1000 + "]" * 1000,
            '{"a":' * 50_000 + "0" + "}" * 50_000, "9" * 5000, "1e400", "-1e400", "NaN",
            "-Infinity", "-0", "1" + "0" * 30]
HOSTILE_JSON = [0, -1, 1, 2**31, 2**63, 2**64, -(2**63), 1.5, 1e308, True, False, None, "",
                "x" * 4096, [], {}, [[0]], {"__tensor__": "missing"}, {"__tensor__": 5},
                {"__tuple__": 5}, {"__dict__": [[1]]}, {"__dict__": "x"}, {"__tensor__": []},
                ["F32"], "F32", "\u0000", "é\U0001f525"]


def _nodes(tree, path=()):
    """Every (path, value) in a JSON tree."""
    yield path, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, (*path, i))


def _set(tree, path, value):
    if not path:
        return value
    node = tree
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return tree


def mutate_tree(tree, rng: random.Random, raws: list[str]):
    """One edit somewhere in a JSON tree: a hostile value, a deletion, a wrapping, a number
    changed, a duplicated sibling, or raw text (deep nesting, huge numbers) via ``raws``."""
    path, node = rng.choice(list(_nodes(tree)))
    kind = rng.randrange(6)
    if kind == 0:
        return _set(tree, path, rng.choice(HOSTILE_JSON))
    if kind == 1 and path:
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        return tree
    if kind == 2:
        return _set(tree, path, [node] if rng.random() < 0.5 else {"k": node})
    if kind == 3 and isinstance(node, (int, float)) and not isinstance(node, bool):
        return _set(tree, path, rng.choice([*INTERESTING, node + 1, -node, node * 1000]))
    if kind == 4 and isinstance(node, (list, dict)) and node:
        if isinstance(node, list):
            node.append(rng.choice(node))
        else:
            key = rng.choice(list(node))
            node[key + rng.choice(["_", "", " "]) if isinstance(key, str) else key] = node[key]
        return tree
    raws.append(rng.choice(RAW_TEXT))
    return _set(tree, path, _RAW.format(len(raws) - 1))


def dumps(tree, raws: list[str]) -> str:
    text = json.dumps(tree, separators=(",", ":"))
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(_RAW.format(i)), raw)
    return text


# ------------------------------------------------------------------ safetensors headers
_DTYPES = ["F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64",
           "BOOL", "F8_E4M3", "C64", "", "f32", None, 4]


def split_safetensors(data: bytes):
    """``(header dict, data section)`` or None when ``data`` is no safetensors file."""
    if len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        return None
    try:
        header = json.loads(data[8:8 + n])
    except ValueError:
        return None
    return (header, data[8 + n:]) if isinstance(header, dict) else None


def join_safetensors(header_text: str, rest: bytes) -> bytes:
    raw = header_text.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw + rest


def _tensor_edit(entry: dict, rng: random.Random, data_size: int) -> None:
    field = rng.choice(["dtype", "shape", "data_offsets", "extra"])
    if field == "dtype":
        entry["dtype"] = rng.choice(_DTYPES)
    elif field == "shape":
        shape = list(entry.get("shape") or [])
        edit = rng.randrange(5)
        if edit == 0 and shape:
            shape[rng.randrange(len(shape))] = rng.choice(INTERESTING)
        elif edit == 1:
            shape.append(rng.choice([0, 1, 2**31, 2**62]))
        elif edit == 2:
            shape = [1] * rng.choice([64, 1000, 100_000])
        elif edit == 3:
            shape = [0, 2**63] if rng.random() < 0.5 else [True, 2.0]
        else:
            shape = rng.choice([None, 5, "3", [[2]], {}])
        entry["shape"] = shape
    elif field == "data_offsets":
        begin, end = (entry.get("data_offsets") or [0, 0])[:2]
        entry["data_offsets"] = rng.choice([
            [end, begin], [begin, rng.choice(INTERESTING)], [rng.choice(INTERESTING), end],
            [begin - 1, end - 1], [data_size, data_size + end - begin], [begin, end, 0],
            [float(begin), end], [begin], "0,0"])
    else:
        entry[rng.choice(["extra", "__metadata__", ""])] = rng.choice(HOSTILE_JSON)


def safetensors_header(data: bytes, rng: random.Random) -> bytes:
    """Edit a safetensors header (dtypes, shapes, offsets, metadata, nesting, numbers,
    tensor count), then rewrite it with the right header length."""
    parsed = split_safetensors(data)
    if parsed is None:
        return data
    header, rest = parsed
    names = [k for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)]
    raws: list[str] = []
    choice = rng.randrange(4)
    if choice == 0 and names:
        _tensor_edit(header[rng.choice(names)], rng, len(rest))
    elif choice == 1 and names:  # many tensors sharing one blob
        entry = header[rng.choice(names)]
        for i in range(rng.choice([2, 1000, 20_000])):
            header[f"copy{i}"] = entry
    elif choice == 2:
        header["__metadata__"] = rng.choice([None, [], "text", {"k": 1}, {"k": {"n": 1}},
                                             {str(i): "v" for i in range(1000)}])
    else:
        header = mutate_tree(header, rng, raws)
    return join_safetensors(dumps(header, raws), rest)


def record_metadata(data: bytes, rng: random.Random) -> bytes:
    """Edit an Ember record's metadata: its version, kind, format, checksum field, and the JSON
    documents held in strings (``meta``, the ``tree`` of non-tensor state)."""
    parsed = split_safetensors(data)
    if parsed is None or not isinstance(parsed[0].get("__metadata__"), dict):
        return data
    header, rest = parsed
    meta = header["__metadata__"]
    key = rng.choice(["version", "kind", "format", "crc32", "meta", "tree", "tree", "tree"])
    if key in ("meta", "tree") and key in meta:
        try:
            inner = json.loads(meta[key])
        except ValueError:
            return data
        raws: list[str] = []
        meta[key] = dumps(mutate_tree(inner, rng, raws), raws)
    else:
        meta[key] = rng.choice({
            "version": ["0", "2", "-1", "abc", "", "1.0", "9" * 5000, " 1", "١"],
            "kind": ["module", "state", "weights", ""],
            "format": ["ember-record", "other", ""],
            "crc32": ["00000000", "zz", "", "1" * 100],
            "tree": ["null", "[]", "{}", '{"__tensor__": "nope"}', "1"],
        }.get(key, [None]))
        if meta[key] is None:
            del meta[key]
    return join_safetensors(json.dumps(header, separators=(",", ":")), rest)


_CRC_FIELD = re.compile(rb'"crc32":"[0-9a-fA-F]{8}"')
_VERSION_FIELD = re.compile(rb'"version":"([0-9]+)"')


def record_checksum(data: bytes) -> bytes:
    """Rewrite a record's ``crc32`` metadata, touching nothing else (``ember.io.records``):
    version >= 2 checksums the whole file with the field's digits as ``00000000``; version 1
    the data section only."""
    if len(data) < 8:
        return data
    n = int.from_bytes(data[:8], "little")
    field = _CRC_FIELD.search(data, 8, 8 + n)
    if n > len(data) - 8 or field is None:
        return data
    version = _VERSION_FIELD.search(data, 8, 8 + n)
    unset = data[:field.start()] + b'"crc32":"00000000"' + data[field.end():]
    covered = unset if version and int(version.group(1)) >= 2 else data[8 + n:]
    crc = b'"crc32":"%08x"' % (zlib.crc32(covered) & 0xFFFFFFFF)
    return data[:field.start()] + crc + data[field.end():]


# ------------------------------------------------------------------ MCU model files
_FLOATS = [0.0, -0.0, 1e-45, 1e38, -1.0, float("inf"), float("-inf"), float("nan")]


def _field_offsets(fmt: str) -> list[tuple[int, str]]:
    """``(offset, struct code)`` of each field of a little-endian struct format."""
    out, off = [], 0
    for count, code in re.findall(r"(\d*)([a-zA-Z])", fmt[1:]):
        n = int(count or 1)
        if code == "s":
            out.append((off, f"{n}s"))
            off += n
            continue
        for _ in range(n):
            out.append((off, code))
            off += struct.calcsize("<" + code)
    return out


@functools.cache
def mcu_layout():
    """The layout, from the writer's own module (``ember.export.format``): a new version of the
    format moves the fields these edits reach without touching them."""
    from ember.export import format as fmt

    header, layer = _field_offsets(fmt.HEADER_FMT), _field_offsets(fmt.LAYER_FMT)
    # header fields: magic, version, flags, n_layers, ..., payload, crc32
    return fmt, header, layer, header[3][0], header[-2][0]


def _mcu_layers(data: bytes) -> int:
    fmt, _, _, n_layers, _ = mcu_layout()
    if len(data) < fmt.HEADER_SIZE or data[:4] != fmt.MAGIC:
        return -1
    return struct.unpack_from("<H", data, n_layers)[0]


def _mcu_table_edit(data: bytes, rng: random.Random, n_layers: int, n_avail: int) -> bytes:
    """Duplicate, drop or swap layer records, keeping the layer count and payload length."""
    fmt, _, _, count_at, payload_at = mcu_layout()
    size = fmt.LAYER_SIZE
    i = fmt.HEADER_SIZE + rng.randrange(n_avail) * size
    j = fmt.HEADER_SIZE + rng.randrange(n_avail) * size
    edit = rng.randrange(3)
    if edit == 0:  # later offsets now point one record early: also a test
        body, count = data[:i] + data[i:i + size] + data[i:], n_layers + 1
    elif edit == 1:
        body, count = data[:i] + data[i + size:], n_layers - 1
    else:
        lo, hi = sorted((i, j))
        if lo == hi:
            return data
        a, b = data[lo:lo + size], data[hi:hi + size]
        body, count = data[:lo] + b + data[lo + size:hi] + a + data[hi + size:], n_layers
    body = body[:count_at] + struct.pack("<H", count % 65536) + body[count_at + 2:]
    return body[:payload_at] + struct.pack("<I", len(body) - fmt.HEADER_SIZE) + \
        body[payload_at + 4:]


def mcu_fields(data: bytes, rng: random.Random) -> bytes:
    """Set one header or layer-table field to an interesting value, or edit the layer table."""
    n_layers = _mcu_layers(data)
    if n_layers < 0:
        return data
    fmt, header, layer, _, _ = mcu_layout()
    table_end = min(len(data), fmt.HEADER_SIZE + n_layers * fmt.LAYER_SIZE)
    n_avail = (table_end - fmt.HEADER_SIZE) // fmt.LAYER_SIZE
    if rng.random() < 0.25 and n_avail:
        return _mcu_table_edit(data, rng, n_layers, n_avail)
    if rng.random() < 0.5 or not n_avail:
        base, (off, code) = 0, rng.choice(header)
    else:
        base = fmt.HEADER_SIZE + rng.randrange(n_avail) * fmt.LAYER_SIZE
        off, code = rng.choice(layer)
    at = base + off
    if code.endswith("s"):
        value = rng.choice([b"EMBN", b"\0\0\0\0", b"MBME"])
    elif code == "f":
        value = struct.pack("<f", rng.choice(_FLOATS))
    else:
        value = pack_int("<" + code, rng.choice(INTERESTING + [1, 2, 3, 4, 9, 10, 255, 256]))
    return data[:at] + value + data[at + len(value):]


def mcu_checksum(data: bytes) -> bytes:
    """Rewrite the header's payload length and CRC-32 (its last two fields;
    ``ember.export.format``: the CRC covers every byte of the file except itself)."""
    if _mcu_layers(data) < 0:
        return data
    fmt, _, _, _, payload_at = mcu_layout()
    data = data[:payload_at] + struct.pack("<I", len(data) - fmt.HEADER_SIZE) + \
        data[payload_at + 4:]
    at = fmt.CRC_OFFSET
    crc = zlib.crc32(data[at + 4:], zlib.crc32(data[:at])) & 0xFFFFFFFF
    return data[:at] + struct.pack("<I", crc) + data[at + 4:]


# ------------------------------------------------------------------ PNG
_PNG = b"\x89PNG\r\n\x1a\n"


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]] | None:
    """``[(type, body), ...]`` of a PNG, or None."""
    if not data.startswith(_PNG):
        return None
    out, i = [], len(_PNG)
    while i + 8 <= len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        out.append((data[i + 4:i + 8], data[i + 8:i + 8 + n]))
        i += 12 + n
    return out


def png_join(chunks: list[tuple[bytes, bytes]]) -> bytes:
    out = bytearray(_PNG)
    for kind, body in chunks:
        out += len(body).to_bytes(4, "big") + kind + body
        out += (zlib.crc32(kind + body) & 0xFFFFFFFF).to_bytes(4, "big")
    return bytes(out)


def png_structure(data: bytes, rng: random.Random) -> bytes:
    """IHDR edits (sizes, depth, colour type, interlace), an IDAT that inflates to a huge
    image, dropped / duplicated / unknown chunks; chunk CRCs stay valid."""
    chunks = png_chunks(data)
    if not chunks:
        return data
    edit = rng.randrange(4)
    if edit == 0 and chunks[0][0] == b"IHDR" and len(chunks[0][1]) == 13:
        body = bytearray(chunks[0][1])
        field = rng.choice([(0, 4), (4, 4), (8, 1), (9, 1), (10, 1), (11, 1), (12, 1)])
        body[field[0]:sum(field)] = pack_int(">I" if field[1] == 4 else ">B",
                                             rng.choice(INTERESTING + [3, 4, 6, 16]))
        chunks[0] = (b"IHDR", bytes(body))
    elif edit == 1:  # a real deflate stream of a large gray image: cheap input, big output
        side = rng.choice([4096, 8000, 20000, 65535])
        header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
        rows = side if side <= 8000 else 2000  # complete up to the pixel limit, then cut short
        chunks = [(b"IHDR", header), (b"IDAT", _zeros_zlib(rows * (side + 1))),
                  (b"IEND", b"")]
    elif edit == 2 and len(chunks) > 1:
        i = rng.randrange(len(chunks))
        if rng.random() < 0.5:
            del chunks[i]
        else:
            chunks.insert(i, chunks[i])
    else:
        chunks.insert(rng.randrange(len(chunks) + 1),
                      (rng.choice([b"zTXt", b"iCCP", b"tEXt", b"abCD", b"PLTE", b"tRNS"]),
                       rng.choice([b"k\0\0" + _zeros_zlib(1 << 22), b"", b"\xff" * 999])))
    return png_join(chunks)


@functools.cache
def _zeros_zlib(n: int) -> bytes:
    return zlib.compress(bytes(n), 9)


def png_checksum(data: bytes) -> bytes:
    """Recompute every chunk's CRC-32 (over type and body), keeping the chunks as they are."""
    chunks = png_chunks(data)
    if chunks is None:
        return data
    end = len(_PNG) + sum(12 + len(b) for _, b in chunks)
    return png_join(chunks) + data[end:] if end <= len(data) else data
