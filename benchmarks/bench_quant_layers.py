"""Where int8 wins or loses on wgpu: EfficientNet-Lite0's convolutions one by one, float32
against the ``ember.quantize`` int8 layer that replaces it, GPU kernel time from timestamp
queries (where the adapter has ``timestamp-query``: the H200 does; lavapipe does not, and
the table then holds wall times, a smoke test only).

    .venv/bin/python benchmarks/bench_quant_layers.py [--batch 32] [--repeat 10] [--scheme int8]
        [--size 224]

Each layer's input shape is recorded by running the float32 model once; the layer then runs
``--repeat`` times on that shape three ways, alternating: float32, int8 with float32 in and
out (each layer quantizing its input and rescaling its sums to float), and int8 *chained* —
codes in and codes out (``qconv2d``/``qlinear`` with ``out_scale``), as between the layers
of an int8 model: the stem takes the float image and ends in codes, the classifier takes
codes and ends in float logits. The table sums the time per layer kind (stem, 1x1,
depthwise, linear) and in total, with the dispatches each kind records per call. The whole
forward is measured the same way (wall and GPU time, dispatches), after a second of warm-up
so the GPU's clocks have risen; its GPU time is the median of ``--repeat`` profiled forwards,
float32 and int8 alternating. ``--size 64`` (a smaller image) runs on lavapipe in a minute.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

from _common import median_times, profile, write_record
from _common import row as record_row

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from ember import nn
from ember.quantize import functional as QF


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


def _calls(kind: str, qf, shape, rng, be):
    """The int8 layer ``qf`` on an input of ``shape``: ``(float in/out call, chained call)``,
    the chained one on random codes of its input's kind (uint8 for an unsigned layer) ending
    in uint8 codes at the layer's own input scale (the kernels run the same whatever the
    scale), the stem on a float image, the classifier ending in float logits."""
    lo, hi = (0, 255) if qf.unsigned else (-127, 127)
    xf = ember.tensor(rng.uniform(-1, 1, shape).astype(np.float32), backend=be)
    codes = rng.integers(lo, hi + 1, shape).astype(np.uint8 if qf.unsigned else np.int8)
    xc = xf if kind == "stem/other" else ember.tensor(codes, backend=be)
    head = (qf.weight, qf.weight_scale, qf.bias, qf.input_scale)
    if kind == "linear":
        return (lambda: QF.qlinear(xf, *head, qf.unsigned),
                lambda: QF.qlinear(xc, *head, qf.unsigned))
    geo = (qf.stride, qf.padding, qf.dilation, qf.groups, qf.unsigned)
    return (lambda: QF.qconv2d(xf, *head, *geo),
            lambda: QF.qconv2d(xc, *head, *geo, out_scale=qf.input_scale, out_range=(0, 255)))


def _timed(backend, fn, repeat: int) -> tuple[float, int]:
    """(ms per call, dispatches per call) of ``repeat`` calls of ``fn``: GPU time where the
    adapter has timestamp queries, else wall time up to the last result read."""
    import time

    t0 = time.perf_counter()
    d, _, gpu = profile(backend, lambda: [fn() for _ in range(repeat)][-1].numpy())
    ms = gpu if gpu is not None else (time.perf_counter() - t0) * 1e3
    return ms / repeat, d // repeat


def _whole(backend, model, q, x, repeat: int) -> tuple[list[str], dict]:
    """Rows for the whole forward: wall ms (median), GPU ms and dispatches per call; and those
    figures for the record."""
    import time

    run = [lambda m=m: m(x).numpy() for m in (model, q)]
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:  # warm up: pipelines compiled, clocks up
        run[0](), run[1]()
    wall = median_times(run, repeat)
    # GPU time: one profiled forward each, alternating, ``repeat`` times; the medians (a
    # single sample moves with the H200's clock by up to 1.7x)
    prof = [[profile(backend, f) for f in run] for _ in range(repeat)]
    gpu, ms = "n/a | n/a | n/a", None
    if prof[0][0][2] is not None:
        ms = [statistics.median(p[i][2] for p in prof) for i in (0, 1)]
        gpu = f"{ms[0]:.2f} | {ms[1]:.2f} | {ms[0] / ms[1]:.2f}x"
    return [f"| whole forward | {wall[0] * 1e3:.2f} | {wall[1] * 1e3:.2f} | "
            f"{wall[0] / wall[1]:.2f}x | {gpu} | {prof[0][0][0]} / {prof[0][1][0]} |"], {
        "wall": wall, "gpu": ms, "dispatches": (prof[0][0][0], prof[0][1][0])}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--scheme", default="int8", help="ember.quantize's preset (int8, int8-u8)")
    p.add_argument("--size", type=int, default=224, help="image size (64: a lavapipe smoke run)")
    p.add_argument("--per-layer", default="", help="also a row per layer of these kinds "
                   "(comma-separated: 1x1, depthwise, linear, stem/other)")
    args = p.parse_args()
    per_layer = {k for k in args.per_layer.split(",") if k}
    from ember.demos.efficientnet import pretrained

    be = "wgpu"
    rng = np.random.default_rng(0)
    model = pretrained(backend=be, fold=True)
    px = (3, args.size, args.size)
    calib = ember.tensor(rng.uniform(-1, 1, (4, *px)).astype(np.float32), backend=be)
    q = ember.quantize(model, calib, args.scheme)
    x = ember.tensor(rng.uniform(-1, 1, (args.batch, *px)).astype(np.float32), backend=be)
    backend = x.backend
    timed = "timestamp-query" in backend.rt.adapter.info.features
    with ember.no_grad():
        whole, figures = _whole(backend, model, q, x, args.repeat)
    # per kind: ms of float32, int8, int8 chained; layers; dispatches of the three
    totals = defaultdict(lambda: [0.0, 0.0, 0.0, 0, 0, 0, 0])
    rows = []
    with ember.no_grad():
        for kind, f, qf, shape in _layers(model, q, x):
            xi = ember.tensor(rng.uniform(-1, 1, shape).astype(np.float32), backend=be)
            fns = (lambda f=f, xi=xi: f(xi), *_calls(kind, qf, shape, rng, be))
            row = totals[kind]
            for _ in range(2):  # compile the pipelines, settle the pools
                for fn in fns:
                    fn().numpy()
            times = []
            for i, fn in enumerate(fns):
                ms, d = _timed(backend, fn, args.repeat)
                row[i] += ms
                row[4 + i] += d
                times.append(ms)
            row[3] += 1
            if kind in per_layer:
                k = getattr(f, "kernel_size", ("",))[0]
                s = getattr(f, "stride", ("",))[0]
                rows.append(f"| {kind} | {tuple(shape[1:])} | {k} | {s} | "
                            + " | ".join(f"{t:.3f}" for t in times)
                            + f" | {times[0] / times[2]:.2f}x |")
    unit = "GPU ms" if timed else "wall ms (no timestamp-query: a smoke run)"
    print(f"## bench_quant_layers {date.today()} on {platform.node()} "
          f"(load {os.getloadavg()[0]:.1f}), batch {args.batch}, EfficientNet-Lite0 "
          f"{args.size} px, scheme {args.scheme}, {unit}\n")
    print("| layers | count | float32 | int8 (float in/out) | int8 chained (codes in/out) | "
          "int8 speed-up | chained speed-up | dispatches f32 / int8 / chained |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    sums = [0.0, 0.0, 0.0]
    for kind, (tf, tq, tc, n, df, dq, dc) in sorted(totals.items()):
        sums = [a + b for a, b in zip(sums, (tf, tq, tc))]
        print(f"| {kind} | {n} | {tf:.2f} | {tq:.2f} | {tc:.2f} | {tf / tq:.2f}x | "
              f"{tf / tc:.2f}x | {df} / {dq} / {dc} |")
    print(f"| all | | {sums[0]:.2f} | {sums[1]:.2f} | {sums[2]:.2f} | {sums[0] / sums[1]:.2f}x | "
          f"{sums[0] / sums[2]:.2f}x | |\n")
    if rows:
        print("| layer | input (C, H, W) | kernel | stride | float32 | int8 | int8 chained | "
              "chained speed-up |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(rows) + "\n")
    print("| | float32 wall ms | int8 wall ms | speed-up | float32 GPU ms | int8 GPU ms | "
          "GPU speed-up | dispatches f32 / int8 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(whole))
    case = (f"EfficientNet-Lite0 {args.size} px, batch {args.batch}, \"{args.scheme}\" chained "
            "on wgpu")
    peer, (f32, i8) = "ember float32 on wgpu", figures["wall"]
    record = [record_row("quant", f"{case}, whole forward, wall", i8 * 1e3, f32 * 1e3, "ms",
                         peer, note="dispatches {} → {}".format(*figures["dispatches"]))]
    if figures["gpu"] is not None:
        record.append(record_row("quant", f"{case}, whole forward, GPU time", figures["gpu"][1],
                                 figures["gpu"][0], "ms", peer))
    record.append(record_row("quant", f"{case}, every layer alone, summed ({unit})", sums[2],
                             sums[0], "ms", peer))
    write_record(record, variant=None if args.size == 224 else f"{args.size}px",
                 device=backend.device)


if __name__ == "__main__":
    main()
