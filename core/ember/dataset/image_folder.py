"""Images in one folder per class (``root/cat/001.jpg``, ``root/dog/…``), read with Pillow."""

from __future__ import annotations

import os
import sys
from array import array
from pathlib import Path

from ..errors import DatasetError

EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


class ImageFolderDataset:
    """Items are ``(image, class_index)``; images are float lists (C, H, W) in [0, 1] as
    TensorData, resized to ``size`` (H, W) when given. ``transform`` runs on each image.

    >>> ds = ImageFolderDataset("photos/", size=(32, 32))   # doctest: +SKIP
    """

    def __init__(self, root: str | os.PathLike, size: tuple[int, int] | None = None,
                 mode: str = "RGB", transform=None):
        self.root = Path(root)
        if not self.root.is_dir():
            raise DatasetError(f"ImageFolderDataset: {self.root} is not a folder")
        self.classes = sorted(p.name for p in self.root.iterdir() if p.is_dir())
        self.samples = [
            (path, label)
            for label, name in enumerate(self.classes)
            for path in sorted((self.root / name).rglob("*"))
            if path.suffix.lower() in EXTENSIONS
        ]
        if not self.samples:
            raise DatasetError(
                f"ImageFolderDataset: no images ({', '.join(sorted(EXTENSIONS))}) in class "
                f"folders under {self.root}"
            )
        self.size, self.mode, self.transform = size, mode, transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, label = self.samples[index]
        image = load_image(path, self.size, self.mode)
        return (self.transform(image) if self.transform else image), label


def load_image(path: str | os.PathLike, size: tuple[int, int] | None = None, mode: str = "RGB"):
    """An image file as float32 TensorData (C, H, W) in [0, 1]."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError as e:
        raise ImportError("image datasets need Pillow: pip install 'ember[train]'") from e
    from .. import dtype as dt
    from ..data import TensorData

    try:
        with Image.open(path) as img:
            img = img.convert(mode)
            if size is not None:
                img = img.resize((size[1], size[0]), Image.BILINEAR)
            width, height = img.size
            raw = img.tobytes()
    except (OSError, UnidentifiedImageError, ValueError) as e:
        raise DatasetError(f"can't read image {path}: {e}") from e
    channels = len(img.getbands())
    # bytes are interleaved HWC: every channel-th byte from c on is plane c (CHW order)
    planes = b"".join(raw[c::channels] for c in range(channels))
    scaled = array("f", (v * (1.0 / 255.0) for v in planes))
    return TensorData(scaled.tobytes() if sys.byteorder == "little" else _swapped(scaled),
                      (channels, height, width), dt.float32)


def _swapped(values: array) -> bytes:
    values.byteswap()
    return values.tobytes()
