"""Quantization (issue 17): size, accuracy and speed of ``ember.quantize`` models against the
float32 models they come from, side by side in one run.

    .venv/bin/python benchmarks/bench_quant.py [--backend numpy,wasm] [--batch 1]
        [--repeat 5] [--skip size,mnist,effnet-accuracy,speed] [--epochs 4] [--images 0]
        [--rows N,M] [--threads 1] [--distill-steps 200] [--distill-batch 16]
        [--distill-lr 1e-5] [--distill-lr-in-codes] [--distill-loss kl] [--distill-temperature 1]
        [--distill-learn-ranges] [--distill-range-lr 1e-3] [--distill-mixup 0]
        [--distill-crop 0.15,0.8] [--distill-photos 2]

Sections:

- **size**: EfficientNet-Lite0 (ImageNet weights, batch norms folded) as float32, int8
  (``"int8"``: weights per channel, int8 activations) and weight-only int4 (``"int4"``:
  blocks of 64, the depthwise and smallest layers int8 per channel): bytes of the state and
  of the record file (``ember.quantize.save`` vs
  ``ember.save``); also against the unfolded float32 model;
- **mnist**: the demo CNN trained for ``--epochs`` on the MNIST training split (numpy), then
  quantized (calibrated on 512 training digits): held-out test accuracy, float32 vs int8;
- **effnet-accuracy**: EfficientNet-Lite0 int8 (calibrated on 16 crops of scikit-learn's two
  sample photos; min-max and MSE observers) and weight-only int8 against float32 on three
  sets (``make bench-data`` installs them): every labelled ImageNet image a registry package
  ships (foolbox's 20 ImageNet validation images, alibi's 4 cats, foolbox 2.4.0's tiger cat,
  opencv-doc's space shuttle and fox squirrel), each in 10 views (centre crop, four corner
  crops at 80 %, and their mirror images): top-1 agreement with float32 and top-1 accuracy;
  ai-benchmark's 100 unlabelled photos (the whole photo): agreement; and every colour and grey
  photo of ``skimage.data`` that loads without a download, 10 views each: agreement, also on
  the inputs float32 itself is sure of (top-1 ahead of the second by > 0.1); rows with GPTQ
  rounding and with the layers ``ember.quantize.sensitivity`` ranks first kept float; the
  distilled row (``ember.quantize.distill``: ``"int8-u8"`` PTQ on 64 crops, then
  quantization-aware fine-tuning against float32 on random crops of scikit-learn's two
  photos, never the test photos; the ``--distill-*`` flags set its steps, crops per step,
  Adam learning rate (absolute, or ``--distill-lr-in-codes``: in each layer's code steps),
  loss ``kl``/``mse``, softmax temperature, learned input ranges and
  their learning rate, mixup, crop area range, and ``--distill-photos 3`` adds matplotlib's
  ``grace_hopper.jpg``; it prints its time); the peer, onnxruntime's ``quantize_static`` of
  the same network (exported from the reference PyTorch model) on the same crops and
  inputs, last;
- **speed**: EfficientNet-Lite0 at 224 px and the MNIST CNN, float32 vs int8 forwards on each
  ``--backend`` at ``--batch``, timed in alternation (medians of ``--repeat``), eager; the
  outputs are checked against each other (max |logit difference|).

The distilled row alone (row 18; the onnxruntime peer is row 19; row 20: the float32
model itself under half a grey level of input noise and with float16 weights), e.g. on 16 cores (one step
of 8 crops took 6-12 s on 2 shared cores; the 64-crop GPTQ PTQ it starts from ~4 min)::

    .venv/bin/python benchmarks/bench_quant.py --skip size,mnist,speed --rows 18 --threads 16 \
        --distill-steps 200 --distill-batch 16

Short runs on 2 cores (40-80 steps of 8 crops, RESULTS.md): KL at temperature 1, fixed
ranges, Adam lr 1e-5..3e-5 (1e-4 diverges); ``--distill-lr 0.02 --distill-lr-in-codes`` fits
the training crops best. They brought the int8 probabilities closer to float32's (mean L1
-7 %) but top-1 agreement moved 90.0-94.5 % around PTQ's 93.0 % (near-ties).

On the H200 (the wgpu goal: int8 >= 1.3x faster at batch 32)::

    .venv/bin/python benchmarks/bench_quant.py --backend wgpu --batch 32 --skip size,mnist,effnet-accuracy
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from _common import median_times, pin_blas_threads, row, write_record

if __name__ == "__main__":
    pin_blas_threads("1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember

SECTIONS = ("size", "mnist", "effnet-accuracy", "speed")
CALIBRATION = 64  # crops for the larger calibration rows
GPTQ = {"rounding": "gptq"}


def _with(scheme, **calibration):
    """``scheme`` with these Calibration fields changed."""
    from dataclasses import replace

    return ember.quantize.Scheme(scheme.representation,
                                 replace(scheme.calibration, **calibration))
SENSITIVE = (1, 2, 3)  # layers kept float in the mixed-precision rows
_RANKING: dict = {}  # the sensitivity ranking, computed once per run
# int8-u8 (nearest rounding: the speed is the same) with the depthwise convolutions in
# float32: more accurate, and faster on the CPU backends, where int8 depthwise loses to
# float32 (quantizing the input costs more than the nine multiply-adds it saves)
DW_FLOAT = ember.quantize.Scheme(
    ember.quantize.Representation(activations="uint8"),
    ember.quantize.Calibration(observer="mse", bias_correction=True,
                               keep_float=("depthwise_conv",)))


def _effnet(backend: str = "numpy", fold: bool = True):
    from ember.demos.efficientnet import pretrained

    return pretrained(backend=backend, fold=fold)


def _calibration(backend: str, n: int = 16):
    from ember.demos.classify import calibration_images

    return ember.tensor(calibration_images(n), backend=backend)


def bench_size() -> list[str]:
    model = _effnet()
    raw = ember.quantize.size_bytes(_effnet(fold=False))
    f32 = ember.quantize.size_bytes(model)
    lines = ["| model | state bytes | record file bytes | vs float32 (folded) |",
             "|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        ember.save(model, Path(tmp) / "f32")
        f32_file = os.path.getsize(Path(tmp) / "f32")
        lines.append(f"| float32, unfolded (BN separate) | {raw:,} | | {f32 / raw:.2f}x |")
        lines.append(f"| float32, BN folded | {f32:,} | {f32_file:,} | 1.00x |")
        for scheme, calib in (("int8", _calibration("numpy")), ("int4", None)):
            q = ember.quantize(model, calib, scheme)
            ember.quantize.save(q, Path(tmp) / scheme)
            size, file = ember.quantize.size_bytes(q), os.path.getsize(Path(tmp) / scheme)
            scales = ("per channel" if scheme == "int8" else "blocks of 64; depthwise and "
                      "small layers int8 per channel")
            lines.append(f"| {scheme} ({scales}) | {size:,} | {file:,} | {f32 / size:.2f}x "
                         f"(file {f32_file / file:.2f}x) |")
    return lines


def bench_mnist(epochs: int) -> list[str]:
    from ember.demos.mnist import train_mnist

    with tempfile.TemporaryDirectory() as tmp:
        summary = train_mnist(epochs=epochs, run_dir=tmp, int8=True)
    q = summary["int8"]
    return [f"MNIST demo CNN, {epochs} epochs on numpy ({summary['sizes']['train']} training "
            f"digits); held-out test split of {summary['sizes']['test']} digits:",
            "",
            "| | test accuracy | record bytes |", "|---|---:|---:|",
            f"| float32 | {q['f32_test_accuracy']:.2%} | {q['f32_bytes']:,} |",
            f"| int8 | {q['test_accuracy']:.2%} | {q['bytes']:,} |",
            f"| change | {q['change_points']:+.2f} points | "
            f"{q['f32_bytes'] / q['bytes']:.2f}x smaller |"]


def _distill_images(photos: int = 2) -> list[np.ndarray]:
    """scikit-learn's two sample photos (china.jpg, flower.jpg: the calibration photos, none
    of the test photos), with ``photos=3`` matplotlib's sample ``grace_hopper.jpg`` too,
    whole, shorter side resized to 256 as ``load_image`` does (PIL, bilinear), in the
    model's [-1, 1] (3, H, W): the unlabelled images ``distill`` crops."""
    from ember.demos.classify import RESIZE
    from PIL import Image
    from sklearn.datasets import load_sample_images

    images = list(load_sample_images().images)
    if photos == 3:
        import matplotlib.cbook

        with matplotlib.cbook.get_sample_data("grace_hopper.jpg") as f:
            images.append(np.asarray(Image.open(f).convert("RGB")))
    out = []
    for img in images:
        h, w = img.shape[:2]
        size = (round(w * RESIZE / min(h, w)), round(h * RESIZE / min(h, w)))
        arr = np.asarray(Image.fromarray(img).resize(size, Image.BILINEAR), dtype=np.float32)
        out.append(np.ascontiguousarray((arr / 127.5 - 1.0).transpose(2, 0, 1)))
    return out


PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "retina", "colorwheel",
          "hubble_deep_field", "immunohistochemistry", "stereo_motorcycle", "logo", "camera",
          "clock", "coins", "moon", "page", "text", "brick", "grass", "gravel", "horse")


def _photos() -> dict[str, np.ndarray]:
    import skimage.data as data

    out = {}
    for name in PHOTOS:
        try:
            img = getattr(data, name)()
        except Exception:  # a photo that needs a download (pooch) is left out
            continue
        img = img[0] if isinstance(img, tuple) else img
        img = np.asarray(img)
        if img.dtype == bool:
            img = img.astype(np.uint8) * 255
        out[name] = img
    return out


# the files `make bench-data` extracts, with the ImageNet class their packages give them:
# foolbox 2.4.0's `utils.imagenet_example()` (282, tiger cat) and opencv's classification
# tutorial (space shuttle; fox squirrel, its `squirrel_cls.jpg`)
BENCH_DATA = Path(sys.prefix) / "bench-data"
_FILE_LABELS = {"example.png": 282, "space_shuttle.jpg": 812, "squirrel_cls.jpg": 335}


def _package_dir(name: str) -> Path:
    """An installed package's folder, found without importing it (its dependencies are not
    installed: ``make bench-data`` installs it for its data files alone)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not BENCH_DATA.is_dir():
        raise ImportError(f"the accuracy photos come from {name} and the files in "
                          f"{BENCH_DATA}: run `make bench-data`")
    return Path(spec.submodule_search_locations[0])


def _rgb(data) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(data).convert("RGB"))


def _labelled_sets() -> dict[str, tuple[list[np.ndarray], list[int]]]:
    """Every labelled ImageNet image set a registry package ships (name → RGB uint8 images,
    class indices): foolbox's 20 ImageNet validation images (the class in the file name),
    alibi's 4 cats (``<wnid>_<class>_<name>.jpg`` in ``data/cats.tar.gz``), and the three
    single photos in :data:`_FILE_LABELS`."""
    import io
    import tarfile

    files = sorted((_package_dir("foolbox") / "data").glob("imagenet_*.jpg"))
    sets = {"foolbox 3.3.4": ([_rgb(f) for f in files],
                              [int(f.stem.rsplit("_", 1)[1]) for f in files])}
    cats: tuple[list, list] = ([], [])
    with tarfile.open(_package_dir("alibi") / "data" / "cats.tar.gz") as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            if m.isfile() and m.name.endswith(".jpg") and m.size < 1 << 22:
                cats[0].append(_rgb(io.BytesIO(tar.extractfile(m).read())))
                cats[1].append(int(m.name.split("_")[1]))
    sets["alibi 0.9.6"] = cats
    sets["foolbox 2.4.0, opencv-doc 4.6.0"] = (
        [_rgb(BENCH_DATA / f) for f in _FILE_LABELS], list(_FILE_LABELS.values()))
    return sets


def _unlabelled_photos() -> list[np.ndarray]:
    """ai-benchmark's 100 photos (``data/classification/<i>.jpg``, 512×512, one everyday
    object each, no labels)."""
    folder = _package_dir("ai_benchmark") / "data" / "classification"
    return [_rgb(folder / f"{i}.jpg") for i in range(100)]


def _views(img: np.ndarray) -> list[np.ndarray]:
    from ember.demos.classify import load_image

    h, w = img.shape[:2]
    s = int(min(h, w) * 0.8)
    crops = [img, img[:s, :s], img[:s, w - s:], img[h - s:, :s], img[h - s:, w - s:]]
    return [load_image(c) for c in crops] + [load_image(c[:, ::-1]) for c in crops]


def bench_effnet_accuracy(rows: set[int] | None = None, distill: dict | None = None
                          ) -> list[str]:
    from ember.quantize import Scheme

    model = _effnet()
    x, labels, group, sets = _accuracy_inputs()
    pf = _probs(model, x)
    calib = _calibration("numpy")
    named = ", ".join(f"{name}: {n}" for name, n in sets.items())
    lines = [f"EfficientNet-Lite0 vs float32. Labelled ImageNet photos ({named} images; 10 "
             f"views each = {int((group == 0).sum())} inputs; float32 top-1 accuracy "
             f"{_accuracy(pf, labels, group):.1%}); ai-benchmark's unlabelled photos (one view "
             f"each, {int((group == 1).sum())} inputs); skimage.data's photos (10 views each, "
             f"{int((group == 2).sum())} inputs, {int(_sure(pf, group).sum())} of them with "
             "float32's top-1 probability ahead of the second by more than 0.1):", "",
             "| model | labelled: top-1 agreement | labelled: top-1 accuracy | ai-benchmark: "
             "agreement | skimage: agreement | skimage: on the confident inputs | max abs "
             "probability diff |", "|---|---:|---:|---:|---:|---:|---:|"]
    # the "int8-u8" preset as it was before GPTQ joined it: nearest rounding
    fine = _with(DW_FLOAT, keep_float=())
    variants = (
        ("weight-only int8 (float activations)", lambda: ember.quantize(model, None,
                                                                         "int8-weights")),
        ("int8, min-max observer", lambda: ember.quantize(model, calib)),
        ("int8, MSE observer", lambda: ember.quantize(model, calib,
                                                       _with(Scheme(), observer="mse"))),
        ("int8 u8 (unsigned codes, MSE, bias correction, nearest rounding), 16 crops",
         lambda: ember.quantize(model, calib, fine)),
        (f"int8 u8, {CALIBRATION} crops", lambda: ember.quantize(
            model, _calibration("numpy", CALIBRATION), fine)),
        (f"int8 u8, {CALIBRATION} crops, stem conv float", lambda: ember.quantize(
            model, _calibration("numpy", CALIBRATION),
            _with(fine, keep_float=("stem",)))),
        ("int8 u8, depthwise convs float",
         lambda: ember.quantize(model, calib, DW_FLOAT)),
        ("int8 u8, depthwise convs, stem, head and classifier float", lambda: ember.quantize(
            model, calib, _with(fine, keep_float=(
                "depthwise_conv", "stem", "head", "classifier")))),
        ("weight-only int8, GPTQ rounding (16 crops)", lambda: ember.quantize(
            model, calib, _with(Scheme.named("int8-weights"), **GPTQ))),
        ('weight-only `"int4"` (blocks of 64, searched scales; depthwise and small layers '
         "int8 per channel)", lambda: ember.quantize(model, None, "int4")),
        ('weight-only `"int4-gptq"` (the same, GPTQ rounding), 16 crops',
         lambda: ember.quantize(model, calib, "int4-gptq")),
        ("int8 u8 + GPTQ rounding, 16 crops", lambda: ember.quantize(
            model, calib, _with(fine, **GPTQ))),
        (f"int8 u8 + GPTQ, {CALIBRATION} crops", lambda: ember.quantize(
            model, _calibration("numpy", CALIBRATION), _with(fine, **GPTQ))),
        (f"int8 u8 + GPTQ, {CALIBRATION} crops, depthwise convs float", lambda: ember.quantize(
            model, _calibration("numpy", CALIBRATION),
            _with(fine, **GPTQ, keep_float=("depthwise_conv",)))),
        *[(f"int8 u8 + GPTQ, {CALIBRATION} crops, the {k} layers `sensitivity` ranks first "
           "float", lambda k=k: _sensitive_float(model, k)) for k in SENSITIVE],
        (_distill_label(distill or {}), lambda: _distilled(model, distill or {})),
    )
    for i, (name, make) in enumerate(variants, 1):
        if rows and i not in rows:
            continue
        start = time.perf_counter()
        q = make()
        if name.startswith("distilled"):
            name += f", {time.perf_counter() - start:.0f} s"
        lines.append(_row(name, pf, _probs(q, x), labels, group))
        print(lines[-1], flush=True)
    if not rows or len(variants) + 1 in rows:
        lines += bench_onnxruntime_accuracy(x, labels, group)
    if not rows or len(variants) + 2 in rows:
        lines += _noise_floor(model, x, pf, labels, group)
    return lines


def _accuracy_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """effnet-accuracy's inputs → (inputs, ImageNet labels (-1: none), group (0 labelled, 1
    ai-benchmark, 2 skimage), images per labelled set)."""
    from ember.demos.classify import load_image

    sets = _labelled_sets()
    labelled = [img for images, _ in sets.values() for img in images]
    classes = [c for _, cs in sets.values() for c in cs]
    photos = list(_photos().values())
    natural = _unlabelled_photos()
    x = np.concatenate([np.stack(_views(img)) for img in labelled]
                       + [np.stack([load_image(img) for img in natural])]
                       + [np.stack(_views(img)) for img in photos])
    group = np.repeat([0, 1, 2], [10 * len(labelled), len(natural), 10 * len(photos)])
    labels = np.full(len(x), -1)
    labels[group == 0] = np.repeat(classes, 10)
    return x, labels, group, {name: len(images) for name, (images, _) in sets.items()}


def _probs(model, x: np.ndarray) -> np.ndarray:
    """``model``'s class probabilities for ``x``, 20 inputs at a time."""
    with ember.no_grad():
        return np.concatenate([model(ember.tensor(x[i:i + 20])).softmax(dim=1).numpy()
                               for i in range(0, len(x), 20)])


