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

from .client import Remote, RemotePrim
from .errors import AuthError, LimitError, ProtocolError, RemoteError, RemoteOpError
from .limits import ServerLimits
from .server import TOKEN_ENV, Server
from .session import Session

__all__ = ["TOKEN_ENV", "AuthError", "LimitError", "ProtocolError", "Remote", "RemoteError",
           "RemoteOpError", "RemotePrim", "Server", "ServerLimits", "Session"]
