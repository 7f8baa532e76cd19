"""``Remote`` inside Pyodide: the browser's own ``WebSocket`` as the transport.

``remote = await connect("ws://host:8760", token)`` opens the socket, authenticates and
returns an :class:`~ember.remote.client.Remote`; a page then runs its model on the server's
backend (a phone's page on a workstation's GPU). Reads: ``await remote.to_data_async(prim)``
(``await t.to_data_async()``) everywhere; the synchronous ``to_data`` where Pyodide can block
on a promise (JS Promise Integration, Python entered through ``runPythonAsync``).

Natively (no Pyodide) :func:`connect` raises ImportError naming the native client.
"""

from __future__ import annotations

import asyncio

from . import protocol
from .errors import RemoteError
from .transport import closed_error

_JSPI = ("Remote (browser): a synchronous read needs JavaScript Promise Integration, which "
         "this browser (or this call path) lacks; read with `await t.to_data_async()` or "
         "enter Python through pyodide.runPythonAsync in a browser with JSPI")


def _ffi():
    try:
        import js
        from pyodide import ffi
    except ImportError as e:
        raise ImportError("ember.remote.browser runs inside Pyodide (a web page); natively "
                          "use ember.Remote(url, token=...)") from e
    return js, ffi


class _Closed:
    """Queued when the socket closes: every later read raises its error."""

    def __init__(self, error: RemoteError):
        self.error = error


class BrowserTransport:
    """A browser ``WebSocket`` (binary messages as ArrayBuffers) as a Remote transport."""

    def __init__(self, url: str, ws, js, ffi):
        self.url, self.ws, self._js, self._ffi = url, ws, js, ffi
        self._messages: asyncio.Queue = asyncio.Queue()
        self._opened = asyncio.get_event_loop().create_future()
        self._closed: RemoteError | None = None
        ws.binaryType = "arraybuffer"
        # proxies kept on self: the socket calls them for as long as it lives
        self._handlers = [ffi.create_proxy(self._on_open), ffi.create_proxy(self._on_message),
                          ffi.create_proxy(self._on_close)]
        ws.addEventListener("open", self._handlers[0])
        ws.addEventListener("message", self._handlers[1])
        ws.addEventListener("close", self._handlers[2])

    def _on_open(self, event) -> None:
        if not self._opened.done():
            self._opened.set_result(None)

    def _on_message(self, event) -> None:
        data = event.data
        if isinstance(data, str):  # text is not part of the protocol
            self._messages.put_nowait(data.encode())
            return
        self._messages.put_nowait(self._js.Uint8Array.new(data).to_bytes())

    def _on_close(self, event) -> None:
        self._closed = closed_error(self.url, int(event.code), str(event.reason or ""),
                                    received=bool(event.wasClean))
        if not self._opened.done():
            self._opened.set_exception(self._closed)
        self._messages.put_nowait(_Closed(self._closed))

    async def opened(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self._opened), timeout)
        except asyncio.TimeoutError:
            raise RemoteError(f"can't connect to {self.url}: no answer within {timeout:g} s"
                              ) from None

    def send(self, frame: bytes) -> None:
        if self._closed is not None:
            raise self._closed
        self.ws.send(self._ffi.to_js(frame))

    async def recv_async(self, timeout: float) -> bytes:
        try:
            item = await asyncio.wait_for(self._messages.get(), timeout)
        except asyncio.TimeoutError:
            raise RemoteError(f"{self.url}: no answer within {timeout:g} s (the server may be "
                              "busy, stuck or gone)") from None
        if isinstance(item, _Closed):
            self._messages.put_nowait(item)  # later reads fail the same way
            raise item.error
        return item

    def recv(self, timeout: float) -> bytes:
        can = getattr(self._ffi, "can_run_sync", None)
        if can is None or not can():
            raise RemoteError(_JSPI)
        return self._ffi.run_sync(self.recv_async(timeout))

    def close(self) -> None:
        self.ws.close()


async def connect(url: str, token: str, *, timeout: float = 60.0, batch_ops: int = 1024):
    """A :class:`~ember.remote.client.Remote` over the browser's ``WebSocket``."""
    from .client import Remote

    js, ffi = _ffi()
    transport = BrowserTransport(url, js.WebSocket.new(url), js, ffi)
    await transport.opened(timeout)
    transport.send(protocol.encode_hello(token))
    welcome = await transport.recv_async(timeout)
    return Remote(url, token, timeout=timeout, batch_ops=batch_ops,
                  transport=(transport, welcome))
