"""The wgpu subgroup kernels against the plain ones: reductions and softmax, same inputs.

    .venv/bin/python benchmarks/bench_subgroups.py            # GPU sizes
    .venv/bin/python benchmarks/bench_subgroups.py --small    # lavapipe sizes

Each case runs with ``EMBER_WGPU_SUBGROUPS=0`` (plain kernels) and ``=1`` (subgroup kernels, on
CPU emulation too) in alternation, each call ending with a read so the device work is included;
medians of wall ms, and the kernel ms of one call from timestamp queries where the adapter has
them. ``ratio`` is plain / subgroup (above 1: the subgroup kernel is faster).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember  # noqa: E402
from ember.tensordata import TensorData  # noqa: E402
from _common import median_times, profile, row, write_record  # noqa: E402

SMALL = [((64, 4097), "sum"), ((1000, 256), "sum"), ((256, 1000), "max"), ((128, 1000), "argmax"),
         ((512, 1000), "softmax"), ((16, 32768), "softmax")]
LARGE = [((4096, 4096), "sum"), ((64, 1 << 20), "sum"), ((4096, 4096), "max"),
         ((4096, 4096), "argmax"), ((4096, 4096), "softmax"), ((32768, 1024), "log_softmax"),
         ((64, 1 << 16), "softmax")]


def call(b, op, x):
    if op in ("softmax", "log_softmax"):
        return getattr(b, op)(x, 1)
    if op == "argmax":
        return b.float_argmax(x, 1)
    return getattr(b, "float_" + op)(x, (1,))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small sizes (lavapipe, CI)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    b = ember.get_backend("wgpu")
    print(f"adapter: {b.rt.info.name}; subgroup feature: {'subgroup' in b.rt.info.features}")
    rng = np.random.default_rng(0)
    print(f"{'op':12s} {'shape':16s} {'plain ms':>9s} {'subgr ms':>9s} {'ratio':>6s}"
          f" {'plain GPU':>10s} {'subgr GPU':>10s}")
    rows = []
    for shape, op in SMALL if args.small else LARGE:
        x = b.from_data(TensorData.from_numpy(rng.standard_normal(shape).astype(np.float32)))

        def run(mode, op=op, x=x):
            os.environ["EMBER_WGPU_SUBGROUPS"] = mode
            b.to_data(call(b, op, x)).to_numpy().flat[0]

        plain, sub = median_times([lambda: run("0"), lambda: run("1")], args.repeat)
        gpu = [profile(b, lambda m=m: run(m))[2] for m in "01"]
        gtxt = [f"{g:10.3f}" if g is not None else f"{'n/a':>10s}" for g in gpu]
        print(f"{op:12s} {str(shape):16s} {plain * 1e3:9.2f} {sub * 1e3:9.2f} "
              f"{plain / sub:6.2f} {gtxt[0]} {gtxt[1]}")
        case = f"{op} {shape[0]}×{shape[1]}, subgroup kernel"
        rows.append(row("gpu", f"{case}, wall", sub * 1e3, plain * 1e3, "ms", "the plain kernel"))
        if None not in gpu:
            rows.append(row("gpu", f"{case}, GPU time", gpu[1], gpu[0], "ms", "the plain kernel"))
    os.environ.pop("EMBER_WGPU_SUBGROUPS", None)
    write_record(rows, variant="small" if args.small else None, device=b.rt.info.name)


if __name__ == "__main__":
    main()
