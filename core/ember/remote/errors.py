"""The errors of :mod:`ember.remote`."""

from ..errors import EmberError


class RemoteError(EmberError, ConnectionError):
    """The connection to a Remote server failed, closed or timed out; the message says which
    and what to check.

    >>> import ember
    >>> from ember.remote import Remote, RemoteError
    >>> try:
    ...     Remote("ws://127.0.0.1:9", token="t", timeout=2)  # nothing listens on port 9
    ... except RemoteError as e:
    ...     print(isinstance(e, ConnectionError))
    True
    """


class AuthError(RemoteError):
    """The server refused the connection's credentials (a wrong or missing token).

    >>> import ember
    >>> from ember.remote import AuthError, Remote, Server
    >>> server = Server("numpy", port=0, token="right").start()
    >>> try:
    ...     Remote(server.url, token="wrong")
    ... except AuthError as e:
    ...     print(type(e).__name__)
    AuthError
    >>> server.stop()
    """


class ProtocolError(EmberError, ValueError):
    """A frame that breaks the Remote protocol: the server closes that connection only.

    >>> from ember.backends import get_backend
    >>> from ember.remote.session import Session
    >>> Session(get_backend("numpy")).handle(b"not a batch")
    Traceback (most recent call last):
    ...
    ember.remote.errors.ProtocolError: ...
    """


class LimitError(EmberError, ValueError):
    """A frame, a tensor or a session's memory beyond the server's limits (the message names
    the limit and its value).

    >>> from ember.remote import LimitError
    >>> issubclass(LimitError, ValueError)
    True
    """


class RemoteOpError(EmberError, RuntimeError):
    """An op failed on the server with an error that has no Ember type (its name is in the
    message).

    >>> from ember.remote import RemoteOpError
    >>> issubclass(RemoteOpError, RuntimeError)
    True
    """
