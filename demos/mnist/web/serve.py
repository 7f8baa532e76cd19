"""Serve the MNIST drawing demo on 127.0.0.1 (WebGPU needs a secure context).

    python demos/mnist/web/serve.py [--run-dir runs/mnist] [--port 8000]

Layout served: ``/`` = web/dist (Pyodide + ember, built if missing), ``/mnist/`` = this page,
``/mnist/model/`` = the run folder with ``model.safetensors`` + ``model.json`` written by
``ember demo mnist``. Open the printed URL.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DIST = ROOT / "web" / "dist"


def _devserver():
    spec = importlib.util.spec_from_file_location("ember_devserver", ROOT / "web" / "devserver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve(run_dir: str | Path = "runs/mnist", port: int = 0):
    """Start the server (in a thread) and return it; ``server.url + "mnist/"`` is the page."""
    run_dir = Path(run_dir).resolve()
    if not (run_dir / "model.safetensors").is_file():
        raise SystemExit(f"no model in {run_dir}: train it with `ember demo mnist` first")
    if not (DIST / "ember.js").is_file():
        subprocess.run([str(ROOT / "web" / "setup.sh")], check=True,
                       env={**__import__("os").environ, "PYTHON": sys.executable})
    return _devserver().Server(DIST, {"/mnist/model/": run_dir, "/mnist/": HERE}, port=port)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run-dir", default="runs/mnist")
    p.add_argument("--port", type=int, default=8000)
    args = p.parse_args()
    server = serve(args.run_dir, args.port)
    print(f"MNIST drawing demo: {server.url}mnist/   (Ctrl-C stops)", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
