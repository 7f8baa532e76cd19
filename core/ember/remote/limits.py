"""What a Remote server allows one connection (defaults for a workstation; lower them for a
server open to people you don't know).

>>> from ember.remote import ServerLimits
>>> ServerLimits(max_session_bytes=1 << 20).max_session_bytes
1048576
"""

from __future__ import annotations

import dataclasses

from .errors import LimitError

#: the environment variable holding the shared token (server and client)
TOKEN_ENV = "EMBER_REMOTE_TOKEN"
"""The environment variable a server and a client read the shared token from."""


@dataclasses.dataclass(frozen=True)
class ServerLimits:
    """Bounds the server checks before it allocates or runs anything a client sends.

    >>> limits = ServerLimits(max_sessions=4)
    >>> limits.public()["max_sessions"], limits.public()["max_ndim"]
    (4, 32)
    >>> ServerLimits(max_session_bytes=-1)
    Traceback (most recent call last):
    ...
    ember.remote.errors.LimitError: ServerLimits: max_session_bytes must be a number > 0, got -1
    """

    #: one websocket message (a batch of ops with its uploads); larger ones close the connection
    max_frame_bytes: int = 256 << 20
    #: one tensor's size (an upload, or an op's result as its shape rule declares it)
    max_tensor_bytes: int = 256 << 20
    #: all live tensors of one connection together
    max_session_bytes: int = 2 << 30
    #: live tensor handles of one connection
    max_handles: int = 1 << 20
    #: dims of one tensor
    max_ndim: int = 32
    #: connections served at once; more are refused (close code 1013, try again later)
    max_sessions: int = 64
    #: seconds a new connection has to open and send its hello
    auth_timeout: float = 5.0
    #: the hello, the only message read before authentication (a longer one closes it, 1009)
    max_hello_bytes: int = 4096
    #: connections not yet authenticated; a newcomer past it closes the longest-waiting (1013)
    max_pending: int = 256
    #: one op's working memory: its results plus the intermediates its shapes imply
    max_op_bytes: int = 1 << 30
    #: one op's work in multiply-adds or element visits (2**32: about a second of a CPU
    #: core; raise it for a GPU): a longer op would hold the worker the others wait on
    max_op_work: int = 1 << 32

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise LimitError(f"ServerLimits: {f.name} must be a number > 0, got {value!r}")

    def public(self) -> dict:
        """What the server tells an authenticated client (so it can check before sending)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
