"""ember on the numpy backend vs raw numpy, side by side in one run.

For each op and size: median time of ember and of the same computation in raw numpy, their
ratio (ember / numpy), and the per-op overhead (ember − numpy) in µs. Run:

    python benchmarks/bench_numpy_ops.py [--repeat 50] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import time

import ember
import ember.nn.functional as F
import numpy as np
from _common import median_time, row, write_record
from numpy.lib.stride_tricks import sliding_window_view


def numpy_conv2d(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Valid 3×3 conv (cross-correlation) with im2col through sliding_window_view."""
    patches = sliding_window_view(x, w.shape[2:], axis=(2, 3))  # N, C, H', W', kh, kw
    return np.einsum("nchwij,ocij->nohw", patches, w, optimize=True)


def cases(size: int, rng: np.random.Generator):
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    ea, eb = ember.tensor(a, backend="numpy"), ember.tensor(b, backend="numpy")
    channels, spatial = (4, size) if size <= 64 else (16, size // 8)
    x = rng.standard_normal((2, channels, spatial, spatial), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
    ex, ew = ember.tensor(x, backend="numpy"), ember.tensor(w, backend="numpy")
    yield "add", lambda: ea + eb, lambda: a + b
    yield "mul scalar", lambda: ea * 2.0, lambda: a * np.float32(2.0)
    yield "exp", lambda: ea.exp(), lambda: np.exp(a)
    yield "sum(dim=1)", lambda: ea.sum(dim=1), lambda: a.sum(axis=1)
    yield "max()", lambda: ea.max(), lambda: a.max()
    yield "matmul", lambda: ea @ eb, lambda: a @ b
    yield f"conv2d {x.shape}", lambda: F.conv2d(ex, ew), lambda: numpy_conv2d(x, w)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 1024])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"# ember-numpy vs numpy {np.__version__} — {platform.processor() or platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print("| op | size | ember µs | numpy µs | ratio | overhead µs |")
    print("|---|---|---:|---:|---:|---:|")
    rows = []
    for size in args.sizes:
        repeat = args.repeat if size <= 256 else max(5, args.repeat // 5)
        for name, ember_fn, numpy_fn in cases(size, rng):
            te, tn = median_time(ember_fn, repeat), median_time(numpy_fn, repeat)
            print(f"| {name} | {size} | {te * 1e6:.1f} | {tn * 1e6:.1f} | {te / tn:.2f} | "
                  f"{(te - tn) * 1e6:.1f} |")
            rows.append(row("cpu", f"{name}, n={size}", te * 1e6, tn * 1e6, "µs", "numpy"))
    write_record(rows)


if __name__ == "__main__":
    main()
