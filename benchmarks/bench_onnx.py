"""ONNX inference: ember.onnx on the numpy backend vs onnxruntime CPU, side by side in one run.

    python benchmarks/bench_onnx.py [--repeat 20] [--threads 1] [--only NAME ...]

Models: the three PaddleOCR CNNs shipped in PyPI ``rapidocr-onnxruntime==1.4.4`` (install
``--no-deps``), the architecture-only CNNs in the onnx wheel (onnx/backend/test/data/light),
and the models ``onnx_models.py`` builds (a MiniLM-sized encoder, its int8 dynamically
quantized twin, a Loop/If recurrent cell, a CNN with SiLU and "SAME" max pooling).
Runs alternate between the two runtimes so both see the same machine load; each row gives the
median time per call and the ratio ember / onnxruntime (lower is better for ember), plus the
largest output difference relative to the output's magnitude (against ``onnx.reference`` for
the int8 model: onnxruntime's u8 x s8 kernels saturate on CPUs without VNNI). The CPU-time
ratio divides the median CPU time of the calling thread (``time.thread_time``; both run on
it with one thread) and moves less than wall time when other processes share the cores.
The process opts into
``ember.backends.numpy.tune_malloc`` (glibc keeps freed blocks; both runtimes share it).
``--threads`` (default 1) bounds both onnxruntime's intra-op threads and numpy's BLAS threads.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings


def _threads_from_argv() -> str:
    args = sys.argv[1:]
    return args[args.index("--threads") + 1] if "--threads" in args else "1"


# BLAS reads its thread count when numpy loads: set it first
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _threads_from_argv()

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "onnx"))
sys.path.insert(0, HERE)

from _common import row, write_record  # noqa: E402
from onnx_models import built  # noqa: E402
from real_models import SHAPES, light_models, rapidocr_models  # noqa: E402


def _cases(batch_sizes):
    out = []
    for name, path in rapidocr_models().items():
        for b in batch_sizes:
            out.append((f"{name} b{b}", path, (b,) + SHAPES[name][1:]))
    for name in ("light_resnet50", "light_squeezenet", "light_inception_v1", "light_densenet121"):
        path = light_models().get(name)
        if path:
            out.append((name, path, None))
    folder = os.path.join(tempfile.gettempdir(), "ember-bench-onnx-models")
    out += [(name, path, None) for name, path in built(folder).items()]
    return out


def _feeds(sess, shape) -> dict:
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        dims = list(shape) if shape else [d if isinstance(d, int) else 1 for d in i.shape]
        if i.type == "tensor(int64)":  # token ids
            feeds[i.name] = rng.integers(0, 1000, dims).astype(np.int64)
        else:
            feeds[i.name] = rng.random(dims, dtype=np.float32)
    return feeds


def _reference(path: str, feeds: dict):
    """``onnx.reference``'s output; the opset is raised to 21 for it (its DequantizeLinear
    starts at 19; the int8 semantics are the same)."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(path)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = max(o.version, 21)
    return ReferenceEvaluator(model).run(None, feeds)[0]


def bench(path, shape, repeat, threads):
    import ember.onnx
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = _feeds(sess, shape)
    model = ember.onnx.load(path, backend="numpy")
    xs = [ember.from_numpy(v) for v in feeds.values()]

    def run_ember():
        y = model(*xs)
        return (y if isinstance(y, tuple) else (y,))[0].numpy()

    def run_ort():
        return sess.run(None, feeds)[0]

    want, got = run_ort(), run_ember()  # warm-up (and the accuracy check)
    if "int8" in os.path.basename(path):
        want = _reference(path, feeds)
    err = float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))
    te, to, ce, co = [], [], [], []
    for _ in range(repeat):
        for run, wall, cpu in ((run_ember, te, ce), (run_ort, to, co)):
            t, c = time.perf_counter(), time.thread_time()
            run()
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - t)
    med = statistics.median
    return med(te), med(to), med(ce) / med(co), err


def _tune_malloc() -> None:
    """Opt into ember's glibc malloc tuning (as the training benchmarks do): it covers the
    whole process, so onnxruntime gets it too. Commits before ``tune_malloc`` existed applied
    it by default, so before/after runs compare alike."""
    try:
        from ember.backends.numpy import tune_malloc
    except ImportError:
        return
    tune_malloc()


def main() -> int:
    _tune_malloc()
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    ap.add_argument("--only", nargs="*", default=None, help="models to run, by name (rapidocr rows by model name)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import onnxruntime as ort

    print(f"ember.onnx (numpy backend, numpy {np.__version__}) vs onnxruntime "
          f"{ort.__version__} CPU — {datetime.date.today()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, {args.threads} thread(s), median of {args.repeat}\n")
    print("| model | input | ember ms | onnxruntime ms | ratio | CPU-time ratio | max rel. diff |")
    print("|---|---|---:|---:|---:|---:|---:|")
    rows = []
    for label, path, shape in _cases(args.batch):
        if args.only and not any(k == label or k in label.split() for k in args.only):
            continue
        try:
            te, to, cpu, err = bench(path, shape, args.repeat, args.threads)
        except Exception as e:  # noqa: BLE001 - one broken row shouldn't hide the others
            print(f"| {label} | | failed: {type(e).__name__}: {e} | | | | |")
            continue
        dims = "×".join(map(str, shape)) if shape else "declared"
        print(f"| {label} | {dims} | {te * 1e3:.2f} | {to * 1e3:.2f} | {te / to:.2f} | "
              f"{cpu:.2f} | {err:.1e} |", flush=True)
        rows.append(row("onnx", f"{label} ({dims})", te * 1e3, to * 1e3, "ms", "onnxruntime CPU",
                        note=f"CPU-time ratio {cpu:.2f}"))
    if rows:
        write_record(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
