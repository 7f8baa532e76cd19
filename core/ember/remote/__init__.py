"""A backend over the network (Burn's ``Remote``), and its server; see docs/router_remote.md.

``Server(backend, token=...)`` (or ``ember serve --backend wgpu``) exposes a backend on
127.0.0.1:8760 over websockets; ``Remote(url, token=...)`` is a backend whose tensors live
there. Ops are pipelined (sent in batches, no wait per op), reads wait; connections
authenticate with a shared token (constant-time comparison) and get only their own tensors;
frames, tensors and each connection's memory are bounded (:class:`ServerLimits`); TLS through
an ``ssl`` context. The protocol is JSON plus raw bytes (:mod:`.protocol`): nothing received
is unpickled or evaluated. Needs the ``websockets`` package (``pip install 'ember[remote]'``).

>>> import ember
>>> from ember.remote import Remote, Server
>>> server = Server("numpy", port=0, token="example-token").start()
>>> r = Remote(server.url, token="example-token")
>>> ember.arange(4, backend=r).sum().item()
6
>>> r.close(); server.stop()
"""

import importlib

# loaded on first use: `ember serve --help` and `import ember.remote.protocol` stay light
# (the server brings asyncio)
_LAZY = {
    "Remote": "client", "RemotePrim": "client", "AuthError": "errors", "LimitError": "errors",
    "ProtocolError": "errors", "RemoteError": "errors", "RemoteOpError": "errors",
    "ServerLimits": "limits", "TOKEN_ENV": "limits", "Server": "server", "Session": "session",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'ember.remote' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = sorted(_LAZY)
