"""Serve the image-classification page on 127.0.0.1 (WebGPU needs a secure context).

    python demos/image_classification/web/serve.py [--port 8000] [--model-dir DIR]

Writes the web model folder on first use (folded EfficientNet-Lite0, float16 safetensors, the
ImageNet labels; default: the checkout's runs/classify-web, whatever the current directory):
see :func:`ember.demos.classify_web.serve_classifier`.
"""

from __future__ import annotations

from ember.demos.classify_web import serve_classifier
from ember.demos.serve import page_server_main

if __name__ == "__main__":
    page_server_main(serve_classifier, __doc__)
