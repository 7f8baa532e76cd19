"""``ember demo mnist --serve`` and ``ember serve-web``: ember's pages on 127.0.0.1, from the
installed package or a checkout (:func:`ember.resources.resource_dir` finds the files)::

    /          the web distribution: Pyodide + ember's wheel + ember.js + a small page (built,
               or rebuilt when stale, by build_dist.py: web/dist in a checkout, else a cache)
    /mnist/    the drawing page (``--serve``)
    /mnist/model/   the run folder: model.safetensors + model.json from ``ember demo mnist``

WebGPU needs a secure context, which ``http://127.0.0.1`` and ``http://localhost`` are.

>>> serve_mnist("runs/mnist", port=0, block=False).close()  # doctest: +SKIP
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import EmberError
from ..resources import resource_dir, work_dir


def load_source(name: str, path: Path):
    """The Python file at ``path`` imported as a module called ``name`` (web/ and tests/web/
    hold scripts, not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def default_dist(build_dist) -> Path:
    """Where the web distribution is built: web/dist in a checkout; for an installed ember
    ``$EMBER_WEB_DIST``, else a folder per installation in :func:`ember.resources.work_dir`
    (under ``$XDG_CACHE_HOME/ember`` or ~/.cache/ember)."""
    if build_dist.CHECKOUT:
        return build_dist.WEB / "dist"
    if os.environ.get("EMBER_WEB_DIST"):
        return Path(os.environ["EMBER_WEB_DIST"])
    tag = hashlib.sha256(str(build_dist.PACKAGE).encode()).hexdigest()[:10]
    return work_dir(f"web-dist-{tag}")


def ensure_web_dist(log=print, out: Path | None = None, force: bool = False) -> Path:
    """The web distribution (default :func:`default_dist`), built or rebuilt by build_dist.py
    when missing or older than ember's sources. Pyodide comes from the npm package
    ``pyodide``: in a checkout ``npm install`` in web/ fetches it when missing; an installed
    ember needs it present (``$EMBER_PYODIDE_DIR`` or ./node_modules/pyodide) and says so.
    A build replaces ``out``: it must be missing, empty or a distribution, unless ``force``
    (:func:`ember.io.output_folder.prepare_output_folder`)."""
    from ..io.output_folder import prepare_output_folder

    web = resource_dir("web")
    build_dist = load_source("ember_build_dist", web / "build_dist.py")
    dist = Path(out) if out is not None else default_dist(build_dist)
    if not build_dist.is_stale(dist):
        return dist
    if build_dist.pyodide_npm() is None:
        version = build_dist.pyodide_version()
        if not build_dist.CHECKOUT:
            raise EmberError(
                f"serve: the page runs on Pyodide, which ember does not ship: run `npm install "
                f"pyodide@{version}` in this folder, or set EMBER_PYODIDE_DIR to a "
                f"node_modules/pyodide folder (Node is needed too)")
        if shutil.which("npm") is None:
            raise EmberError("serve: npm is needed once to fetch Pyodide: apt-get install npm "
                             "(or run web/setup.sh)")
        log("npm install (Pyodide) in web/ …")
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=web,
                       check=True)
    if shutil.which("node") is None:
        raise EmberError("serve: building the page needs Node (it compiles ember's wheel with "
                         "Pyodide): apt-get install nodejs")
    prepare_output_folder(dist, "serve-web --dist", force, marker=build_dist.MANIFEST)
    log(f"building {dist} (Pyodide + ember's wheel) …")
    subprocess.run([sys.executable, str(web / "build_dist.py"), "--out", str(dist),
                    *(["--force"] if force else [])], check=True, stdout=subprocess.DEVNULL)
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
    return serve_mounts({"/mnist/model/": run_dir, "/mnist/": resource_dir("mnist-page")},
                        "mnist/", "MNIST drawing demo", run_dir, host=host, port=port,
                        block=block)


def serve_runtime(host: str = "127.0.0.1", port: int = 8000, block: bool = True,
                  dist: str | os.PathLike | None = None, force: bool = False):
    """``ember serve-web``: the web distribution alone (built into ``dist`` when given; a
    folder of other files only with ``force``), whose page runs Python typed into it on ember
    in the browser. Returns as :func:`serve_mounts`.

    >>> serve_runtime(port=0, block=False).close()  # doctest: +SKIP
    """
    return serve_mounts({}, "", "Ember in the browser", None, host=host, port=port,
                        block=block, dist=dist, force=force)


def serve_mounts(mounts: dict[str, Path], page: str, title: str, model: Path | None, *,
                 host: str = "127.0.0.1", port: int = 8000, block: bool = True,
                 dist: str | os.PathLike | None = None, force: bool = False):
    """Serve the web distribution (:func:`ensure_web_dist`) with ``mounts`` (URL prefix ->
    folder) and print the page URL (server URL + ``page``) after ``title``, naming the
    ``model`` folder when there is one; ``dist`` and ``force`` as in :func:`ensure_web_dist`.

    Blocks until Ctrl-C when ``block`` (then returns None); otherwise returns the running
    server (``.url``, ``.page_url``, ``.close()``). A taken ``port`` falls back to a free one.
    """
    dist = ensure_web_dist(out=dist, force=force)
    server_cls = load_source("ember_devserver", resource_dir("web") / "devserver.py").Server
    try:
        server = server_cls(dist, mounts, port=port, host=host)
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        server = server_cls(dist, mounts, port=0, host=host)
        print(f"port {port} is in use; using {server.url}", flush=True)
    server.page_url = server.url + page
    about = f"model: {model}; " if model is not None else ""
    print(f"{title}: {server.page_url}   ({about}Ctrl-C stops)", flush=True)
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
