"""Serve the semantic-search page on 127.0.0.1.

    python demos/embed/web/serve.py [--port 8000] [--model-dir DIR]

Writes the web model folder on first use (all-MiniLM-L6-v2 weights as safetensors, vocab.txt;
default: the checkout's runs/embed-web, whatever the current directory): see
:func:`ember.demos.embed_web.serve_embed` (also `ember demo embed --serve`).
"""

from __future__ import annotations

import argparse

from ember.demos.embed_web import serve_embed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--model-dir", default=None)
    args = p.parse_args()
    serve_embed(host=args.host, port=args.port, model_dir=args.model_dir)


if __name__ == "__main__":
    main()
