"""Fusion against eager on the same backend and against torch: a chain of 1,000 elementwise ops.

    .venv/bin/python benchmarks/bench_fusion.py                  # numpy, torch CPU
    .venv/bin/python benchmarks/bench_fusion.py --backend wgpu   # wgpu, torch CUDA when present

The chain is 250 steps of ``x = (x * 0.5 + y).tanh() - 0.25`` (1,000 ops: a scalar multiply,
a tensor add, a unary function, a scalar subtract) on float32 tensors of each size, ending with
a one-element read (ember) or ``torch.cuda.synchronize()`` so the device work is included.
Eager ember, ``Fusion`` over the same backend and torch run in alternation (medians). Reported
per size: µs/op, dispatches (wgpu) or fused programs (numpy) per chain, and the ratios. On wgpu,
when the adapter has ``timestamp-query``, the kernels' own time per op from timestamp queries
around each compute pass (the adapter's own GPU timer); otherwise that column
says why it is missing.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import date
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from _common import median_times, row, write_record

OPS = 1000


def chain(x, y):
    for _ in range(OPS // 4):
        x = (x * 0.5 + y).tanh() - 0.25
    return x


def ember_case(backend, shape):
    """A call running the chain on ``backend`` and reading one element back."""
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal(shape, dtype=np.float32), backend=backend)
    y = ember.tensor(rng.standard_normal(shape, dtype=np.float32), backend=backend)
    return lambda: chain(x, y)[0, 0].item()


def torch_case(shape):
    try:
        import torch
    except ImportError:
        return None, "torch not installed"
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    x = torch.randn(shape, device=device)
    y = torch.randn(shape, device=device)

    def run():
        with torch.no_grad():
            out = chain(x, y)
        if cuda:
            torch.cuda.synchronize()
        return out

    return run, f"torch {torch.__version__} {device}"


def counters(backend):
    """A function returning the work counter of ``backend``: wgpu dispatches, or the fused
    programs of a Fusion over numpy."""
    inner = getattr(backend, "inner", None) or backend
    if hasattr(inner, "rt"):
        return lambda: inner.rt.engine.dispatches, "dispatches"
    if hasattr(backend, "programs"):
        return lambda: backend.programs, "programs"
    return None, "ops"


def per_chain(fn, backend) -> str:
    count, _ = counters(backend)
    if count is None:
        return str(OPS)
    before = count()
    fn()
    return str(count() - before)


# ---------------------------------------------------------------------- GPU timestamps
def gpu_us_per_op(backend, make, shape, repeat: int) -> float:
    """Kernel µs per op from the adapter's timestamp queries (``start_gpu_timer``)."""
    adapter = backend.rt.adapter
    fn = ember_case(make(backend), shape)
    fn()
    adapter.start_gpu_timer()
    try:
        for _ in range(repeat):
            fn()
        return adapter.gpu_seconds() / repeat / OPS * 1e6
    finally:
        adapter.stop_gpu_timer()  # timed passes cost a little: never in the timed calls


# ---------------------------------------------------------------------- main
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="numpy", help="numpy (default) or wgpu")
    parser.add_argument("--sizes", default="32x32,1024x1024",
                        help="comma-separated shapes, e.g. 32x32,1024x1024")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    eager = ember.get_backend(args.backend)
    fused = ember.Fusion(eager)
    shapes = [tuple(int(s) for s in size.split("x")) for size in args.sizes.split(",")]
    no_timestamps = "numpy has no GPU"
    if args.backend == "wgpu":
        features = eager.rt.adapter.info.features
        no_timestamps = None if "timestamp-query" in features else "no timestamp-query"
    print(f"# Fusion: a chain of {OPS:,} elementwise ops ({date.today()}, {platform.node()}, "
          f"{eager.device}, Python {platform.python_version()})\n")
    _, unit = counters(fused)
    gpu_col = " GPU µs/op eager / fused |" if args.backend == "wgpu" else ""
    print(f"| size | eager µs/op | Fusion µs/op | torch µs/op | Fusion/eager | Fusion/torch "
          f"| {unit}/chain eager / Fusion |{gpu_col}")
    print(f"|---|---|---|---|---|---|---|{'---|' if gpu_col else ''}")
    rows = []
    for shape in shapes:
        run_eager, run_fused = ember_case(eager, shape), ember_case(fused, shape)
        run_torch, peer = torch_case(shape)
        fns = [run_eager, run_fused] + ([run_torch] if run_torch else [])
        times = [t / OPS * 1e6 for t in median_times(fns, args.repeat)]
        t_torch = times[2] if run_torch else float("nan")
        counts = f"{per_chain(run_eager, eager)} / {per_chain(run_fused, fused)}"
        gpu = ""
        if gpu_col:
            if no_timestamps:
                gpu = f" n/a ({no_timestamps}) |"
            else:
                g_eager = gpu_us_per_op(eager, lambda b: b, shape, args.repeat)
                g_fused = gpu_us_per_op(eager, ember.Fusion, shape, args.repeat)
                gpu = f" {g_eager:.2f} / {g_fused:.3f} |"
        size = "×".join(map(str, shape))
        print(f"| {size} | {times[0]:.2f} | {times[1]:.2f} | {t_torch:.2f} "
              f"| {times[1] / times[0]:.2f} | {times[1] / t_torch:.2f} | {counts} |{gpu}")
        if run_torch:
            rows.append(row("gpu" if args.backend == "wgpu" else "cpu",
                            f"chain of {OPS:,} elementwise ops, {size}, Fusion({args.backend})",
                            times[1], t_torch, "µs/op", f"{peer} eager",
                            note=f"eager ember {times[0]:.3g} µs/op"))
    print(f"\npeer: {peer}")
    if rows:
        write_record(rows, variant=None if args.backend == "numpy" else args.backend,
                     device=eager.device if args.backend == "wgpu" else None)


if __name__ == "__main__":
    main()
