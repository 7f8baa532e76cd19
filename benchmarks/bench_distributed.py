"""Ray: 2 workers against 1 for data-parallel training and for batch inference, the all-reduce
share of a training step, and the on-paper scaling to 8 and 64 workers.

    .venv/bin/python benchmarks/bench_distributed.py [--rows 2048] [--repeat 2]

A local Ray cluster of 2 CPUs (this box has 2 cores). Runs alternate (1, 2, 1, 2 …; medians):

- training: the MNIST demo CNN, one epoch over ``--rows`` digits, global batch 64, on 1 and on
  2 Ray Train workers (``EmberTrainer(use_ray=True)``): steady-state samples/s from the
  workers' own step timers (the slowest worker; start-up excluded), the all-reduce share of a
  step (gloo on loopback, one flat buffer), and the wall time of ``fit`` (start-up included);
- inference: the same CNN over the 1,500 test digits ×8 on 1 and 2 Ray Data actors
  (``predict``), wall time including the actors' start, next to the in-process predictor;
- on paper: per-step compute time (measured on the 2-worker runs without their all-reduce:
  per-worker batch 32, weak scaling) and gradient size → ring all-reduce time ``2(N-1)/N · G/B + 2(N-1) · α`` and the efficiency
  ``T / (T + T_allreduce)`` (no overlap) at 8 and 64 workers on 10 and 100 Gb/s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core"))
sys.path.insert(0, str(ROOT / "demos" / "distributed"))

import numpy as np
from _common import row, write_record
from mnist_columns import mnist_columns

from ember import optim
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.distributed import EmberTrainer, predict

LATENCY_S = 50e-6  # per ring hop on TCP (gloo): a typical datacentre figure, not measured here


def train_once(workers: int, data: dict) -> dict:
    trainer = EmberTrainer(mnist_cnn, partial(optim.Adam, lr=2e-3), num_workers=workers,
                           use_ray=True, folder=tempfile.mkdtemp(prefix="bench-dist-"),
                           inputs="image", targets="label", transform=preprocess,
                           batch_size=64)
    result = trainer.fit(data)
    last = result.history[-1]
    return {"samples_per_s": last["samples_per_s"], "share": last["allreduce_share"],
            "step_s": last["step_s"], "wall_s": result.wall_s, "grad_bytes": last["grad_bytes"]}


def infer_once(actors: int, data: dict) -> float:
    started = time.perf_counter()
    out = predict(data, seeded_cnn, num_actors=actors, batch_size=250, use_ray=True,
                  inputs="image", transform=preprocess)
    out.materialize()
    return time.perf_counter() - started


def seeded_cnn():
    import ember

    ember.seed(0)
    return mnist_cnn()


def allreduce_s(grad_bytes: int, workers: int, gbit_s: float) -> float:
    bandwidth = gbit_s * 1e9 / 8
    return 2 * (workers - 1) / workers * grad_bytes / bandwidth + 2 * (workers - 1) * LATENCY_S


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    data = mnist_columns("train", args.rows)
    test = mnist_columns("test")
    many = {k: np.concatenate([v] * 8) for k, v in test.items()}

    runs: dict[int, list[dict]] = {1: [], 2: []}
    infer: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.repeat):
        for workers in (1, 2):
            runs[workers].append(train_once(workers, data))
            infer[workers].append(infer_once(workers, many))
    started = time.perf_counter()
    predict(many, seeded_cnn, batch_size=250, inputs="image", transform=preprocess)
    in_process_s = time.perf_counter() - started
    ray.shutdown()

    def med(workers, key):
        return statistics.median(r[key] for r in runs[workers])

    print(f"{date.today()} · {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} · Ray {ray.__version__} · {args.rows} digits, global batch "
          f"64, medians of {args.repeat}")
    print("\n| training (1 epoch) | samples/s (steady) | ms/step | all-reduce share | "
          "fit wall s |")
    print("|---|---:|---:|---:|---:|")
    for w in (1, 2):
        print(f"| {w} Ray worker{'s' if w > 1 else ''} | {med(w, 'samples_per_s'):.0f} | "
              f"{med(w, 'step_s') * 1e3:.1f} | {med(w, 'share') * 100:.1f} % | "
              f"{med(w, 'wall_s'):.1f} |")
    print(f"| 2 vs 1 | {med(2, 'samples_per_s') / med(1, 'samples_per_s'):.2f}× | | | "
          f"{med(2, 'wall_s') / med(1, 'wall_s'):.2f}× |")
    n = len(many["label"])
    print(f"\n| inference ({n} digits) | wall s | images/s |")
    print("|---|---:|---:|")
    print(f"| in process (no Ray) | {in_process_s:.2f} | {n / in_process_s:.0f} |")
    for w in (1, 2):
        s = statistics.median(infer[w])
        print(f"| {w} Ray actor{'s' if w > 1 else ''} | {s:.2f} | {n / s:.0f} |")
    print(f"| 2 vs 1 actors | | {statistics.median(infer[1]) / statistics.median(infer[2]):.2f}× |")
    write_record([
        row("system", f"MNIST CNN training, 2 Ray workers (batch 32 each), {args.rows} digits",
            med(2, "samples_per_s"), med(1, "samples_per_s"), "samples/s",
            "1 Ray worker (batch 64)", higher_is_better=True,
            note=f"steady state; fit wall {med(2, 'wall_s'):.1f} s vs {med(1, 'wall_s'):.1f} s"),
        row("system", f"MNIST CNN inference, 2 Ray actors, {n} digits",
            n / statistics.median(infer[2]), n / in_process_s, "images/s",
            "in process, no Ray", higher_is_better=True)])

    grad_bytes = runs[2][0]["grad_bytes"]
    compute_s = med(2, "step_s") * (1 - med(2, "share"))  # per-worker batch 32
    print(f"\nOn paper: compute {compute_s * 1e3:.1f} ms/step (batch 32 per worker), gradients "
          f"{grad_bytes / 1e6:.2f} MB (float32), ring all-reduce, {LATENCY_S * 1e6:.0f} µs/hop")
    print("\n| workers | network | all-reduce ms | efficiency (no overlap) |")
    print("|---:|---|---:|---:|")
    for workers in (8, 64):
        for gbit in (10, 100):
            t = allreduce_s(grad_bytes, workers, gbit)
            print(f"| {workers} | {gbit} Gb/s | {t * 1e3:.2f} | "
                  f"{compute_s / (compute_s + t) * 100:.1f} % |")


if __name__ == "__main__":
    main()
