"""Encode a :class:`Program` as a model file and decode one back (see ``format`` for the layout)."""

from __future__ import annotations

import os
import struct
import zlib

from .. import limits
from ..errors import RecordError, malformed_file
from ..io import atomic_write
from . import format as fmt
from .ir import Layer, Program, _np, dequantize


def _act_size(shape) -> int:
    return shape[0] * shape[1] * shape[2]


def _crc(data) -> int:
    """The file's CRC-32: every byte except the checksum field itself."""
    head = zlib.crc32(data[: fmt.CRC_OFFSET])
    return zlib.crc32(memoryview(data)[fmt.HEADER_SIZE :], head) & 0xFFFFFFFF


def _with_crc(data: bytes) -> bytes:
    return data[: fmt.CRC_OFFSET] + struct.pack("<I", _crc(data)) + data[fmt.HEADER_SIZE :]


def encode(program: Program) -> bytes:
    """The model file's bytes for ``program`` (int8 weights where the program has them).

    >>> from ember import nn
    >>> from ember.export import decode, lower
    >>> program = lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2))
    >>> data = encode(program)
    >>> data[:4], decode(data).output_shape
    (b'EMBM', (2, 1, 1))
    """
    np = _np()
    blobs = bytearray()
    base = fmt.HEADER_SIZE + fmt.LAYER_SIZE * len(program.layers)

    def put(raw: bytes) -> int:
        while len(blobs) % 4:
            blobs.append(0)
        off = base + len(blobs)
        blobs.extend(raw)
        return off

    table = bytearray()
    max_act = _act_size(program.input_shape)
    max_qin = 0
    for layer in program.layers:
        max_act = max(max_act, _act_size(layer.in_shape), _act_size(layer.out_shape))
        woff = wlen = boff = soff = 0
        wdtype = layer.wdtype if layer.weighted else fmt.F32
        slot = layer.slot
        if layer.weighted:
            if wdtype == fmt.INT8:
                raw = np.ascontiguousarray(layer.w_q, dtype="<i1").tobytes()
                max_qin = max(max_qin, _act_size(layer.in_shape))
            elif wdtype == fmt.F32:
                raw = np.ascontiguousarray(layer.weight, dtype="<f4").tobytes()
            else:
                raw, slot = _weight_only(np, layer)
            woff, wlen = put(raw), len(raw)
            if layer.bias is not None:
                boff = put(np.asarray(layer.bias, dtype="<f4").tobytes())
            if layer.w_q is not None:
                soff = put(np.asarray(layer.w_scale, dtype="<f4").tobytes())
        table += struct.pack(
            fmt.LAYER_FMT, layer.op, layer.act, wdtype,
            (fmt.LFLAG_COUNT_PAD if layer.count_pad else 0)
            | (fmt.LFLAG_PAD_BOTTOM if layer.extra_h else 0)
            | (fmt.LFLAG_PAD_RIGHT if layer.extra_w else 0),
            *layer.in_shape, *layer.out_shape,
            layer.kh, layer.kw, layer.sh, layer.sw, layer.ph, layer.pw, layer.groups, slot,
            woff, wlen, boff, soff, float(layer.in_scale),
        )
    payload = bytes(table) + bytes(blobs)
    # files without weight-only layers stay version 2: older readers still run them
    version = fmt.BLOCK_VERSION if program.weight_only else fmt.MIN_VERSION
    header = struct.pack(
        fmt.HEADER_FMT, fmt.MAGIC, version,
        fmt.FLAG_INT8 if program.quantized else 0, len(program.layers), program.n_slots,
        *program.input_shape, 0, max_act, max_qin, _act_size(program.output_shape),
        program.in_mul, program.in_add, len(payload), 0,
    )
    return _with_crc(header + payload)


def _weight_only(np, layer: Layer) -> tuple[bytes, int]:
    """A weight-only layer's code block and the record's block field (0: whole rows)."""
    codes = np.asarray(layer.w_q, dtype=np.int16).reshape(len(layer.w_q), -1)
    rows, row_len = codes.shape
    block = 0 if layer.w_block >= row_len else layer.w_block
    if layer.w_bits == 8:
        return np.ascontiguousarray(codes, dtype="<i1").tobytes(), block
    # int4: code + 8 in a nibble, low first, each row starting on a byte (odd rows padded
    # with code 0, nibble 8)
    nib = np.full((rows, row_len + row_len % 2), 8, dtype=np.uint8)
    nib[:, :row_len] = codes + 8
    return (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8).tobytes(), block


def save(program: Program, path: str | os.PathLike) -> int:
    """Write ``program`` to ``path`` atomically; returns the file size in bytes.

    >>> import os, tempfile
    >>> from ember import nn
    >>> from ember.export import lower
    >>> program = lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2))
    >>> path = os.path.join(tempfile.mkdtemp(), "m.emb")
    >>> save(program, path) == os.path.getsize(path)
    True
    """
    data = encode(program)
    with atomic_write(path) as f:
        f.write(data)
    return len(data)


def decode(data: bytes, *, source: str = "model file") -> Program:
    """Parse and verify a model file's bytes: magic, version, length, the CRC-32 over the whole
    file, then every rule of :class:`ember.export.format.Checker` (geometry, shapes layer to
    layer, weight blocks, the header's sizes against what the layers need) and
    ``ember.limits`` ``max_activation_elements``. Any malformed file raises
    :class:`~ember.errors.RecordError` naming the problem.

    >>> decode(b"nope")
    Traceback (most recent call last):
    ...
    ember.errors.RecordError: model file: 4 bytes is shorter than the 48-byte header
    """
    # a rule Checker misses must still surface as the reader's error, never a crash
    with malformed_file(RecordError, source):
        return _decode(data, source)


