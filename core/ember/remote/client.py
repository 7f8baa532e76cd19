"""``Remote(url, token=...)``: a backend whose tensors live on a Remote server.

Generic over the op registry: each op's result gets a client-chosen id and its shape and dtype
from the op's shape rule (so ``shape``/``dtype`` need no round trip); the op is encoded at
once and queued. Queued ops go out in one batch when ``batch_ops`` are queued, an upload is
large, or a value is read: the client never waits per op, only for reads. A tensor that is
garbage-collected is freed on the server with the next batch.

An op that fails on the server fails lazily: a read of its result (or of anything computed
from it) raises the server's error as its original Ember type.
"""

from __future__ import annotations

import itertools
import os
import threading

from .. import dtype as dt
from .. import errors as ember_errors
from ..contract import Backend, Caps, registry
from ..errors import UnsupportedOpError
from ..tensordata import TensorData
from . import errors, protocol
from .errors import AuthError, LimitError, RemoteError, RemoteOpError
from .limits import TOKEN_ENV

_BIG_UPLOAD = 1 << 20  # an upload this large goes out without waiting for more ops


class RemotePrim:
    """A Remote primitive: the server-side id, shape and dtype. Dropping it frees it there.

    >>> import ember
    >>> from ember.remote import Remote, Server
    >>> server = Server("numpy", port=0, token="example-token").start()
    >>> r = Remote(server.url, token="example-token")
    >>> prim = ember.zeros(2, 3, backend=r)._prim
    >>> type(prim).__name__, prim.shape, prim.dtype
    ('RemotePrim', (2, 3), ember.float32)
    >>> r.close(); server.stop()
    """

    __slots__ = ("__weakref__", "dtype", "owner", "remote_id", "shape")

    def __init__(self, remote_id: int, shape: tuple, dtype: dt.DType, owner: Remote):
        self.remote_id, self.shape, self.dtype, self.owner = remote_id, shape, dtype, owner

    def __del__(self):
        owner = self.owner
        if owner is not None:
            owner._freed.append(self.remote_id)

    def __repr__(self) -> str:
        return f"RemotePrim(#{self.remote_id}, shape={self.shape}, dtype={self.dtype.name})"


