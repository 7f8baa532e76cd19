"""ONNX on numpy: the fast plan vs ``ember.jit`` + the numpy tape compiler vs onnxruntime.

    python benchmarks/bench_onnx_compile.py [--repeat 7] [--only NAME ...] [--profile]

The models of ``bench_onnx.py`` (PaddleOCR CNNs at batch 1, the onnx wheel's light CNNs, the
models ``onnx_models.py`` builds). Per model, three runners called in turn, call by call, so
they see the same machine load: (a) ``ember.onnx.load``'s module as it runs by default on
numpy (the fast plan, ``onnx/_fastnp``), (b) the same file loaded again and called through
``ember.jit`` (traced once, replayed by ``NumpyBackend.compile_tape``), (c) onnxruntime CPU,
(d) like (b) but replayed by ``compile_generic`` (the jit's compiler before numpy had one).
One thread each. Prints the median wall time of each, the ratios b/a, b/c and b/d (of wall
time, and of the calling thread's CPU time, ``time.thread_time``), and each
ember runner's largest difference from onnxruntime (from ``onnx.reference`` for the int8
model) relative to the output's magnitude. ``--profile``: the functions where (a) and (b)
spend their time (cProfile, by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import os
import pstats
import statistics
import sys
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import row, write_record  # noqa: E402
from bench_onnx import _cases, _feeds, _reference, _tune_malloc  # noqa: E402
from ember.contract.program import compile_generic  # noqa: E402


def _first(y):
    return (y if isinstance(y, tuple) else (y,))[0].numpy()


def runners(path, shape):
    """``{label: fn}`` for the three runners and the feeds."""
    import ember
    import ember.onnx
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = _feeds(sess, shape)
    fast = ember.onnx.load(path, backend="numpy")
    compiled = ember.jit(ember.onnx.load(path, backend="numpy"), warmup=0)
    generic = ember.jit(ember.onnx.load(path, backend="numpy"), warmup=0)
    xs = [ember.from_numpy(v) for v in feeds.values()]
    generic(*xs)  # traces; its replays then run compile_generic
    for entry in generic.entries.values():
        entry.run = compile_generic(entry.tape)
    return {"fast plan": lambda: _first(fast(*xs)),
            "jit + compile_tape": lambda: _first(compiled(*xs)),
            "onnxruntime": lambda: sess.run(None, feeds)[0],
            "jit + compile_generic": lambda: _first(generic(*xs))}, feeds, compiled


def _profile(fn, calls: int = 3) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    return out.getvalue()


def bench(path, shape, repeat, profile):
    run, feeds, compiled = runners(path, shape)
    want = run["onnxruntime"]()
    if "int8" in os.path.basename(path):
        want = _reference(path, feeds)
    scale = float(np.abs(want).max()) or 1.0
    errs = {}
    for label in ("fast plan", "jit + compile_tape", "jit + compile_generic"):
        for _ in range(2):  # (a): records dtypes, then builds its plan; (b): traces, replays
            got = run[label]()
        errs[label] = float(np.abs(got - want).max()) / scale
    if compiled.stats()["traces"] != 1:
        raise RuntimeError(f"the jitted module traced {compiled.stats()['traces']} times")
    times = {k: [] for k in run}
    cpu = {k: [] for k in run}
    for _ in range(repeat):
        for label, fn in run.items():
            t, c = time.perf_counter(), time.thread_time()
            fn()
            cpu[label].append(time.thread_time() - c)
            times[label].append(time.perf_counter() - t)
    if profile:
        for label in ("fast plan", "jit + compile_tape"):
            print(f"\n#### {label}\n```\n{_profile(run[label])}```\n")
    med = statistics.median
    return {k: med(v) for k, v in times.items()}, {k: med(v) for k, v in cpu.items()}, errs


def main() -> int:
    _tune_malloc()
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import onnxruntime as ort

    print(f"ONNX on numpy {np.__version__}: fast plan (a) vs ember.jit + compile_tape (b) vs "
          f"onnxruntime {ort.__version__} (c) — {datetime.date.today()}, 1 thread, median of "
          f"{args.repeat}, alternating call by call; ratios of wall time and, in brackets, of "
          f"the calling thread's CPU time (moves less when other processes share the cores)\n")
    print("| model | (a) fast plan ms | (b) jit ms | (c) onnxruntime ms | (d) generic ms | b/a "
          "| b/c | b/d | rel. err a | rel. err b |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for label, path, shape in _cases([1]):
        if args.only and not any(k == label or k in label.split() for k in args.only):
            continue
        try:
            t, cpu, err = bench(path, shape, args.repeat, args.profile)
        except Exception as e:  # noqa: BLE001 - one broken row shouldn't hide the others
            print(f"| {label} | failed: {type(e).__name__}: {str(e)[:200]} | | | | | | | | |")
            continue
        a, b, c = t["fast plan"], t["jit + compile_tape"], t["onnxruntime"]
        d = t["jit + compile_generic"]
        ca, cb, cc, cd = (cpu[k] for k in ("fast plan", "jit + compile_tape", "onnxruntime",
                                           "jit + compile_generic"))
        print(f"| {label} | {a * 1e3:.2f} | {b * 1e3:.2f} | {c * 1e3:.2f} | {d * 1e3:.2f} | "
              f"{b / a:.2f} ({cb / ca:.2f}) | {b / c:.2f} ({cb / cc:.2f}) | {b / d:.2f} "
              f"({cb / cd:.2f}) | {err['fast plan']:.1e} | {err['jit + compile_tape']:.1e} |",
              flush=True)
        rows.append(row("onnx", f"{label}, numpy jit + compile_tape", b * 1e3, c * 1e3, "ms",
                        "onnxruntime CPU", note=f"today's fast plan {a * 1e3:.2f} ms "
                        f"(b/a {b / a:.2f}, CPU time {cb / ca:.2f})"))
    if rows and not args.only:
        write_record(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
