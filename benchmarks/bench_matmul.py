"""wgpu matmul (autotuned) against torch: float32 (TF32 off) and float16, square n×n @ n×n.

    PYTHONPATH=core python benchmarks/bench_matmul.py            # GPU: n = 1024, 2048, 4096
    PYTHONPATH=core python benchmarks/bench_matmul.py --small    # lavapipe / CI: n = 128, 256

The peer is torch CUDA when present (``allow_tf32 = False``), else torch CPU, else numpy.
Tuning is on (``EMBER_WGPU_TUNE=1`` unless set otherwise): the first call of each shape
times the candidate tiles once, outside the timed calls. Per row: wall ms (median of calls
alternating with the peer; ember's end with a one-element readback, torch's with
``torch.cuda.synchronize()``), kernel ms (ember: timestamp queries around the compute
passes, see ``_common.profile``; torch CUDA: CUDA events; averaged over ``REPS`` products),
TFLOP/s from the wall time and ember's share of the peer's rate (peer time / ember time).
Ends with the tuner's choices. The goals of issue 14: float32 ≥ 75 % of cuBLAS at 4096 and
≥ 50 % at 1024 in wall time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
os.environ.setdefault("EMBER_WGPU_TUNE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from _common import median_times, profile, row, write_record
from ember.backends.wgpu import tuning
from ember.tensordata import TensorData

REPS = 5  # products per kernel-time measurement
REPEAT = 15  # timed wall calls per library


def ember_case(b, n: int, dtype: str):
    """(one product ending in a readback, REPS products without one)."""
    rng = np.random.default_rng(0)
    x, y = (b.from_data(TensorData.from_numpy(rng.standard_normal((n, n)).astype(dtype)))
            for _ in range(2))
    first = ((0, 1, 1), (0, 1, 1))

    def wall():
        b.to_data(b.slice(b.float_matmul(x, y), first))

    def kernels():
        for _ in range(REPS):
            b.float_matmul(x, y)

    return wall, kernels


def peer_case(n: int, dtype: str):
    """(name, wall function, kernel ms per product or None)."""
    rng = np.random.default_rng(0)
    a, c = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    try:
        import torch
    except ImportError:
        return "numpy", lambda: a @ c, None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x, y = torch.from_numpy(a).to(dev), torch.from_numpy(c).to(dev)
    if dev == "cpu":
        return "torch CPU", lambda: x @ y, None

    def wall():
        x @ y
        torch.cuda.synchronize()

    def kernel_ms():
        wall()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPS):
            x @ y
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / REPS

    return "torch CUDA", wall, kernel_ms()


def fmt(v, spec=".3f"):
    return "—" if v is None else format(v, spec)


def main() -> None:
    small = "--small" in sys.argv
    sizes = (128, 256) if small else (1024, 2048, 4096)
    b = ember.get_backend("wgpu")
    dtypes = ["float32"] + (["float16"] if ember.dtype.float16 in b.caps.dtypes else [])
    print(f"adapter: {b.rt.info.name}; EMBER_WGPU_TUNE={os.environ['EMBER_WGPU_TUNE']}")
    if len(dtypes) == 1:
        print("float16: this adapter has no shader-f16, so the wgpu backend has no float16")
    print("| dtype | n | ember wall ms | ember kernel ms | peer | peer wall ms | peer kernel ms "
          "| ember TFLOP/s (wall) | ember/peer wall | ember/peer kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for dtype in dtypes:
        for n in sizes:
            wall, kernels = ember_case(b, n, dtype)
            wall()  # tunes this shape class (once), compiles, warms the allocator
            name, peer_wall, peer_kernel = peer_case(n, dtype)
            t_ember, t_peer = median_times([wall, peer_wall], repeat=REPEAT, warmup=1)
            _, _, gpu_ms = profile(b, lambda k=kernels: (k(), b.sync()))
            kernel = gpu_ms / REPS if gpu_ms is not None else None
            flops = 2 * n ** 3
            kernel_share = (None if kernel is None or peer_kernel is None
                            else peer_kernel / kernel)
            print(f"| {dtype} | {n} | {t_ember * 1e3:.3f} | {fmt(kernel)} | {name} | "
                  f"{t_peer * 1e3:.3f} | {fmt(peer_kernel)} | {flops / t_ember / 1e12:.3f} | "
                  f"{t_peer / t_ember:.0%} | {fmt(kernel_share, '.0%')} |")
            rows.append(row("gpu", f"matmul {dtype} {n}, wall", t_ember * 1e3, t_peer * 1e3,
                            "ms", name))
            if kernel is not None and peer_kernel is not None:
                rows.append(row("gpu", f"matmul {dtype} {n}, kernel", kernel, peer_kernel, "ms",
                                name))
            b.rt.allocator.empty_cache()
    for adapter, classes in (tuning.TUNER.choices or {}).items():
        print(f"tuned on {adapter}:")
        for cls, choice in sorted(classes.items()):
            print(f"  (n, m, k, batch, dtype) class {cls}: {choice}")
    write_record(rows, variant="small" if small else None, device=b.rt.info.name)


if __name__ == "__main__":
    main()
