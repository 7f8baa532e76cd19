"""Remote frames (ember.remote.protocol batches): seeds written by the real client, and a
structured mutation of their JSON records.

The seeds are the bytes ``ember.Remote`` sends for small programs (captured by a transport
that records instead of sending; each program is one frame), plus a read, which the client
sends only with a wait.
"""

from __future__ import annotations

import json
import random
import struct

from .formats import dumps, mutate_tree


class _Recorder:
    """A Remote transport that keeps what would be sent."""

    def __init__(self):
        self.frames: list[bytes] = []

    def send(self, frame: bytes) -> None:
        self.frames.append(frame)

    def close(self) -> None:
        pass


def remote_frame_seeds() -> dict[str, bytes]:
    import numpy as np

    import ember
    from ember.remote import Remote, Server, protocol

    welcome = Server("numpy", token="seed")._welcome  # not started: its welcome message
    rec = _Recorder()
    r = Remote("ws://seed", transport=(rec, welcome))
    x = ember.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), backend=r)
    i = ember.tensor([2, 0], dtype=ember.int64, backend=r)
    y = ((x @ x.T).relu().softmax(dim=1).sum(dim=0), i * 3 + 1)
    z = ember.cat([x, x * 2], dim=0).to(ember.int32).argmax(dim=1)
    v, idx = x.sort(dim=1, descending=True)
    del y, z, v, idx
    import gc

    gc.collect()
    r.sync()  # one frame: the uploads, the ops, then the frees of what was dropped
    seeds = {"program": rec.frames[-1]}
    x2 = ember.tensor([[1.0, -2.0]], backend=r)
    w = ember.tensor(np.ones((2, 3), np.float64), backend=r)
    out = ember.where(x2 > 0, x2, x2 * 0.1).to(ember.float64) @ w
    r.sync()
    seeds["where_matmul"] = rec.frames[-1]
    del out
    seeds["put_read"] = protocol.encode_batch(
        [["put", 1, "int64", [2], 0, 16], ["op", "int_add", [2], [{"t": 1}, {"t": 1}]],
         ["read", 3, 2], ["free", [1]]], [np.array([5, -7], np.int64).tobytes()])
    return seeds


def remote_records(data: bytes, rng: random.Random) -> bytes:
    """One edit of a batch's JSON records (the length field kept right, the blobs kept)."""
    if len(data) < 5 or data[0] != 0x42:
        return data
    (n,) = struct.unpack_from("<I", data, 1)
    try:
        tree = json.loads(data[5:5 + n])
    except ValueError:
        return data
    raws: list[str] = []
    body = dumps(mutate_tree(tree, rng, raws), raws).encode()
    return b"B" + struct.pack("<I", len(body)) + body + data[5 + n:]
