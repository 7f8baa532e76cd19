"""``remote-X`` for the suite: a real Remote server on 127.0.0.1 (a thread of this process,
any free port, a random token) serving backend X, and a Remote client connected to it."""

from __future__ import annotations

import secrets

from .backends import Unavailable


def connect(inner):
    try:
        import websockets  # noqa: F401
    except ImportError as e:
        raise Unavailable(f"remote: websockets is not installed ({e})") from e
    from ember.remote import Remote, Server

    token = secrets.token_urlsafe(16)
    server = Server(inner, port=0, token=token).start()
    return Remote(server.url, token=token)
