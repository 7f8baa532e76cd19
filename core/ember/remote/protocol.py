"""The Remote wire protocol: binary websocket messages, JSON headers, raw tensor bytes.

Nothing is ever unpickled or evaluated: a message is one kind byte, then JSON (parsed by
:func:`json.loads` and checked field by field by the server) and raw little-endian values.

Client → server:

- ``H`` + JSON ``{"v": 1, "token": "..."}``: the first message of a connection (hello).
- ``B`` + u32 JSON length + JSON list of records + blob bytes: a batch. Records:
  ``["put", id, dtype, shape, offset, nbytes]`` (an upload: bytes ``offset:offset+nbytes`` of
  the blobs), ``["op", name, [out ids], [args]]`` (a registry op; a tensor argument is
  ``{"t": id}``, a dtype ``{"d": "float32"}``, tuples are lists), ``["read", request, id]``,
  ``["free", [ids]]``. Ids are chosen by the client, so ops need no round trip (pipelining).

Server → client:

- ``W`` + JSON: the welcome after a good hello (backend name, caps, limits, ops it lacks).
- ``R`` + u32 request + u32 JSON length + JSON header + raw values: the answer to a read;
  the header is ``{"shape": [...], "dtype": "float32"}`` or ``{"error": [type name, message]}``.

>>> frame = encode_batch([["read", 1, 7]], [])
>>> records, blobs = decode_batch(frame)
>>> records, bytes(blobs)
([['read', 1, 7]], b'')
"""

from __future__ import annotations

import json
import numbers
import struct

from .. import dtype as dt
from .errors import ProtocolError

VERSION = 1
HELLO, WELCOME, BATCH, REPLY = 0x48, 0x57, 0x42, 0x52  # b"H", b"W", b"B", b"R"
_U32 = struct.Struct("<I")
_REPLY = struct.Struct("<BII")


def _default(o):
    """JSON for what ``json`` doesn't know: tensor handles, dtypes, numpy scalars."""
    rid = getattr(o, "remote_id", None)
    if rid is not None:
        return {"t": rid}
    if isinstance(o, dt.DType):
        return {"d": o.name}
    if isinstance(o, numbers.Integral):
        return int(o)
    if isinstance(o, numbers.Real):
        return float(o)
    raise TypeError(f"Remote: can't send a {type(o).__name__} argument ({o!r})")


_ENCODER = json.JSONEncoder(default=_default, separators=(",", ":"))


def dumps(obj) -> bytes:
    """``obj`` as compact JSON (handles and dtypes as ``{"t": id}`` / ``{"d": name}``)."""
    return _ENCODER.encode(obj).encode()


def _json(body, what: str):
    try:
        return json.loads(bytes(body))
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"{what}: not valid JSON ({e})") from None


def encode_hello(token: str) -> bytes:
    return bytes([HELLO]) + dumps({"v": VERSION, "token": token})


def decode_hello(frame) -> str:
    """The token of a hello message; ProtocolError for anything else."""
    if not isinstance(frame, (bytes, bytearray)) or frame[:1] != bytes([HELLO]):
        raise ProtocolError("the first message must be a binary hello")
    hello = _json(memoryview(frame)[1:], "hello")
    if not isinstance(hello, dict) or hello.get("v") != VERSION:
        raise ProtocolError(f"hello: expected protocol version {VERSION}")
    token = hello.get("token")
    if not isinstance(token, str):
        raise ProtocolError("hello: no token")
    return token


def encode_welcome(info: dict) -> bytes:
    return bytes([WELCOME]) + dumps(info)


def decode_welcome(frame) -> dict:
    if not isinstance(frame, (bytes, bytearray)) or frame[:1] != bytes([WELCOME]):
        raise ProtocolError("expected the server's welcome")
    info = _json(memoryview(frame)[1:], "welcome")
    if not isinstance(info, dict):
        raise ProtocolError("welcome: not an object")
    return info


def encode_batch(records: list, blobs: list) -> bytes:
    """A batch of records (Python lists, handles and dtypes encoded by :func:`dumps`)."""
    return b"".join(batch_parts(records, blobs))


def batch_parts(records: list, blobs: list) -> list:
    """:func:`encode_batch`'s message in parts (its head, then the blobs, not copied)."""
    body = dumps(records)
    return [bytes([BATCH]) + _U32.pack(len(body)) + body, *blobs]


def join_batch(encoded: list[bytes], blobs: list) -> bytes:
    """A batch from records already encoded one by one with :func:`dumps`."""
    body = b"[" + b",".join(encoded) + b"]"
    return b"".join([bytes([BATCH]), _U32.pack(len(body)), body, *blobs])


def decode_batch(frame) -> tuple[list, memoryview]:
    """``(records, blobs)`` of a batch; ProtocolError for a malformed one (records are only
    checked to be a JSON list here: the server checks each)."""
    if not isinstance(frame, (bytes, bytearray)):
        raise ProtocolError("text messages are not part of the protocol")
    view = memoryview(frame)
    if len(view) < 5 or view[0] != BATCH:
        raise ProtocolError("expected a batch message")
    (n,) = _U32.unpack_from(view, 1)
    if 5 + n > len(view):
        raise ProtocolError(f"batch: JSON length {n} runs past the end of the message")
    records = _json(view[5:5 + n], "batch")
    if not isinstance(records, list):
        raise ProtocolError("batch: records must be a JSON list")
    return records, view[5 + n:]


def encode_reply(request: int, header: dict, payload=b"") -> bytes:
    body = dumps(header)
    return b"".join([_REPLY.pack(REPLY, request, len(body)), body, payload])


def decode_reply(frame) -> tuple[int, dict, memoryview]:
    view = memoryview(frame)
    if len(view) < _REPLY.size or view[0] != REPLY:
        raise ProtocolError("expected a read reply from the server")
    _, request, n = _REPLY.unpack_from(view)
    header = _json(view[_REPLY.size:_REPLY.size + n], "reply")
    if not isinstance(header, dict):
        raise ProtocolError("reply: header must be an object")
    return request, header, view[_REPLY.size + n:]
