"""ONNX on numpy: ``ember.onnx.load``'s compiled path vs onnxruntime (and vs an older commit).

    python benchmarks/bench_onnx_compile.py [--repeat 7] [--only NAME ...] [--profile]
                                            [--baseline COMMIT]

The models of ``bench_onnx.py`` (PaddleOCR CNNs at batch 1, the onnx wheel's light CNNs, the
models ``onnx_models.py`` builds), then the small graphs of ``onnx_data_dependent.py`` whose
nodes read values from data (guards, host nodes). Per model, the runners called in turn, call
by call, so they see the same machine load: (a) ``ember.onnx.load``'s module as it runs by default on
numpy (traced by ``ember.jit`` per input signature, replayed by ``NumpyBackend.compile_tape``;
``onnx/_segments``), (b) with ``--baseline COMMIT``, the same file loaded by that commit's
ember (its ``core/ember`` exported from git and imported as ``ember_baseline``: 225f3b3 is the
last commit with the numpy "fast plan"), (c) onnxruntime CPU, (d) (a)'s tapes replayed by
``compile_generic`` (the jit's compiler before numpy had one). One thread each. Prints the
median wall time of each, the ratios a/b, a/c and a/d (of wall time, and of the calling
thread's CPU time, ``time.thread_time``), each ember runner's largest difference from
onnxruntime (from ``onnx.reference`` for the int8 model) relative to the output's magnitude,
and (a)'s segments and host nodes. ``--profile``: the functions where (a) and (b) spend their
time (cProfile, by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import importlib
import io
import os
import pstats
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import row, write_record  # noqa: E402
from bench_onnx import _cases, _feeds, _reference, _tune_malloc  # noqa: E402
from onnx_data_dependent import cases as data_dependent_cases  # noqa: E402
from ember.contract.program import compile_generic  # noqa: E402

PIPELINE, BASELINE, ORT, GENERIC = ("compiled path", "baseline", "onnxruntime",
                                    "compile_generic")


def baseline_package(commit: str):
    """``ember`` as it was at ``commit``, imported as ``ember_baseline`` (its ``core/ember``
    from ``git archive``, every ``ember`` name in its sources renamed)."""
    folder = tempfile.mkdtemp(prefix="ember-baseline-")
    archive = subprocess.run(["git", "archive", commit, "core/ember"], cwd=os.path.dirname(HERE),
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    package = os.path.join(folder, "ember_baseline")
    os.rename(os.path.join(folder, "core", "ember"), package)
    for root, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    text = re.sub(r"\bember\b", "ember_baseline", f.read())
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    sys.path.insert(0, folder)
    importlib.import_module("ember_baseline.onnx")
    return sys.modules["ember_baseline"]


def _first(y):
    return (y if isinstance(y, tuple) else (y,))[0].numpy()


def _segments(module) -> list:
    return [seg for d in module._segments.values() for seg in d.segments() if seg.fn.entries]


def runners(path, shape, baseline, feeds=None):
    """``{label: fn}`` for the runners, the feeds (random ones of ``shape`` unless given)
    and the module of (a)."""
    import ember
    import ember.onnx
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = feeds if feeds is not None else _feeds(sess, shape)
    compiled = ember.onnx.load(path, backend="numpy")
    generic = ember.onnx.load(path, backend="numpy")
    xs = [ember.from_numpy(v) for v in feeds.values()]
    generic(*xs)  # traces; its replays then run compile_generic
    for seg in _segments(generic):
        for entry in seg.fn.entries.values():
            entry.run = compile_generic(entry.tape)
    run = {PIPELINE: lambda: _first(compiled(*xs))}
    if baseline is not None:
        old = baseline.onnx.load(path, backend="numpy")
        old_xs = [baseline.from_numpy(v) for v in feeds.values()]
        run[BASELINE] = lambda: _first(old(*old_xs))
    run[ORT] = lambda: sess.run(None, feeds)[0]
    run[GENERIC] = lambda: _first(generic(*xs))
    return run, feeds, compiled


def _profile(fn, calls: int = 3) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    return out.getvalue()


def bench(path, shape, repeat, profile, baseline, feeds=None):
    run, feeds, compiled = runners(path, shape, baseline, feeds)
    want = run[ORT]()
    if "int8" in os.path.basename(path):
        want = _reference(path, feeds)
    scale = float(np.abs(want).max()) or 1.0
    errs = {}
    for label in run:
        if label != ORT:
            for _ in range(2):  # first call: traces (the baseline's: records dtypes)
                got = run[label]()
            errs[label] = float(np.abs(got - want).max()) / scale
    stats = compiled.jit_stats()
    if stats["traces"] != stats["segments"] and stats["host_nodes"] == 0:
        raise RuntimeError(f"the module traced {stats['traces']} times in "
                           f"{stats['segments']} segments")
    times = {k: [] for k in run}
    cpu = {k: [] for k in run}
    for _ in range(repeat):
        for label, fn in run.items():
            t, c = time.perf_counter(), time.thread_time()
            fn()
            cpu[label].append(time.thread_time() - c)
            times[label].append(time.perf_counter() - t)
    if profile:
        for label in (PIPELINE, BASELINE):
            if label in run:
                print(f"\n#### {label}\n```\n{_profile(run[label])}```\n")
    med = statistics.median
    return ({k: med(v) for k, v in times.items()}, {k: med(v) for k, v in cpu.items()}, errs,
            stats)


def main() -> int:
    _tune_malloc()
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--baseline", default=None, help="a commit whose ember runs as (b)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import onnxruntime as ort

    baseline = baseline_package(args.baseline) if args.baseline else None
    b = f"commit {args.baseline} (b) vs " if baseline else ""
    print(f"ONNX on numpy {np.__version__}: ember.onnx.load's compiled path (a) vs {b}"
          f"onnxruntime {ort.__version__} (c) vs compile_generic (d) — {datetime.date.today()}, "
          f"1 thread, median of {args.repeat}, alternating call by call; ratios of wall time "
          "and, in brackets, of the calling thread's CPU time (moves less when other processes "
          "share the cores)\n")
    cols = ["(a) compiled ms", *(["(b) baseline ms"] if baseline else []), "(c) onnxruntime ms",
            "(d) generic ms", *(["a/b"] if baseline else []), "a/c", "a/d", "rel. err a",
            *(["rel. err b"] if baseline else []), "segments / host nodes"]
    print("| model | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * (len(cols) - 1) + "---|")
    rows = []
    folder = os.path.join(tempfile.gettempdir(), "ember-bench-onnx-data-dependent")
    cases = [(label, path, shape, None) for label, path, shape in _cases([1])]
    cases += [(label, path, None, feeds) for label, path, feeds in data_dependent_cases(folder)]
    for label, path, shape, feeds in cases:
        if args.only and not any(k == label or k in label.split() for k in args.only):
            continue
        try:
            t, cpu, err, stats = bench(path, shape, args.repeat, args.profile, baseline, feeds)
        except Exception as e:  # noqa: BLE001 - one broken row shouldn't hide the others
            print(f"| {label} | failed: {type(e).__name__}: {str(e)[:200]} |" + " |" * (
                len(cols) - 1))
            continue

        def ratio(k):
            return f"{t[PIPELINE] / t[k]:.2f} ({cpu[PIPELINE] / cpu[k]:.2f})"

        cells = [f"{t[PIPELINE] * 1e3:.2f}",
                 *([f"{t[BASELINE] * 1e3:.2f}"] if baseline else []),
                 f"{t[ORT] * 1e3:.2f}", f"{t[GENERIC] * 1e3:.2f}",
                 *([ratio(BASELINE)] if baseline else []), ratio(ORT), ratio(GENERIC),
                 f"{err[PIPELINE]:.1e}", *([f"{err[BASELINE]:.1e}"] if baseline else []),
                 f"{stats['segments']} / {stats['host_nodes']}"]
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
        note = (f"commit {args.baseline}: {t[BASELINE] * 1e3:.2f} ms; a/b "
                f"{t[PIPELINE] / t[BASELINE]:.2f}, CPU time {cpu[PIPELINE] / cpu[BASELINE]:.2f}"
                ) if baseline else None
        rows.append(row("onnx", f"{label}, numpy ember.onnx.load (compiled)", t[PIPELINE] * 1e3,
                        t[ORT] * 1e3, "ms", "onnxruntime CPU", note=note))
    if rows and not args.only:
        write_record(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