class Remote(Backend):
    """A backend served by ``ember serve`` at ``url`` (``ws://host:port`` or ``wss://`` with
    ``ssl``, an :class:`ssl.SSLContext`). ``token`` defaults to ``$EMBER_REMOTE_TOKEN``;
    ``timeout`` bounds every wait for the server (seconds); ``batch_ops`` queued ops go out
    together. ``transport``: an already connected transport and the welcome message it
    received, ``(transport, welcome)`` (what :func:`ember.remote.browser.connect` passes).

    >>> import ember
    >>> from ember.remote import Server
    >>> server = Server("numpy", port=0, token="t0ken").start()
    >>> remote = ember.Remote(server.url, token="t0ken")
    >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], backend=remote)
    >>> y = (x @ x).relu().sum(dim=1)          # queued, not yet sent
    >>> y.shape, y.tolist()                    # shape: known locally; tolist: one round trip
    ((2,), [17.0, 37.0])
    >>> remote.close(); server.stop()
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 60.0, ssl=None,
                 batch_ops: int = 1024, transport=None):
        token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        if transport is None:
            from .transport import WebsocketTransport

            transport = WebsocketTransport(url, ssl, timeout)
            transport.send(protocol.encode_hello(token))
            welcome = transport.recv(timeout)
        else:  # a connected transport and the welcome it got (the browser's, say)
            transport, welcome = transport
        self.url, self.timeout, self.batch_ops = url, timeout, batch_ops
        self._transport = transport
        try:
            info = protocol.decode_welcome(welcome)
        except errors.ProtocolError as e:
            raise AuthError(f"{url}: no welcome from the server ({e})") from None
        self.server_backend = info["backend"]
        self.name = f"remote-{info['backend']}"
        self.device = f"remote:{url}"
        self.caps = Caps(dtypes=frozenset(map(dt.as_dtype, info["dtypes"])),
                         narrow=frozenset(map(dt.as_dtype, info["narrow"])))
        self.limits = info["limits"]
        self._missing = frozenset(info["missing"])
        self._ids = itertools.count(1)
        self._requests = itertools.count(1)
        self._records: list[bytes] = []
        self._blobs: list[bytes] = []
        self._blob_bytes = 0
        self._freed: list[int] = []
        self._lock = threading.RLock()
        self.batches = 0  # batches sent (for tests and benchmarks)

    # ------------------------------------------------------------------ the queue
    def _new(self, spec) -> RemotePrim:
        dtype = spec.dtype if isinstance(spec.dtype, dt.DType) else dt.as_dtype(spec.dtype)
        if dtype not in self.caps.dtypes:
            self.caps.check_dtype(dtype, "op result", self.name)
        return RemotePrim(next(self._ids), tuple(spec.shape), dtype, self)

    def _push(self, record: bytes) -> None:
        with self._lock:  # sync swaps the queue: an append can't slip between
            self._records.append(record)
            if len(self._records) >= self.batch_ops:
                self.sync()

    def sync(self) -> None:
        """Send the queued ops now (reads do this themselves)."""
        with self._lock:
            freed, self._freed = self._freed, []
            if freed:
                self._records.append(protocol.dumps(["free", freed]))
            if not self._records:
                return
            frame = protocol.join_batch(self._records, self._blobs)
            self._records, self._blobs, self._blob_bytes = [], [], 0
            if len(frame) > self.limits["max_frame_bytes"]:
                raise LimitError(f"{self.name}: a batch of {len(frame)} bytes passes the "
                                 f"server's max_frame_bytes={self.limits['max_frame_bytes']}; "
                                 "lower batch_ops or upload smaller tensors")
            self._transport.send(frame)
            self.batches += 1

    def close(self) -> None:
        """Close the connection (the server frees this client's tensors)."""
        self._transport.close()

    # ------------------------------------------------------------------ data
    def from_data(self, data: TensorData) -> RemotePrim:
        self.caps.check_dtype(data.dtype, "from_data", self.name)
        blob = bytes(data.buffer)
        n = len(blob)
        limit = min(self.limits["max_tensor_bytes"], self.limits["max_frame_bytes"] - 4096)
        if n > limit:
            raise LimitError(f"from_data: a tensor of {n} bytes; the server at {self.url} "
                             f"takes at most {limit} per tensor (max_tensor_bytes / "
                             "max_frame_bytes)")
        with self._lock:
            if self._blob_bytes + n > self.limits["max_frame_bytes"] // 2:
                self.sync()
            out = RemotePrim(next(self._ids), tuple(data.shape), data.dtype, self)
            self._records.append(protocol.dumps(
                ["put", out.remote_id, data.dtype.name, out.shape, self._blob_bytes, n]))
            self._blobs.append(blob)
            self._blob_bytes += n
            if self._blob_bytes >= _BIG_UPLOAD or len(self._records) >= self.batch_ops:
                self.sync()
        return out

    def _read_request(self, x: RemotePrim) -> int:
        request = next(self._requests) & 0xFFFFFFFF
        self._records.append(protocol.dumps(["read", request, x.remote_id]))
        self.sync()
        return request

    def to_data(self, x: RemotePrim) -> TensorData:
        with self._lock:
            request = self._read_request(x)
            return _reply(self._transport.recv(self.timeout), request, self.url)

    async def to_data_async(self, x: RemotePrim) -> TensorData:
        recv_async = getattr(self._transport, "recv_async", None)
        if recv_async is None:
            return self.to_data(x)
        request = self._read_request(x)
        return _reply(await recv_async(self.timeout), request, self.url)

    def shape(self, x: RemotePrim):
        return x.shape

    def dtype(self, x: RemotePrim):
        return x.dtype


def _reply(frame, request: int, url: str) -> TensorData:
    try:
        got, header, payload = protocol.decode_reply(frame)
    except errors.ProtocolError as e:
        raise RemoteError(f"{url}: a malformed reply ({e})") from None
    if got != request:
        raise RemoteError(f"{url}: the reply to request {got} came for request {request}")
    error = header.get("error")
    if error is not None:
        raise _error(error)
    data = TensorData(bytes(payload), header["shape"], dt.as_dtype(header["dtype"]))
    return data


def _error(error) -> Exception:
    """The server's error as its Ember (or builtin) type; RemoteOpError for other types."""
    name, message = (str(e) for e in error)
    cls = _ERRORS.get(name)
    return cls(message) if cls is not None else RemoteOpError(f"{name} on the server: {message}")


_ERRORS = {
    **{c.__name__: c for c in vars(ember_errors).values()
       if isinstance(c, type) and issubclass(c, ember_errors.EmberError)},
    **{c.__name__: c for c in (LimitError, UnsupportedOpError)},
    **{c.__name__: c for c in (TypeError, ValueError, IndexError, ZeroDivisionError,
                               OverflowError, NotImplementedError)},
}


def _method(op: registry.Op):
    """Queue ``op``: its results get ids and specs here, the server runs it later."""
    name, infer, nargs = op.name, op.infer, len(op.args)
    multi = op.outputs > 1
    if op.args == op.tensors and op.outputs == 1 and "xs" not in op.args:
        return _tensors_only(op)

    def method(self, *args, **kwargs):
        if kwargs or len(args) != nargs:
            args = op.bind(args, kwargs)
        if name in self._missing:
            raise UnsupportedOpError(f"{name}: the server's backend {self.server_backend} "
                                     "does not implement this primitive")
        spec = infer(*args)
        if multi:
            out = tuple(self._new(s) for s in spec)
            ids = [o.remote_id for o in out]
        else:
            out = self._new(spec)
            ids = [out.remote_id]
        self._push(protocol.dumps(["op", name, ids, args]))
        return out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _tensors_only(op: registry.Op):
    """The hot path (elementwise ops, matmul, where): tensors only, one result; the record
    is formatted directly (what :func:`protocol.dumps` would write)."""
    name, infer = op.name, op.infer
    head = b'["op","' + name.encode() + b'",[%d],['

    def method(self, *args):
        if name in self._missing:
            raise UnsupportedOpError(f"{name}: the server's backend {self.server_backend} "
                                     "does not implement this primitive")
        out = self._new(infer(*args))
        self._push(head % out.remote_id
                   + b",".join([b'{"t":%d}' % a.remote_id for a in args]) + b"]]")
        return out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = op.doc
    return method


def _install() -> None:
    own = set(vars(Remote))
    for op in registry.ops():
        if op.name not in own:
            setattr(Remote, op.name, _method(op))


_install()
