"""Serve the image-classification page on 127.0.0.1 (WebGPU needs a secure context).

    python demos/image_classification/web/serve.py [--port 8000] [--model-dir DIR]

Writes the web model folder on first use (folded EfficientNet-Lite0, float16 safetensors, the
ImageNet labels; default: the checkout's runs/classify-web, whatever the current directory):
see :func:`ember.demos.classify_web.serve_classifier`.
"""

from __future__ import annotations

import argparse

from ember.demos.classify_web import serve_classifier


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--model-dir", default=None)
    args = p.parse_args()
    serve_classifier(host=args.host, port=args.port, model_dir=args.model_dir)


if __name__ == "__main__":
    main()