def _sure(p: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The skimage inputs whose top-1 probability is ahead of the second by more than 0.1."""
    top2 = np.sort(p, axis=1)[:, -2:]
    return (top2[:, 1] - top2[:, 0] > 0.1) & (group == 2)


def _accuracy(p: np.ndarray, labels: np.ndarray, group: np.ndarray) -> float:
    return float((p[group == 0].argmax(1) == labels[group == 0]).mean())


def _row(name: str, pf: np.ndarray, pq: np.ndarray, labels: np.ndarray,
         group: np.ndarray) -> str:
    """One table row: ``pq`` against the float32 probabilities ``pf`` on each set."""
    same = pf.argmax(1) == pq.argmax(1)
    return (f"| {name} | {same[group == 0].mean():.1%} | {_accuracy(pq, labels, group):.1%} | "
            f"{same[group == 1].mean():.1%} | {same[group == 2].mean():.1%} | "
            f"{same[_sure(pf, group)].mean():.1%} | {np.abs(pf - pq).max():.3f} |")


def _noise_floor(model, x: np.ndarray, pf: np.ndarray, labels: np.ndarray,
                 group: np.ndarray) -> list[str]:
    """How far top-1 agreement moves under changes no one would call a different model: the
    float32 model on the inputs plus Gaussian noise of sigma 1/255 (half a grey level in the
    model's [-1, 1] scale), and with its weights rounded to float16."""
    rows = []
    noisy = x + np.random.default_rng(0).normal(0, 1 / 255, x.shape).astype(np.float32)
    half = _effnet()
    for p in half.parameters():
        p.assign(ember.tensor(p.numpy().astype(np.float16).astype(np.float32)))
    for name, m, inputs in (("float32, inputs + N(0, (1/255)²) noise (half a grey level)",
                             model, noisy), ("float32, weights rounded to float16", half, x)):
        rows.append(_row(f"reference: {name}", pf, _probs(m, inputs), labels, group))
        print(rows[-1], flush=True)
    return rows


def _sensitive_float(model, k: int):
    """int8 u8 + GPTQ with the ``k`` layers ``ember.quantize.sensitivity`` ranks first (on
    the calibration crops alone) kept float."""
    from ember.quantize import Scheme, sensitivity

    calib = _calibration("numpy", CALIBRATION)
    scheme = _with(Scheme.named("int8-u8"), **GPTQ)
    if _RANKING.get("scheme") != scheme:
        _RANKING.update(scheme=scheme, ranking=sensitivity(model, calib, scheme))
        print("sensitivity ranking (first 8):", _RANKING["ranking"][:8], flush=True)
    keep = tuple(path for path, _ in _RANKING["ranking"][:k])
    return ember.quantize(model, calib, _with(scheme, keep_float=keep))


def _distill_label(kw: dict) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in kw.items())
    photos = ("scikit-learn's two photos and grace_hopper.jpg" if kw.get("photos") == 3
              else "scikit-learn's two photos")
    return (f"distilled: int8 u8 + GPTQ, {CALIBRATION} crops, then `ember.quantize.distill` "
            f"on crops of {photos} ({shown})")


def _distilled(model, kw: dict):
    """``ember.quantize.distill`` from the "int8-u8" PTQ on the 64 calibration crops, trained
    on random crops of scikit-learn's two photos (``kw``: its steps, batch, lr..., and
    ``backend``: where the teacher runs and the student trains, e.g. wgpu on a GPU); the
    result is evaluated on numpy like the other rows."""
    kw = dict(kw)
    backend = kw.pop("backend", "numpy")
    images = _distill_images(kw.pop("photos", 2))  # 3: matplotlib's grace_hopper.jpg too
    teacher = model if backend == "numpy" else _effnet(backend)
    q = ember.quantize.distill(teacher, images, "int8-u8", size=224,
                               calibration=_calibration(backend, CALIBRATION), **kw)
    return q.to("numpy")


def bench_onnxruntime_accuracy(x: np.ndarray, labels: np.ndarray,
                               group: np.ndarray) -> list[str]:
    """The peer: onnxruntime's ``quantize_static`` (QDQ, int8 weights per channel, uint8
    activations) of the reference PyTorch model exported to ONNX, calibrated on the same
    crops, against onnxruntime's own float32 run of that model on the same inputs."""
    import onnxruntime as ort
    from bench_classify import export_onnx
    from ember.demos.efficientnet import weights_path
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    calib = _calibration("numpy").numpy()

    class Crops(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": calib[i:i + 1]} for i in range(len(calib))])

        def get_next(self):
            return next(self.feeds, None)

    def probs(path):
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        logits = np.concatenate([sess.run(None, {"x": x[i:i + 20]})[0]
                                 for i in range(0, len(x), 20)])
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        f32, pre = os.path.join(tmp, "f32.onnx"), os.path.join(tmp, "pre.onnx")
        export_onnx(weights_path(), f32)
        quant_pre_process(f32, pre)
        pf = probs(f32)
        for method in ("MinMax", "Entropy", "Percentile"):
            out = os.path.join(tmp, f"q_{method}.onnx")
            quantize_static(pre, out, Crops(), quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            calibrate_method=getattr(CalibrationMethod, method))
            lines.append(_row(f"peer: onnxruntime {ort.__version__} `quantize_static` (QDQ, "
                              f"per-channel int8 weights, uint8 activations, {method}), 16 "
                              "crops (against onnxruntime's float32)", pf, probs(out), labels,
                              group))
            print(lines[-1], flush=True)
    return lines


def bench_speed(backends: list[str], batch: int, repeat: int) -> list[str]:
    from ember.demos.mnist_model import mnist_cnn

    lines = ["| backend | model | batch | float32 | scheme, time | speed-up | max abs diff |",
             "|---|---|---:|---:|---:|---:|---:|"]
    record = []
    rng = np.random.default_rng(0)
    for be in backends:
        ember.seed(0)
        mnist = mnist_cnn().to(be).eval()
        mnist_x = ember.tensor(rng.uniform(-1, 2, (batch, 1, 28, 28)).astype(np.float32),
                               backend=be)
        models = [("EfficientNet-Lite0 224 px", _effnet(be), _calibration(be),
                   ember.tensor(rng.uniform(-1, 1, (batch, 3, 224, 224)).astype(np.float32),
                                backend=be)),
                  ("MNIST CNN", mnist, mnist_x, mnist_x)]
        for name, model, calib, x in models:
            u8 = ember.quantize.Scheme.named("int8-u8")
            qs = {"int8": ember.quantize(model, calib),
                  "int8-u8": ember.quantize(model, calib, u8),
                  "int8-u8 unchained": ember.quantize(model, calib, ember.quantize.Scheme(
                      **{**u8.to_dict(), "chain": False})),
                  "int8-u8, depthwise float": ember.quantize(model, calib, DW_FLOAT)}
            with ember.no_grad():
                yf = model(x).numpy()
                times = median_times([lambda: model(x).numpy()] + [
                    lambda q=q: q(x).numpy() for q in qs.values()], repeat)
                tf = times[0]
                for (label, q), t in zip(qs.items(), times[1:]):
                    y = q(x).numpy()
                    lines.append(f"| {be} | {name} | {batch} | {tf * 1e3:.1f} ms | {label} "
                                 f"{t * 1e3:.1f} ms | {tf / t:.2f}x | "
                                 f"{np.abs(yf - y).max():.3g} |")
                    print(lines[-1], flush=True)
                    record.append(row("quant", f"{name}, batch {batch}, \"{label}\" on {be}",
                                      t * 1e3, tf * 1e3, "ms", f"ember float32 on {be}"))
    gpu = "wgpu" in backends
    write_record(record, variant="-".join(backends) if set(backends) - {"numpy", "wasm"} else None,
                 device=ember.get_backend("wgpu").device if gpu else None)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="numpy,wasm")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--skip", default="")
    p.add_argument("--rows", default="", help="effnet-accuracy: only these rows (1-based, "
                   "comma-separated)")
    p.add_argument("--threads", default="1", help="BLAS threads (numpy)")
    p.add_argument("--distill-steps", type=int, default=200)
    p.add_argument("--distill-batch", type=int, default=16, help="crops per distill step")
    p.add_argument("--distill-lr", type=float, default=1e-5)
    p.add_argument("--distill-lr-in-codes", action="store_true",
                   help="--distill-lr in units of each layer's weight code step (try 0.02)")
    p.add_argument("--distill-loss", default="kl", choices=("kl", "mse"))
    p.add_argument("--distill-temperature", type=float, default=1.0)
    p.add_argument("--distill-learn-ranges", action="store_true")
    p.add_argument("--distill-mixup", type=float, default=0.0)
    p.add_argument("--distill-crop", default="0.15,0.8", help="crop area range (fractions)")
    p.add_argument("--distill-range-lr", type=float, default=1e-3)
    p.add_argument("--distill-photos", type=int, default=2, choices=(2, 3),
                   help="3: matplotlib's grace_hopper.jpg too")
    p.add_argument("--distill-backend", default="numpy",
                   help="where distill trains (wgpu: on the GPU; evaluated on numpy)")
    args = p.parse_args()
    distill = {"steps": args.distill_steps, "batch": args.distill_batch, "lr": args.distill_lr,
               "loss": args.distill_loss, "temperature": args.distill_temperature,
               "learn_ranges": args.distill_learn_ranges, "mixup": args.distill_mixup,
               "crop_scale": tuple(float(v) for v in args.distill_crop.split(",")),
               "range_lr": args.distill_range_lr, "lr_in_codes": args.distill_lr_in_codes,
               "photos": args.distill_photos, "backend": args.distill_backend}
    skip = {s for s in args.skip.split(",") if s}
    unknown = skip - set(SECTIONS)
    if unknown:
        p.error(f"--skip: unknown sections {sorted(unknown)}; valid: {', '.join(SECTIONS)}")
    print(f"## bench_quant {date.today()} on {platform.machine()} "
          f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}), numpy BLAS threads "
          f"{args.threads}\n")
    if "size" not in skip:
        print("\n".join(bench_size()) + "\n", flush=True)
    if "mnist" not in skip:
        print("\n".join(bench_mnist(args.epochs)) + "\n", flush=True)
    if "effnet-accuracy" not in skip:
        rows = {int(r) for r in args.rows.split(",") if r}
        print("\n".join(bench_effnet_accuracy(rows, distill)) + "\n", flush=True)
    if "speed" not in skip:
        lines = bench_speed(args.backend.split(","), args.batch, args.repeat)
        print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
