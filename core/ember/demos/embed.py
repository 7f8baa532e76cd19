"""``ember demo embed "text" ...``: sentence embeddings with all-MiniLM-L6-v2 and their cosine
similarities, no torch and no Hugging Face libraries needed.

Texts are tokenized by ember's pure-Python WordPiece (:mod:`ember.demos.wordpiece`, the
package's ``vocab.txt``), run through the ``ember.nn`` encoder (:mod:`ember.demos.minilm`),
mean-pooled over real tokens and L2-normalised, so the similarity of two texts is the dot
product of their embeddings.

>>> vectors = embed(["A cat sits on the mat.", "A kitten rests on a rug."])   # doctest: +SKIP
>>> vectors.shape                                                            # doctest: +SKIP
(2, 384)
"""

from __future__ import annotations

import time

from .arguments import backend_name, int_between, port
from .minilm import MAX_LENGTH, embed, tokenizer

__all__ = ["add_subcommand", "embed", "similarity_table", "tokenizer"]


def similarity_table(texts: list[str], similarities: list[list[float]]) -> str:
    """The cosine-similarity matrix as text, rows and columns numbered like the legend.

    >>> print(similarity_table(["a", "b"], [[1.0, 0.25], [0.25, 1.0]]))
    [0] a
    [1] b
    <BLANKLINE>
           [0]    [1]
    [0]  1.000  0.250
    [1]  0.250  1.000
    """
    n = len(texts)
    legend = [f"[{i}] {t}" for i, t in enumerate(texts)]
    width = len(f"[{n - 1}]")
    head = " " * width + "".join(f"{f'[{j}]':>7}" for j in range(n))
    rows = [f"{f'[{i}]':<{width}}" + "".join(f"{similarities[i][j]:7.3f}" for j in range(n))
            for i in range(n)]
    return "\n".join([*legend, "", head, *rows])


def _run(args) -> int:
    if args.serve:
        from .embed_web import serve_embed

        serve_embed(port=args.port)
        return 0
    if not args.texts:
        args.parser.error("give at least one TEXT to embed (or --serve for the search page)")
    t0 = time.perf_counter()
    vectors = embed(args.texts, backend=args.backend, max_length=args.max_length)
    similarities = (vectors @ vectors.T).tolist()
    ms = (time.perf_counter() - t0) * 1000
    print(f"embeddings: {vectors.shape} {vectors.dtype} (all-MiniLM-L6-v2, mean pooling, "
          f"L2-normalised; backend {args.backend}, {ms:.0f} ms with loading)")
    print("cosine similarity:")
    print(similarity_table(args.texts, similarities))
    return 0


def add_subcommand(demo_subparsers) -> None:
    """Register ``ember demo embed`` on the ``demo`` subparsers."""
    p = demo_subparsers.add_parser(
        "embed", help="sentence embeddings (all-MiniLM-L6-v2) and their cosine similarities"
    )
    p.add_argument("texts", nargs="*", metavar="TEXT", help="sentences to embed")
    p.add_argument("--backend", type=backend_name, default="numpy",
                   help="numpy, python, wasm or wgpu (default numpy)")
    p.add_argument("--max-length", type=int_between(2, MAX_LENGTH), default=MAX_LENGTH,
                   help=f"tokens per text with [CLS]/[SEP], 2..{MAX_LENGTH} (longer texts are "
                        f"cut; default {MAX_LENGTH})")
    p.add_argument("--serve", action="store_true",
                   help="serve the semantic-search page (ember in the browser) on 127.0.0.1")
    p.add_argument("--port", type=port, default=8000, help="port for --serve (default 8000)")
    p.set_defaults(run=_run, parser=p)
