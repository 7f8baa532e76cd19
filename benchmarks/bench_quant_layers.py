"""Where int8 wins or loses on wgpu: EfficientNet-Lite0's convolutions one by one, float32
against the ``ember.quantize`` int8 layer that replaces it, GPU kernel time from timestamp
queries (the adapter needs ``timestamp-query``: the H200 has it, lavapipe does not).

    .venv/bin/python benchmarks/bench_quant_layers.py [--batch 32] [--repeat 10] [--scheme int8]

Each layer's input shape is recorded by running the float32 model once; the layer and its
quantized twin then run ``--repeat`` times each on that shape, alternating, and the table
sums the GPU time per layer kind (stem, 1x1, depthwise, head) and in total, with the
dispatches each kind records per call. The whole forward is measured the same way (wall and
GPU time, dispatches), after a second of warm-up so the GPU's clocks have risen.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

from _common import median_times, profile

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from ember import nn


def _kind(conv) -> str:
    if conv.groups > 1 and conv.groups == conv.in_channels:
        return "depthwise"
    if conv.kernel_size == (1, 1) or conv.kernel_size == 1:
        return "1x1"
    return "stem/other"


def _layers(model, q, x):
    """(kind, float layer, quantized layer, input shape) for every Conv2d/Linear of ``model``
    in the order the forward reaches them."""
    quantized = dict(q.named_modules())
    shapes: dict[str, tuple] = {}
    handles = []
    for name, m in model.named_modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)) and name in quantized:
            handles.append(m.register_forward_hook(
                lambda mod, args, out, name=name: shapes.update({name: args[0].shape})))
    with ember.no_grad():
        model(x).numpy()
    for h in handles:
        h.remove()
    mods = dict(model.named_modules())
    return [(_kind(mods[n]) if isinstance(mods[n], nn.Conv2d) else "linear", mods[n],
             quantized[n], s) for n, s in shapes.items()]


def _whole(backend, model, q, x, repeat: int) -> list[str]:
    """Rows for the whole forward: wall ms (median), GPU ms and dispatches per call."""
    import time

    run = [lambda m=m: m(x).numpy() for m in (model, q)]
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:  # warm up: pipelines compiled, clocks up
        run[0](), run[1]()
    wall = median_times(run, repeat)
    prof = [profile(backend, f) for f in run]
    return [f"| whole forward | {wall[0] * 1e3:.2f} | {wall[1] * 1e3:.2f} | "
            f"{wall[0] / wall[1]:.2f}x | {prof[0][2]:.2f} | {prof[1][2]:.2f} | "
            f"{prof[0][2] / prof[1][2]:.2f}x | {prof[0][0]} / {prof[1][0]} |"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--scheme", default="int8", help="ember.quantize's preset (int8, int8-u8)")
    args = p.parse_args()
    from ember.demos.efficientnet import pretrained

    be = "wgpu"
    rng = np.random.default_rng(0)
    model = pretrained(backend=be, fold=True)
    calib = ember.tensor(rng.uniform(-1, 1, (4, 3, 224, 224)).astype(np.float32), backend=be)
    q = ember.quantize(model, calib, args.scheme)
    x = ember.tensor(rng.uniform(-1, 1, (args.batch, 3, 224, 224)).astype(np.float32),
                     backend=be)
    backend = x.backend
    with ember.no_grad():
        whole = _whole(backend, model, q, x, args.repeat)
    totals = defaultdict(lambda: [0.0, 0.0, 0, 0, 0])  # f32 ms, int8 ms, layers, f32 d, int8 d
    with ember.no_grad():
        for kind, f, qf, shape in _layers(model, q, x):
            xi = ember.tensor(rng.uniform(-1, 1, shape).astype(np.float32), backend=be)
            row = totals[kind]
            for _ in range(2):  # compile the pipelines, settle the pools
                f(xi).numpy(), qf(xi).numpy()
            for i, layer in enumerate((f, qf)):
                d, _, gpu = profile(backend, lambda layer=layer: [
                    layer(xi) for _ in range(args.repeat)][-1].numpy())
                if gpu is None:
                    sys.exit("bench_quant_layers: the adapter has no timestamp-query")
                row[i] += gpu / args.repeat
                row[3 + i] += d // args.repeat
            row[2] += 1
    print(f"## bench_quant_layers {date.today()} on {platform.node()} "
          f"(load {os.getloadavg()[0]:.1f}), batch {args.batch}, EfficientNet-Lite0 224 px, "
          f"scheme {args.scheme}\n")
    print("| layers | count | float32 GPU ms | int8 GPU ms | int8 speed-up | dispatches f32 / int8 |")
    print("|---|---:|---:|---:|---:|---:|")
    sums = [0.0, 0.0]
    for kind, (tf, tq, n, df, dq) in sorted(totals.items()):
        sums[0] += tf
        sums[1] += tq
        print(f"| {kind} | {n} | {tf:.2f} | {tq:.2f} | {tf / tq:.2f}x | {df} / {dq} |")
    print(f"| all | | {sums[0]:.2f} | {sums[1]:.2f} | {sums[0] / sums[1]:.2f}x | |\n")
    print("| | float32 wall ms | int8 wall ms | speed-up | float32 GPU ms | int8 GPU ms | "
          "GPU speed-up | dispatches f32 / int8 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(whole))


if __name__ == "__main__":
    main()
