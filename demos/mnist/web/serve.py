"""Serve the MNIST drawing demo on 127.0.0.1 (WebGPU needs a secure context).

    python demos/mnist/web/serve.py [--run-dir runs/mnist] [--port 8000]

The same as ``ember demo mnist --serve``: see :func:`ember.demos.serve.serve_mnist`.
"""

from __future__ import annotations

import argparse

from ember.demos.serve import serve_mnist


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run-dir", default="runs/mnist")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    args = p.parse_args()
    serve_mnist(args.run_dir, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
