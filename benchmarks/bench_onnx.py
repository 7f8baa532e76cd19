"""ONNX inference: ember.onnx on the numpy backend vs onnxruntime CPU, side by side in one run.

    python benchmarks/bench_onnx.py [--repeat 20] [--threads N]

Models: the three PaddleOCR CNNs shipped in PyPI ``rapidocr-onnxruntime==1.4.4`` (install
``--no-deps``) and the architecture-only CNNs in the onnx wheel (onnx/backend/test/data/light).
Runs alternate between the two runtimes so both see the same machine load; each row gives the
median time per call and the ratio ember / onnxruntime (lower is better for ember), plus the
largest output difference relative to the output's magnitude. onnxruntime gets ``--threads``
intra-op threads (default: the same number numpy's BLAS would use, i.e. all cores).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "onnx"))

from real_models import SHAPES, light_models, rapidocr_models


def _cases(batch_sizes):
    out = []
    for name, path in rapidocr_models().items():
        for b in batch_sizes:
            out.append((f"{name} b{b}", path, (b,) + SHAPES[name][1:]))
    for name in ("light_resnet50", "light_squeezenet", "light_inception_v1", "light_densenet121"):
        path = light_models().get(name)
        if path:
            out.append((name, path, None))
    return out


def bench(path, shape, repeat, threads):
    import ember.onnx
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        dims = list(shape) if shape else [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.random(dims, dtype=np.float32)
    model = ember.onnx.load(path, backend="numpy")
    xs = [ember.from_numpy(v) for v in feeds.values()]

    def run_ember():
        y = model(*xs)
        return (y if isinstance(y, tuple) else (y,))[0].numpy()

    def run_ort():
        return sess.run(None, feeds)[0]

    want, got = run_ort(), run_ember()  # warm-up (and the accuracy check)
    err = float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))
    te, to = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        run_ember()
        te.append(time.perf_counter() - t)
        t = time.perf_counter()
        run_ort()
        to.append(time.perf_counter() - t)
    return statistics.median(te), statistics.median(to), err


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import onnxruntime as ort

    print(f"ember.onnx (numpy backend, numpy {np.__version__}) vs onnxruntime "
          f"{ort.__version__} CPU — {datetime.date.today()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, median of {args.repeat}\n")
    print("| model | input | ember ms | onnxruntime ms | ratio | max rel. diff |")
    print("|---|---|---:|---:|---:|---:|")
    for label, path, shape in _cases(args.batch):
        try:
            te, to, err = bench(path, shape, args.repeat, args.threads)
        except Exception as e:  # noqa: BLE001 - one broken row shouldn't hide the others
            print(f"| {label} | | failed: {type(e).__name__}: {e} | | | |")
            continue
        dims = "×".join(map(str, shape)) if shape else "declared"
        print(f"| {label} | {dims} | {te * 1e3:.2f} | {to * 1e3:.2f} | {te / to:.1f} | "
              f"{err:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
