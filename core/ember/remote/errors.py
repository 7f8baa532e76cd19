"""The errors of :mod:`ember.remote`."""

from ..errors import EmberError


class RemoteError(EmberError, ConnectionError):
    """The connection to a Remote server failed, closed or timed out; the message says which
    and what to check."""


class AuthError(RemoteError):
    """The server refused the connection's credentials (a wrong or missing token)."""


class ProtocolError(EmberError, ValueError):
    """A frame that breaks the Remote protocol: the server closes that connection only."""


class LimitError(EmberError, ValueError):
    """A frame, a tensor or a session's memory beyond the server's limits (the message names
    the limit and its value)."""


class RemoteOpError(EmberError, RuntimeError):
    """An op failed on the server with an error that has no Ember type (its name is in the
    message)."""
