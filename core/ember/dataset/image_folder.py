"""Images in one folder per class (``root/cat/001.jpg``, ``root/dog/…``), read with Pillow.

Decoding is bounded: an image whose header declares more than ``ember.limits``
``max_image_pixels``, or whose decoded values would take more than ``max_image_ratio`` times
the file's size (past :data:`ANY_IMAGE_BYTES`) or more than ``max_expansion_bytes``, is
refused before its pixels are decoded.
"""

from __future__ import annotations

import io
import os
import struct
import threading
import warnings
from pathlib import Path

from .. import limits
from ..errors import DatasetError

EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


class ImageFolderDataset:
    """Items are ``(image, class_index)``; images are float lists (C, H, W) in [0, 1] as
    TensorData, resized to ``size`` (H, W) when given. ``transform`` runs on each image.

    >>> import os, tempfile
    >>> from PIL import Image
    >>> root = tempfile.mkdtemp()
    >>> for name, color in (("cat", (255, 0, 0)), ("dog", (0, 0, 255))):
    ...     os.mkdir(os.path.join(root, name))
    ...     Image.new("RGB", (4, 4), color).save(os.path.join(root, name, "1.png"))
    >>> ds = ImageFolderDataset(root, size=(2, 2))
    >>> len(ds), ds.classes, ds[1][0].shape, ds[1][1]
    (2, ['cat', 'dog'], (3, 2, 2), 1)
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


#: what Pillow's decoders raise on malformed input (a truncated iCCP chunk: IndexError)
MALFORMED = (OSError, ValueError, EOFError, SyntaxError, IndexError, KeyError, TypeError,
             ZeroDivisionError, struct.error)

#: what any image may decode to, whatever its file's size (a blank 2048² RGB PNG of a few KB)
ANY_IMAGE_BYTES = 64 << 20

# Pillow's own bomb check warns past PIL.Image.MAX_IMAGE_PIXELS; the warning is made an error
# only while a header is read, and the process-wide filter list is swapped under this lock so
# loader threads can't restore each other's filters out of order
_HEADER_LOCK = threading.Lock()


def pil_image():
    """``PIL.Image``, or an ImportError naming the package to install."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("images are decoded with Pillow: pip install pillow") from e
    return Image


def decode_image(path: str | os.PathLike, mode: str = "RGB", what: str = "can't read image",
                 value_bytes: int = 1):
    """The image at ``path`` decoded by Pillow and converted to ``mode``.

    Raises DatasetError (``"{what} {path}: ..."``) for a missing, malformed or truncated file
    and, before decoding, for one whose header declares more than ``max_image_pixels`` or
    whose values (``value_bytes`` each: what the caller makes of them) pass the decoded-size
    bounds of the module doc.
    """
    Image = pil_image()
    try:
        # from memory: Pillow reads chunks by their declared length, and a file object
        # allocates that length up front (a PNG declaring a 2 GB IDAT took 2 GB); a buffer
        # returns only the bytes it has
        with open(path, "rb") as f:
            data = io.BytesIO(f.read())
        with _HEADER_LOCK, warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(data)  # lazy: reads the header only
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise DatasetError(
            f"{what} {path}: {e} (Pillow's PIL.Image.MAX_IMAGE_PIXELS="
            f"{Image.MAX_IMAGE_PIXELS}; ember's {limits.current().describe('max_image_pixels')})"
        ) from e
    except Image.UnidentifiedImageError as e:  # its message names the buffer, not the file
        raise DatasetError(f"{what} {path}: not an image format Pillow reads "
                           "(PNG, JPEG, BMP, GIF, WebP, ...)") from e
    except MALFORMED as e:
        raise DatasetError(f"{what} {path}: {e}") from e
    with img:
        width, height = img.size
        limits.check(DatasetError, f"{what} {path}: a {width}×{height} image has too many "
                     f"pixels", width * height, "max_image_pixels")
        _check_decoded_size(f"{what} {path}: a {width}×{height} {mode} image",
                            width * height * Image.getmodebands(mode) * value_bytes,
                            len(data.getbuffer()))
        try:
            return img.convert(mode)
        except MALFORMED as e:
            raise DatasetError(f"{what} {path}: {e}") from e


def _check_decoded_size(what: str, decoded: int, file_bytes: int) -> None:
    """DatasetError when ``decoded`` bytes from a file of ``file_bytes`` pass the bounds."""
    ratio = limits.current().max_image_ratio
    if decoded > max(ANY_IMAGE_BYTES, file_bytes * ratio):
        raise DatasetError(f"{what} decodes to {decoded} bytes from a file of {file_bytes}: "
                           f"more than {limits.current().describe('max_image_ratio')} times "
                           f"the file (past {ANY_IMAGE_BYTES} bytes)")
    limits.check(DatasetError, f"{what}: decoded bytes", decoded, "max_expansion_bytes")


def load_image(path: str | os.PathLike, size: tuple[int, int] | None = None, mode: str = "RGB"):
    """An image file as float32 TensorData (C, H, W) in [0, 1], resized to ``size`` (H, W)
    when given. Bounded by ``ember.limits`` ``max_image_pixels`` (the file and ``size``)
    and by the decoded-size bounds of :func:`decode_image`.

    >>> import os, tempfile
    >>> from PIL import Image
    >>> path = os.path.join(tempfile.mkdtemp(), "red.png")
    >>> Image.new("RGB", (4, 2), (255, 0, 0)).save(path)
    >>> img = load_image(path, size=(8, 8))
    >>> img.shape, img.dtype.name, img.tolist()[0][0][0], img.tolist()[1][0][0]
    ((3, 8, 8), 'float32', 1.0, 0.0)
    """
    from .. import dtype as dt
    from ..tensordata import TensorData

    # the file's own size as float32 values, unless it is resized first
    img = decode_image(path, mode, value_bytes=1 if size is not None else 4)
    if size is not None:
        height, width = size
        limits.check(DatasetError, f"load_image {path}: resizing to {height}×{width}",
                     height * width, "max_image_pixels")
        img = img.resize((width, height), pil_image().BILINEAR)
    width, height = img.size
    # Pillow scales each band to float32 in C ("F;32F": little-endian, as TensorData stores):
    # a Python loop over a large image's values would take minutes
    planes = [band.convert("F").point(lambda v: v * (1.0 / 255.0)).tobytes("raw", "F;32F")
              for band in img.split()]
    return TensorData(b"".join(planes), (len(planes), height, width), dt.float32)
