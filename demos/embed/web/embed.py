# Runs inside Pyodide (ember's worker): load all-MiniLM-L6-v2 and its vocabulary, then rank
# sentences by similarity to a query. The work is in ember.demos.embed_web (in the wheel).
from pathlib import Path

import ember
from ember.demos.embed_web import load_web_model, rank
from ember.demos.wordpiece import WordPiece
from pyodide.http import pyfetch

MODEL = None
TOKENIZER = None
CACHE = {}  # sentence -> embedding: the list is embedded once, each query once


async def load_model(base: str) -> dict:
    global MODEL, TOKENIZER
    config = await (await pyfetch(base + "model.json")).json()
    TOKENIZER = WordPiece((await (await pyfetch(base + config["vocab"])).string()).splitlines())
    raw = await (await pyfetch(base + config["weights"])).bytes()
    path = Path("/tmp") / config["weights"]  # Pyodide's in-memory file system
    path.write_bytes(raw)
    MODEL = load_web_model(path, backend=ember.default_backend())
    path.unlink()
    return {"backend": ember.default_backend().name, "weights_bytes": len(raw),
            "vocab": len(TOKENIZER.vocab)}


def search(query: str, sentences) -> dict:
    return rank(MODEL, TOKENIZER, str(query), [str(s) for s in sentences], CACHE)
