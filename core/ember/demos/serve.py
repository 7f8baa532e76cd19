"""``ember demo mnist --serve``: the MNIST drawing page with a trained model, on 127.0.0.1.

Served from the repository checkout (the page and the web runtime are not in the wheel)::

    /          web/dist: Pyodide + ember's wheel + ember.js (built or rebuilt when stale)
    /mnist/    demos/mnist/web: the drawing page
    /mnist/model/   the run folder: model.safetensors + model.json from ``ember demo mnist``

WebGPU needs a secure context, which ``http://127.0.0.1`` and ``http://localhost`` are.

>>> serve_mnist("runs/mnist", port=0, block=False).close()  # doctest: +SKIP
"""

from __future__ import annotations

import errno
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import EmberError

ROOT = Path(__file__).resolve().parents[3]  # core/ember/demos/serve.py -> the checkout
WEB = ROOT / "web"
PAGE = ROOT / "demos" / "mnist" / "web"


def load_source(name: str, path: Path):
    """The Python file at ``path`` imported as a module called ``name`` (web/ and tests/web/
    hold scripts, not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ensure_web_dist(log=print) -> Path:
    """``web/dist`` from this checkout: runs ``npm install`` in web/ when Pyodide is missing and
    ``web/build_dist.py`` when the distribution is missing or older than the sources."""
    if not (WEB / "build_dist.py").is_file() or not (PAGE / "index.html").is_file():
        raise EmberError(
            f"serve: the web runtime and the demo page live in the repository checkout "
            f"(web/, demos/mnist/web/), not found next to {Path(__file__).resolve()}; "
            f"run ember from a checkout (pip install -e .)")
    build_dist = load_source("ember_build_dist", WEB / "build_dist.py")
    dist = WEB / "dist"
    if not build_dist.is_stale(dist):
        return dist
    if not (WEB / "node_modules" / "pyodide" / "pyodide-lock.json").is_file():
        if shutil.which("npm") is None:
            raise EmberError("serve: npm is needed once to fetch Pyodide: apt-get install npm "
                               "(or run web/setup.sh)")
        log("npm install (Pyodide) in web/ …")
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=WEB,
                       check=True)
    log("building web/dist (Pyodide + ember's wheel) …")
    subprocess.run([sys.executable, str(WEB / "build_dist.py")], check=True,
                   stdout=subprocess.DEVNULL)
    return dist


def serve_mnist(run_dir: str | os.PathLike = "runs/mnist", host: str = "127.0.0.1",
                port: int = 8000, block: bool = True):
    """Serve the drawing page with the model trained in ``run_dir``; print its URL.

    Blocks until Ctrl-C when ``block`` (then returns None); otherwise returns the running
    server (``.url``, ``.page_url``, ``.close()``). When ``port`` is taken, a free port is
    used instead. ``port=0`` picks a free port.
    """
    run_dir = Path(run_dir).resolve()
    missing = [n for n in ("model.safetensors", "model.json") if not (run_dir / n).is_file()]
    if missing:
        raise FileNotFoundError(
            f"serve_mnist: {', '.join(missing)} missing in {run_dir}: train the model first "
            f"with `ember demo mnist --run-dir {run_dir}`")
    return serve_mounts({"/mnist/model/": run_dir, "/mnist/": PAGE}, "mnist/",
                        "MNIST drawing demo", run_dir, host=host, port=port, block=block)


def serve_mounts(mounts: dict[str, Path], page: str, title: str, model: Path, *,
                 host: str = "127.0.0.1", port: int = 8000, block: bool = True):
    """Serve ``web/dist`` (rebuilt when stale) with ``mounts`` (URL prefix -> folder) and print
    the page URL (server URL + ``page``) after ``title``, naming the ``model`` folder.

    Blocks until Ctrl-C when ``block`` (then returns None); otherwise returns the running
    server (``.url``, ``.page_url``, ``.close()``). A taken ``port`` falls back to a free one.
    """
    dist = ensure_web_dist()
    server_cls = load_source("ember_devserver", WEB / "devserver.py").Server
    try:
        server = server_cls(dist, mounts, port=port, host=host)
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        server = server_cls(dist, mounts, port=0, host=host)
        print(f"port {port} is in use; using {server.url}", flush=True)
    server.page_url = server.url + page
    print(f"{title}: {server.page_url}   (model: {model}; Ctrl-C stops)", flush=True)
    if not block:
        return server
    try:
        server.thread.join()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.close()
    return None


def page_server_main(serve_page, doc: str, argv: list[str] | None = None) -> None:
    """The command line of a page's ``serve.py``: ``--host``, ``--port``, ``--model-dir``, then
    ``serve_page(host=, port=, model_dir=)`` (the classifier and semantic-search pages)."""
    import argparse

    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--model-dir", default=None)
    args = p.parse_args(argv)
    serve_page(host=args.host, port=args.port, model_dir=args.model_dir)
