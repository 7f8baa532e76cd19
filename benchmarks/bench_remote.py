"""Remote over loopback against local numpy: per-op cost of pipelined ops, and MNIST inference.

    .venv/bin/python benchmarks/bench_remote.py [--ops 2000] [--repeat 9]

The server is ``ember serve --backend numpy`` in a process of its own on 127.0.0.1 (what a
user runs); the client is ``ember.Remote``. Both sides run in alternation (medians):

- per op: a chain of ``--ops`` tensor adds ``x = x + y`` on (4, 4) float32 tensors, ending with
  one read of the result, through Remote and on the local numpy backend. µs/op is the whole
  chain's time over the op count (the read's round trip amortised). Goal: ≤ 50 µs/op.
- MNIST inference: the demo CNN (``ember.demos.mnist_model``) on a batch of uint8 images
  (uploaded each call, logits read back) through Remote(numpy) and on local numpy; same
  weights on both (the outputs are compared). Goal: ≤ 1.5× local numpy.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from _common import median_times, row, write_record
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.remote import Remote

TOKEN = "bench-remote-token"


def start_server() -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "EMBER_REMOTE_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "ember.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if " on ws://" not in line:
        proc.kill()
        raise SystemExit(f"ember serve did not start: {line!r}")
    return proc, line.split(" on ")[1].strip()


def per_op(remote, numpy, ops: int, repeat: int) -> list[float]:
    def chain(backend):
        def run():
            x = ember.ones((4, 4), backend=backend)
            y = ember.full((4, 4), 0.5, backend=backend)
            for _ in range(ops):
                x = x + y
            return x[0, 0].item()

        return run

    assert chain(remote)() == chain(numpy)() == 1 + 0.5 * ops
    return [t / ops * 1e6 for t in median_times([chain(remote), chain(numpy)], repeat)]


def mnist(remote, numpy, batch: int, repeat: int) -> list[float]:
    ember.seed(0)
    local_model = mnist_cnn()
    ember.seed(0)
    remote_model = mnist_cnn().to(remote)
    images = np.random.default_rng(0).integers(0, 256, (batch, 784), dtype=np.uint8)

    def infer(model, backend):
        def run():
            x = preprocess(ember.tensor(images, backend=backend))
            return model(x).numpy()

        return run

    np.testing.assert_allclose(infer(remote_model, remote)(), infer(local_model, numpy)(),
                               rtol=1e-5, atol=1e-5)
    return [t * 1e3 for t in median_times([infer(remote_model, remote),
                                           infer(local_model, numpy)], repeat)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    proc, url = start_server()
    try:
        remote, numpy = Remote(url, token=TOKEN), ember.get_backend("numpy")
        load = os.getloadavg()[0]
        print(f"{date.today()} · {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} CPUs · load {load:.2f} · server: ember serve (numpy), "
              f"another process, loopback")
        r, n = per_op(remote, numpy, args.ops, args.repeat)
        print("\n| pipelined chain | Remote µs/op | numpy µs/op | ratio | goal |")
        print("|---|---:|---:|---:|---|")
        print(f"| {args.ops} adds (4×4 f32) + 1 read | {r:.1f} | {n:.1f} | {r / n:.2f} | "
              f"≤ 50 µs/op: {'met' if r <= 50 else 'not met'} |")
        peer = "numpy backend in process"
        rows = [row("system", f"Remote over loopback: {args.ops} adds (4×4) + 1 read", r, n,
                    "µs/op", peer)]
        print("\n| MNIST CNN inference | Remote ms | numpy ms | ratio | goal |")
        print("|---|---:|---:|---:|---|")
        for batch in (1, 64, 256):
            r, n = mnist(remote, numpy, batch, args.repeat)
            print(f"| batch {batch} | {r:.2f} | {n:.2f} | {r / n:.2f} | "
                  f"≤ 1.5×: {'met' if r / n <= 1.5 else 'not met'} |")
            rows.append(row("system", f"Remote: MNIST CNN inference, batch {batch}", r, n, "ms",
                            peer))
        remote.close()
        write_record(rows)
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
