"""The native client transport: a websockets (sync API) connection.

A transport sends and receives whole binary messages and raises
:class:`~ember.remote.errors.RemoteError` (:class:`~ember.remote.errors.AuthError` for a
refused token) for anything that goes wrong on the way, with what to check.
"""

from __future__ import annotations

from .errors import AuthError, RemoteError


def closed_error(url: str, code: int, reason: str, received: bool = True) -> RemoteError:
    """The error for a connection that closed with ``code`` and ``reason`` (``received``:
    the server said so; else the connection was simply lost)."""
    if not received or code == 1006:
        return RemoteError(f"{url}: the connection was lost (the server stopped or the "
                           "network failed)")
    if code == 1008 and "authentication" in reason:
        return AuthError(f"{url}: {reason} (check the token: the server's --token-file or "
                         "$EMBER_REMOTE_TOKEN)")
    return RemoteError(f"{url}: the server closed the connection "
                       f"(code {code}: {reason or 'no reason'})")


class WebsocketTransport:
    """``websockets.sync.client`` underneath; its reader thread receives while we compute."""

    def __init__(self, url: str, ssl=None, timeout: float = 60.0):
        try:
            from websockets.sync.client import connect
        except ImportError as e:
            raise RemoteError("Remote needs the websockets package: pip install "
                              "'ember[remote]'") from e
        self.url = url
        try:
            # the server is the one the user chose: its replies (tensors) aren't size-capped
            # entered like a context manager: how websockets >= 17.1 wants it opened
            self._opened = connect(url, ssl=ssl, open_timeout=timeout, max_size=None,
                                   compression=None, close_timeout=2)
            self.ws = self._opened.__enter__()
        except (OSError, TimeoutError) as e:
            raise RemoteError(f"can't connect to {url}: {e} (is `ember serve` running there, "
                              "on that port?)") from e
        except Exception as e:  # websockets' handshake errors (InvalidURI, InvalidStatus, ...)
            raise RemoteError(f"can't connect to {url}: {type(e).__name__}: {e}") from e

    def send(self, frame: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            self.ws.send(frame)
        except ConnectionClosed as e:
            raise self._closed(e) from None
        except OSError as e:
            raise RemoteError(f"{self.url}: sending failed: {e}") from e

    def recv(self, timeout: float) -> bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            return self.ws.recv(timeout)
        except TimeoutError:
            raise RemoteError(f"{self.url}: no answer within {timeout:g} s (the server may be "
                              "busy, stuck or gone; Remote(..., timeout=) sets the wait)"
                              ) from None
        except ConnectionClosed as e:
            raise self._closed(e) from None

    def _closed(self, e) -> RemoteError:
        frame = e.rcvd
        if frame is None:
            return closed_error(self.url, 1006, "", received=False)
        return closed_error(self.url, frame.code, frame.reason)

    def close(self) -> None:
        self._opened.__exit__(None, None, None)
