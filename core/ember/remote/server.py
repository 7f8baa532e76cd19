"""The Remote server: one backend exposed over websockets (``ember serve``).

Each connection must authenticate first: its hello's token is compared with the server's in
constant time (:func:`hmac.compare_digest` of SHA-256 digests) before anything else is read;
a wrong, missing or late token closes the connection (code 1008). Before that, a connection
may send one message of at most ``max_hello_bytes`` (a longer one closes it, 1009) within
``auth_timeout`` seconds, and at most ``max_pending`` connections wait to authenticate (a
newcomer closes the one that has waited longest, 1013, so a flood of silent connections can't
keep out clients that authenticate in milliseconds): unauthenticated clients cost the server
little memory and no time. An authenticated connection gets a
:class:`~ember.remote.session.Session` of its own and frames up to ``max_frame_bytes``; a frame that breaks the protocol closes that
connection only (1008); when a connection ends, its tensors are freed. Ops run on worker
threads (:class:`~ember.remote.scheduler.Scheduler`), one record at a time per connection,
the connection that has used the least time first: one thread for a backend that isn't
thread-safe (wgpu), so it serves every connection; a thread-safe one (numpy) gets a second
thread for small ops, so a small read never waits for another client's large matmul; on a CPU
backend the large ones run in a worker process at a low priority
(:mod:`~ember.remote.opworker`), handed there by a thread of their own, and two threads run
the small ones. One
client's heavy batch doesn't starve the others, and the event loop keeps answering
handshakes and pings while an op runs. TLS: pass an :class:`ssl.SSLContext`.

>>> from ember.remote import Remote, Server
>>> server = Server("numpy", port=0, token="s3cret").start()   # a thread; port 0: any free
>>> remote = Remote(server.url, token="s3cret")
>>> import ember
>>> (ember.tensor([1.0, 2.0], backend=remote) * 3).tolist()
[3.0, 6.0]
>>> remote.close(); server.stop()
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import threading

from ..errors import EmberError
from . import protocol
from .errors import ProtocolError
from .limits import TOKEN_ENV, ServerLimits
from .opworker import OpWorker
from .scheduler import Scheduler
from .session import Session

log = logging.getLogger("ember.remote")


class Server:
    """A websockets server exposing ``backend`` (a name or instance) on ``host:port``.

    ``token``: the shared secret clients send (default: ``$EMBER_REMOTE_TOKEN``; one is
    required). ``host`` defaults to 127.0.0.1: serving other machines is a deliberate choice
    (``host="0.0.0.0"``, and TLS through ``ssl`` when the network isn't yours).

    >>> import ember
    >>> from ember.remote import Remote
    >>> server = Server("numpy", port=0, token="example-token").start()  # port 0: any free port
    >>> server.url.startswith("ws://127.0.0.1:")
    True
    >>> r = Remote(server.url, token="example-token")
    >>> (ember.tensor([1.0, 2.0], backend=r) * 2).tolist()
    [2.0, 4.0]
    >>> server.stats()["sessions"], server.stats()["refused"]
    (1, 0)
    >>> r.close(); server.stop()
    """

    def __init__(self, backend="numpy", *, host: str = "127.0.0.1", port: int = 8760,
                 token: str | None = None, ssl=None, limits: ServerLimits | None = None):
        from ..backends import get_backend

        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise EmberError(f"Server: port {port!r} is not a port number: expected an integer "
                             "in 0..65535 (0: any free port)")
        token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        if not token:
            raise EmberError(f"Server: no token; pass token=... or set ${TOKEN_ENV} "
                             "(every client must send it)")
        self.backend = get_backend(backend)
        self.host, self.port, self.ssl = host, port, ssl
        self.limits = limits or ServerLimits()
        self._digest = hashlib.sha256(token.encode()).digest()
        self.sessions: set[Session] = set()
        self.refused = 0  # connections that failed to authenticate
        self.malformed = 0  # connections closed for a protocol error
        self._pending: dict = {}  # connections waiting to authenticate, oldest first
        self._closing: set[asyncio.Future] = set()
        self._welcome = protocol.encode_welcome(self._info())
        self._op_process = (OpWorker(self.backend.name, self.limits)
                            if _isolates_large_ops(self.backend) else None)
        self._worker = Scheduler(threadsafe=self.backend.caps.threadsafe,
                                 heavy_apart=self._op_process is not None)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Future | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``ws://host:port`` (``wss://`` with TLS): what clients connect to."""
        return f"{'wss' if self.ssl else 'ws'}://{self.host}:{self.port}"

    def stats(self) -> dict:
        """Connections served now and waiting to authenticate, their tensors' bytes, refused
        and malformed connections."""
        sessions = list(self.sessions)
        return {"sessions": len(sessions), "bytes": sum(s.bytes for s in sessions),
                "tensors": sum(len(s.tensors) for s in sessions), "refused": self.refused,
                "malformed": self.malformed, "pending": len(self._pending)}

    def _info(self) -> dict:
        b = self.backend
        missing = sorted(n for n in b.required_ops() if getattr(getattr(type(b), n), "is_required",
                                                                  False))
        return {"backend": b.name, "device": b.device,
                "dtypes": sorted(d.name for d in b.caps.dtypes),
                "narrow": sorted(d.name for d in b.caps.narrow),
                "missing": missing, "limits": self.limits.public()}

    def _authorized(self, frame) -> bool:
        try:
            token = protocol.decode_hello(frame)
        except ProtocolError:
            token = ""
        return hmac.compare_digest(hashlib.sha256(token.encode()).digest(), self._digest)

    # ------------------------------------------------------------------ connections
    async def _authenticate(self, ws) -> bool:
        """Read the hello (``max_hello_bytes``, ``auth_timeout``); close and count a
        connection that doesn't authenticate. With ``max_pending`` others waiting, the one
        that has waited longest is closed (1013) to make room."""
        from websockets.exceptions import ConnectionClosed

        if len(self._pending) >= self.limits.max_pending:
            # the longest-waiting goes, not the newcomer: a flood of silent connections then
            # can't keep out clients that authenticate within milliseconds
            oldest = next(iter(self._pending))
            del self._pending[oldest]
            closing = asyncio.ensure_future(oldest.close(
                1013, f"server busy: more than max_pending={self.limits.max_pending} "
                      "connections were authenticating"))
            self._closing.add(closing)  # held until done: the loop keeps only weak references
            closing.add_done_callback(self._closing.discard)
        self._pending[ws] = None
        try:
            first = await asyncio.wait_for(ws.recv(), self.limits.auth_timeout)
        except (asyncio.TimeoutError, ConnectionClosed):
            first = None
        finally:
            self._pending.pop(ws, None)
        if first is None or not self._authorized(first):
            self.refused += 1
            await ws.close(1008, "authentication timed out" if first is None
                           else "authentication failed")
            return False
        return True

    async def _connection(self, ws) -> None:
        from websockets.exceptions import ConnectionClosed

        if not await self._authenticate(ws):
            return
        if len(self.sessions) >= self.limits.max_sessions:
            await ws.close(1013, f"server busy: max_sessions={self.limits.max_sessions}")
            return
        # authenticated: frames up to max_frame_bytes from now on (websockets reads this
        # attribute for each frame it parses)
        ws.protocol.max_message_size = self.limits.max_frame_bytes
        loop = asyncio.get_running_loop()
        session = Session(self.backend, self.limits,
                          self._op_process.run if self._op_process is not None else None)
        self.sessions.add(session)
        try:
            await ws.send(self._welcome)
            async for frame in ws:
                try:
                    replies = await self._worker.submit(session, session.steps(frame), loop,
                                                          len(frame))
                except ProtocolError as e:
                    self.malformed += 1
                    await ws.close(1008, _reason(f"protocol error: {e}"))
                    return
                except Exception as e:  # a bug of ours: say so, keep serving the others
                    log.exception("remote: internal error")
                    await ws.close(1011, _reason(f"internal error: {type(e).__name__}"))
                    return
                for reply in replies:
                    await ws.send(reply)
        except ConnectionClosed:
            pass
        finally:
            self.sessions.discard(session)
            try:
                await self._worker.submit(session, session.closing(), loop)
            except (RuntimeError, asyncio.CancelledError):  # the server is stopping
                session.close()
            self._worker.forget(session)

    async def serve(self, ready: threading.Event | None = None) -> None:
        """Serve until :meth:`stop` (or the task is cancelled).

        >>> import asyncio
        >>> server = Server("numpy", port=0, token="example-token")
        >>> async def main():
        ...     task = asyncio.ensure_future(server.serve())
        ...     while server.port == 0:
        ...         await asyncio.sleep(0.01)
        ...     server.stop(); await task
        ...     return server.port > 0
        >>> asyncio.run(main())
        True
        """
        from websockets.asyncio.server import serve

        self._loop = asyncio.get_running_loop()
        self._stop = self._loop.create_future()
        # until a connection authenticates it may send max_hello_bytes (see _connection);
        # two frames queued per connection at most, and a handshake within auth_timeout
        async with serve(self._connection, self.host, self.port, ssl=self.ssl,
                         max_size=self.limits.max_hello_bytes, max_queue=2,
                         open_timeout=self.limits.auth_timeout, compression=None,
                         create_connection=_dropping_failed_peers()) as server:
            self.port = server.sockets[0].getsockname()[1]
            log.info("ember remote: serving %s on %s", self.backend.name, self.url)
            if ready is not None:
                ready.set()
            await self._stop

    def run(self) -> None:
        """Serve in this thread until interrupted (what ``ember serve`` does).

        >>> import threading, time
        >>> server = Server("numpy", port=0, token="example-token")
        >>> def stop_once_listening():
        ...     while server.port == 0:  # the real port is known once it listens
        ...         time.sleep(0.01)
        ...     server.stop()
        >>> threading.Thread(target=stop_once_listening).start()
        >>> server.run()  # returns when stop() is called
        >>> server.port > 0
        True
        """
        asyncio.run(self.serve())

    def start(self) -> Server:
        """Serve on a daemon thread; returns once the port is open. An address it cannot
        listen on (a bad host, a port in use or out of range) raises EmberError saying so.

        >>> Server("numpy", host="no-such-host.invalid", port=0, token="t").start()
        Traceback (most recent call last):
        ...
        ember.errors.EmberError: Server: can't listen on no-such-host.invalid:0: ...
        """
        ready = threading.Event()
        failed: list[BaseException] = []

        def serve() -> None:
            try:
                asyncio.run(self.serve(ready))
            except Exception as e:  # noqa: BLE001 - reported by start(), in the caller's thread
                failed.append(e)
                ready.set()

        self._thread = threading.Thread(target=serve, name="ember-remote-server", daemon=True)
        self._thread.start()
        if not ready.wait(30) or failed:
            self._worker.stop()
            why = f"{type(failed[0]).__name__}: {failed[0]}" if failed else "no answer in 30 s"
            raise EmberError(f"Server: can't listen on {self.host}:{self.port}: {why}")
        return self

    def stop(self) -> None:
        """Stop serving (connections close; their tensors are freed)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(_settle, self._stop)
        if self._thread is not None:
            self._thread.join(30)
        self._worker.stop()
        if self._op_process is not None:
            self._op_process.stop()

    @property
    def op_process(self) -> int | None:
        """The process id of the worker running large ops, while one runs (see
        :mod:`~ember.remote.opworker`); None for a backend that runs them in the server.

        >>> server = Server("numpy", port=0, token="example-token").start()
        >>> server.op_process is None  # the first large op starts it
        True
        >>> server.stop()
        """
        return None if self._op_process is None else self._op_process.pid


#: seconds a peer that broke the protocol has to read the close frame before it is dropped
DROP_AFTER = 1.0


def _dropping_failed_peers() -> type:
    """websockets' server connection, except that once a peer breaks the protocol (a frame
    past the size bound, a malformed one: websockets has queued the close frame) the server
    reads nothing more from it and drops it :data:`DROP_AFTER` seconds later, instead of
    reading and discarding whatever it still sends (a 16 MB hello would cost the event loop
    its whole length)."""
    from websockets.asyncio.server import ServerConnection

    class Connection(ServerConnection):
        dropping = False

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.protocol.parser_exc is not None and not self.dropping:
                self.dropping = True
                self.transport.pause_reading()
                self.loop.call_later(DROP_AFTER, self.transport.abort)

    return Connection


def _isolates_large_ops(backend) -> bool:
    """Whether large ops run in a worker process: a thread-safe CPU backend of its own (no
    decorator's state), which the worker builds again by its name."""
    return backend.caps.threadsafe and backend.inner is None and backend.device == "cpu"


def _settle(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _reason(text: str) -> str:
    """A close reason: at most 123 bytes of UTF-8."""
    return text.encode()[:120].decode(errors="ignore")
