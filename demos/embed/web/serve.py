"""Serve the semantic-search page on 127.0.0.1.

    python demos/embed/web/serve.py [--port 8000] [--model-dir DIR]

Writes the web model folder on first use (all-MiniLM-L6-v2 weights as safetensors, vocab.txt;
default: the checkout's runs/embed-web, whatever the current directory): see
:func:`ember.demos.embed_web.serve_embed` (also `ember demo embed --serve`).
"""

from __future__ import annotations

from ember.demos.embed_web import serve_embed
from ember.demos.serve import page_server_main

if __name__ == "__main__":
    page_server_main(serve_embed, __doc__)
