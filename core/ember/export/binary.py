"""Encode a :class:`Program` as a model file and decode one back (see ``format`` for the layout)."""

from __future__ import annotations

import os
import struct
import zlib

from ..errors import RecordError
from ..store import atomic_write
from . import format as fmt
from .ir import Layer, Program, _np


def _act_size(shape) -> int:
    return shape[0] * shape[1] * shape[2]


def encode(program: Program) -> bytes:
    """The model file's bytes for ``program`` (int8 weights where the program has them)."""
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
        wdtype = fmt.F32
        if layer.weighted:
            if layer.w_q is not None:
                raw = np.ascontiguousarray(layer.w_q, dtype="<i1").tobytes()
                wdtype = fmt.INT8
                max_qin = max(max_qin, _act_size(layer.in_shape))
            else:
                raw = np.ascontiguousarray(layer.weight, dtype="<f4").tobytes()
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
            layer.kh, layer.kw, layer.sh, layer.sw, layer.ph, layer.pw, layer.groups, layer.slot,
            woff, wlen, boff, soff, float(layer.in_scale),
        )
    payload = bytes(table) + bytes(blobs)
    header = struct.pack(
        fmt.HEADER_FMT, fmt.MAGIC, fmt.FORMAT_VERSION,
        fmt.FLAG_INT8 if program.quantized else 0, len(program.layers), program.n_slots,
        *program.input_shape, 0, max_act, max_qin, program.in_mul, program.in_add,
        len(payload), zlib.crc32(payload) & 0xFFFFFFFF,
    )
    return header + payload


def save(program: Program, path: str | os.PathLike) -> int:
    """Write ``program`` to ``path`` atomically; returns the file size in bytes."""
    data = encode(program)
    with atomic_write(path) as f:
        f.write(data)
    return len(data)


def decode(data: bytes, *, source: str = "model file") -> Program:
    """Parse and verify a model file's bytes (magic, version, length, CRC32, layer table).

    >>> decode(b"nope")
    Traceback (most recent call last):
    ...
    ember.errors.RecordError: model file: 4 bytes is shorter than the 44-byte header
    """
    np = _np()
    if len(data) < fmt.HEADER_SIZE:
        raise RecordError(f"{source}: {len(data)} bytes is shorter than the "
                          f"{fmt.HEADER_SIZE}-byte header")
    (magic, version, _flags, n_layers, n_slots, c, h, w, _, _max_act, _max_qin, in_mul,
     in_add, plen, crc) = struct.unpack_from(fmt.HEADER_FMT, data)
    if magic != fmt.MAGIC:
        raise RecordError(f"{source}: bad magic {magic!r}, expected {fmt.MAGIC!r}: not an ember "
                          "micro model")
    if version != fmt.FORMAT_VERSION:
        raise RecordError(f"{source}: format version {version}, this reader knows "
                          f"{fmt.FORMAT_VERSION}")
    if len(data) != fmt.HEADER_SIZE + plen:
        raise RecordError(f"{source}: truncated or padded: header says {plen} payload bytes, "
                          f"file has {len(data) - fmt.HEADER_SIZE}")
    if zlib.crc32(data[fmt.HEADER_SIZE:]) & 0xFFFFFFFF != crc:
        raise RecordError(f"{source}: CRC32 mismatch: the file is corrupt")
    layers = []
    for i in range(n_layers):
        rec = struct.unpack_from(fmt.LAYER_FMT, data, fmt.HEADER_SIZE + i * fmt.LAYER_SIZE)
        op, act, wdtype, lflags = rec[:4]
        if op not in fmt.OP_NAMES or act not in fmt.ACT_NAMES:
            raise RecordError(f"{source}: layer {i}: unknown opcode {op} or activation {act}")
        layer = Layer(op, tuple(rec[4:7]), tuple(rec[7:10]), f"layer{i}", act=act,
                      kh=rec[10], kw=rec[11], sh=rec[12], sw=rec[13], ph=rec[14], pw=rec[15],
                      groups=rec[16], slot=rec[17], count_pad=bool(lflags & fmt.LFLAG_COUNT_PAD),
                      extra_h=int(bool(lflags & fmt.LFLAG_PAD_BOTTOM)),
                      extra_w=int(bool(lflags & fmt.LFLAG_PAD_RIGHT)), in_scale=float(rec[22]))
        woff, wlen, boff, soff = rec[18:22]
        if layer.weighted:
            cout = layer.out_shape[0]
            if layer.op == fmt.LINEAR:
                wshape = (cout, _act_size(layer.in_shape))
            else:
                wshape = (cout, layer.in_shape[0] // layer.groups, layer.kh, layer.kw)
            dt = "<i1" if wdtype == fmt.INT8 else "<f4"
            count = int(np.prod(wshape))
            if wlen != count * np.dtype(dt).itemsize or woff + wlen > len(data):
                raise RecordError(f"{source}: layer {i}: weight block ({woff}, {wlen}) doesn't "
                                  f"hold {wshape} {dt}")
            arr = np.frombuffer(data, dt, count, woff).reshape(wshape)
            if boff:
                layer.bias = np.frombuffer(data, "<f4", cout, boff).astype(np.float64)
            if wdtype == fmt.INT8:
                layer.w_q = arr.copy()
                layer.w_scale = np.frombuffer(data, "<f4", cout, soff).astype(np.float64)
                layer.weight = layer.w_q * layer.w_scale.reshape((-1,) + (1,) * (arr.ndim - 1))
            else:
                layer.weight = arr.astype(np.float64)
        layers.append(layer)
    return Program(layers, (c, h, w), n_slots, float(in_mul), float(in_add))


def load(path: str | os.PathLike) -> Program:
    """Read and verify a model file written by :func:`ember.export.export`."""
    with open(path, "rb") as f:
        return decode(f.read(), source=os.fspath(path))
