"""``ember serve``: expose a backend to Remote clients (argparse only until it runs).

Wire-up: ``add_subcommand(subparsers)`` from ember's main CLI.
"""

from __future__ import annotations

import argparse
import os
import sys


def _token(args: argparse.Namespace) -> str:
    from .limits import TOKEN_ENV

    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ValueError(f"--token-file {args.token_file}: the file is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        import secrets

        token = secrets.token_urlsafe(24)
        print(f"ember serve: token {token} (none was given: set ${TOKEN_ENV} or --token-file "
              "to choose one)", file=sys.stderr, flush=True)
    return token


def _serve(args: argparse.Namespace) -> int:
    from .limits import ServerLimits
    from .server import Server
    from .threads import BLAS_VARIABLES, default_op_threads, set_op_threads

    context = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            raise ValueError("TLS needs both --tls-cert and --tls-key")
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
    for flag, value in (("--max-session-mb", args.max_session_mb),
                        ("--max-tensor-mb", args.max_tensor_mb),
                        ("--max-op-mb", args.max_op_mb), ("--max-op-work", args.max_op_work)):
        if value < 1:
            raise ValueError(f"{flag} {value}: expected a number >= 1")
    if args.op_threads is not None or not any(v in os.environ for v in BLAS_VARIABLES):
        set_op_threads(default_op_threads() if args.op_threads is None else args.op_threads)
    limits = ServerLimits(max_session_bytes=args.max_session_mb << 20,
                          max_op_bytes=args.max_op_mb << 20, max_op_work=args.max_op_work,
                          max_tensor_bytes=args.max_tensor_mb << 20,
                          max_frame_bytes=max(args.max_tensor_mb << 20, 1 << 20) + (1 << 20))
    server = Server(args.backend, host=args.host, port=args.port, token=_token(args),
                    ssl=context, limits=limits).start()
    print(f"ember serve: {server.backend.name} on {server.url}", flush=True)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        server.stop()
        raise
    return 0


def add_subcommand(sub) -> None:
    p = sub.add_parser("serve", help="serve a backend to ember.Remote clients (websockets)")
    p.add_argument("--backend", default="numpy", help="the backend to serve (default numpy)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8760, help="port (default 8760; 0: any free)")
    p.add_argument("--token-file", help="a file holding the token clients must send (default: "
                   "$EMBER_REMOTE_TOKEN, else a random one, printed)")
    p.add_argument("--tls-cert", help="PEM certificate: serve wss:// (with --tls-key)")
    p.add_argument("--tls-key", help="PEM private key of --tls-cert")
    p.add_argument("--max-session-mb", type=int, default=2048,
                   help="memory one connection's tensors may take (default 2048)")
    p.add_argument("--max-tensor-mb", type=int, default=256,
                   help="largest tensor (default 256)")
    p.add_argument("--max-op-mb", type=int, default=1024,
                   help="one op's working memory, results and intermediates (default 1024)")
    p.add_argument("--max-op-work", type=int, default=1 << 32,
                   help="one op's multiply-adds (default 2**32, about a second of a CPU "
                        "core; raise it for a GPU)")
    p.add_argument("--op-threads", type=int,
                   help="threads one op's BLAS may use (default: one fewer than the cores, "
                        "so small ops and the network keep one; $OPENBLAS_NUM_THREADS if set)")
    p.set_defaults(run=_serve)