def _decode(data: bytes, source: str) -> Program:
    np = _np()

    def fail(message: str) -> RecordError:
        return RecordError(f"{source}: {message}")

    if len(data) < fmt.HEADER_SIZE:
        raise fail(f"{len(data)} bytes is shorter than the {fmt.HEADER_SIZE}-byte header")
    header = struct.unpack_from(fmt.HEADER_FMT, data)
    fmt.check_envelope(header, len(data), fail)
    if _crc(data) != header[-1]:
        raise fail("CRC32 mismatch: the file is corrupt")
    check = fmt.Checker(header, fail)
    (_, _, _, n_layers, n_slots, c, h, w, _, _, _, _, in_mul, in_add, _, _) = header
    layers = []
    for i in range(n_layers):
        rec = struct.unpack_from(fmt.LAYER_FMT, data, fmt.HEADER_SIZE + i * fmt.LAYER_SIZE)
        rows, row_len = check.layer(i, rec)
        op, act, wdtype, lflags = rec[:4]
        layer = Layer(op, tuple(rec[4:7]), tuple(rec[7:10]), f"layer{i}", act=act,
                      kh=rec[10], kw=rec[11], sh=rec[12], sw=rec[13], ph=rec[14], pw=rec[15],
                      groups=rec[16], slot=rec[17], count_pad=bool(lflags & fmt.LFLAG_COUNT_PAD),
                      extra_h=int(bool(lflags & fmt.LFLAG_PAD_BOTTOM)),
                      extra_w=int(bool(lflags & fmt.LFLAG_PAD_RIGHT)), in_scale=float(rec[22]))
        if layer.weighted:
            with np.errstate(invalid="ignore"):  # signalling-NaN floats are data, not an error
                if wdtype in (fmt.INT8_BLOCK, fmt.INT4_BLOCK):
                    _read_weight_only(np, data, layer, rec, rows, row_len)
                else:
                    _read_weights(np, data, layer, rec[18:22], rows, row_len, wdtype)
        layers.append(layer)
    check.finish()
    # after finish(): a max_act the layers don't need is reported as that, not as too large
    limits.check(RecordError, f"{source}: max_act", check.max_act, "max_activation_elements")
    return Program(layers, (c, h, w), n_slots, float(in_mul), float(in_add))


def _wshape(layer: Layer, rows: int, row_len: int) -> tuple[int, ...]:
    if layer.op == fmt.LINEAR:
        return (rows, row_len)
    return (rows, layer.in_shape[0] // layer.groups, layer.kh, layer.kw)


def _read_weights(np, data, layer: Layer, offsets, rows: int, row_len: int, wdtype: int):
    """Fill ``layer``'s arrays from blocks the Checker has placed inside the file."""
    woff, _, boff, soff = offsets
    arr = np.frombuffer(data, "<i1" if wdtype == fmt.INT8 else "<f4", rows * row_len, woff)
    arr = arr.reshape(_wshape(layer, rows, row_len))
    _read_bias(np, data, layer, boff, rows)
    if wdtype == fmt.INT8:
        layer.w_q = arr.copy()
        layer.w_scale = np.frombuffer(data, "<f4", rows, soff).astype(np.float64)
        layer.weight = layer.w_q * layer.w_scale.reshape((-1,) + (1,) * (arr.ndim - 1))
    else:
        layer.weight = arr.astype(np.float64)


def _read_bias(np, data, layer: Layer, boff: int, rows: int) -> None:
    if boff:
        layer.bias = np.frombuffer(data, "<f4", rows, boff).astype(np.float64)


def _read_weight_only(np, data, layer: Layer, rec, rows: int, row_len: int) -> None:
    """Codes and block scales of a weight-only layer (placed by the Checker)."""
    wdtype, block, (woff, wlen, boff, soff) = rec[2], rec[17], rec[18:22]
    nb = fmt.n_blocks(row_len, block)
    raw = np.frombuffer(data, np.uint8, wlen, woff).reshape(rows, -1)
    if wdtype == fmt.INT4_BLOCK:
        codes = np.stack([raw & 15, raw >> 4], axis=2).reshape(rows, -1)[:, :row_len]
        codes = codes.astype(np.int16) - 8
    else:
        codes = raw.view(np.int8)
    layer.w_bits = 4 if wdtype == fmt.INT4_BLOCK else 8
    layer.w_block = row_len if nb == 1 else block
    layer.w_q = codes.astype(np.int8).reshape(_wshape(layer, rows, row_len))
    layer.w_scale = np.frombuffer(data, "<f4", rows * nb, soff).astype(np.float64)
    layer.w_scale = layer.w_scale.reshape(rows, nb)
    layer.weight = dequantize(layer.w_q, layer.w_scale, layer.w_block)
    _read_bias(np, data, layer, boff, rows)


def load(path: str | os.PathLike) -> Program:
    """Read and verify a model file written by :func:`ember.export.export`.

    >>> import os, tempfile
    >>> from ember import nn
    >>> from ember.export import lower
    >>> program = lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2))
    >>> path = os.path.join(tempfile.mkdtemp(), "m.emb")
    >>> _ = save(program, path)
    >>> [layer.describe() for layer in load(path).layers]
    ['linear (4, 1, 1)->(2, 1, 1)']
    """
    with open(path, "rb") as f:
        return decode(f.read(), source=os.fspath(path))
