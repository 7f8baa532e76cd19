"""Per-dispatch cost on the wgpu backend: eager vs a replayed ``ember.jit`` program, beside torch.

    PYTHONPATH=core python benchmarks/bench_dispatch.py          # GPU machine
    PYTHONPATH=core python benchmarks/bench_dispatch.py --small  # lavapipe / CI: small sizes

Three workloads, each called eagerly (the engine submitting as it goes, and as it did before:
only at reads, so CPU and GPU never overlap), through ``ember.jit`` (one captured program
replayed per call: pre-built bind groups, one submit) and on torch (CUDA when available, else
CPU), all timed in alternation: a chain of 1,000 small elementwise ops (500 × ``x * a + b``), an
MLP forward (784-512-512-10) and the MNIST demo CNN's forward. Per workload and variant:

- µs/op: wall time per call (ending with a one-element readback; torch with
  ``torch.cuda.synchronize()``) divided by the dispatches of one eager call;
- issue µs/op: the part before the readback (Python recording and submitting, no waiting);
- dispatches and submits per call (the readback's submit included);
- GPU ms per call, from timestamp queries around every compute pass, where the adapter has
  ``timestamp-query`` (else "-").

A last column gives each variant's time / torch's. Medians over ``--repeat`` calls.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
import ember.jit
from _common import row, write_record

BACKEND = ember.get_backend("wgpu")
ENGINE = BACKEND.rt.engine


# ---------------------------------------------------------------------- workloads
def chain_fn(a, b):
    def chain(x):
        for _ in range(500):
            x = x * a + b
        return x

    return chain


def mlp(batch: int):
    from ember import nn

    with ember.use_backend(BACKEND):
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
    x = np.random.default_rng(0).standard_normal((batch, 784), dtype=np.float32)
    return net, x


def cnn(batch: int):
    from ember.demos.mnist_model import mnist_cnn

    with ember.use_backend(BACKEND):
        net = mnist_cnn()
    x = np.random.default_rng(0).standard_normal((batch, 1, 28, 28), dtype=np.float32)
    return net, x


def workloads(small: bool):
    """``name -> (ember function of one tensor, its input array, torch twin builder)``."""
    rng = np.random.default_rng(0)
    n = 1024 if small else 4096
    a = (1 + 1e-4 * rng.standard_normal(n)).astype(np.float32)
    b = (1e-4 * rng.standard_normal(n)).astype(np.float32)
    ta, tb = (ember.tensor(v, backend=BACKEND) for v in (a, b))
    batch = 8 if small else 64
    out = {f"chain of 1,000 elementwise ops ({n} floats)":
           (chain_fn(ta, tb), a, lambda torch, dev: chain_fn(*(torch.from_numpy(v).to(dev)
                                                               for v in (a, b))))}
    for name, build in ((f"MLP forward 784-512-512-10, batch {batch}", mlp),
                        (f"MNIST CNN forward, batch {batch}", cnn)):
        net, x = build(batch)
        out[name] = (net, x, lambda torch, dev, net=net: twin(torch, net).to(dev))
    return out


def twin(torch, net):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import torch_twin

    return torch_twin(torch, net)


# ---------------------------------------------------------------------- measuring
class Variant:
    """One way of calling a workload, with what its calls cost."""

    def __init__(self, name, call):
        self.name, self.call = name, call
        self.wall: list[float] = []
        self.issue: list[float] = []

    def __call__(self):
        t0 = time.perf_counter()
        self.call(t0, self.issue)
        self.wall.append(time.perf_counter() - t0)


def ember_variant(name, fn, x, submit_every=None):
    """``submit_every``: the engine's batch size during the call (a huge one: the old
    submit-at-reads engine, no CPU/GPU overlap)."""
    xt = ember.tensor(x, backend=BACKEND)

    def call(t0, issue):
        default, ENGINE.submit_every = ENGINE.submit_every, submit_every or ENGINE.submit_every
        try:
            y = fn(xt)
            issue.append(time.perf_counter() - t0)
            first = tuple((0, 1, 1) for _ in y.shape)
            BACKEND.to_data(BACKEND.slice(y._prim, first))
        finally:
            ENGINE.submit_every = default

    return Variant(name, call)


def torch_variant(torch, dev, fn, x):
    xt = torch.from_numpy(x).to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    def call(t0, issue):
        with torch.no_grad():
            y = fn(xt)
        issue.append(time.perf_counter() - t0)
        sync()
        del y

    return Variant(f"torch {dev}", call)


def counts(variant) -> tuple[int, int, float | None]:
    """Dispatches, submits and GPU seconds of one call."""
    adapter = BACKEND.rt.adapter
    timed = "timestamp-query" in adapter.info.features and hasattr(adapter, "start_gpu_timer")
    ENGINE.flush()
    if timed:
        adapter.start_gpu_timer()
    d, s = ENGINE.dispatches, ENGINE.submits
    variant()
    gpu = adapter.gpu_seconds() if timed else None
    if timed:
        adapter.stop_gpu_timer()  # timed passes cost a little: not in the timed calls
    return ENGINE.dispatches - d, ENGINE.submits - s, gpu


def run(small: bool, repeat: int) -> None:
    try:
        import torch

        dev = "cuda" if torch.cuda.is_available() else "cpu"
        if dev == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
    except ImportError:
        torch, dev = None, None
    print(f"# bench_dispatch — {date.today()} — {platform.node()}")
    print(f"ember wgpu on {BACKEND.device}; peer: "
          f"{'torch ' + torch.__version__ + ' ' + dev if torch else 'none (torch missing)'}; "
          f"engine submits every {ENGINE.submit_every} dispatches\n")
    print("| workload | variant | µs/op | issue µs/op | dispatches/call | submits/call "
          "| GPU ms/call | × torch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    rows = []
    for name, (fn, x, torch_fn) in workloads(small).items():
        variants = [ember_variant("ember eager", fn, x),
                    ember_variant("ember eager, submit at reads", fn, x, 1 << 30),
                    ember_variant("ember jit", ember.jit(fn), x)]
        if torch is not None:
            variants.append(torch_variant(torch, dev, torch_fn(torch, dev), x))
        for v in variants:  # warm up: the jit's warm-up call, its trace, its capture
            for _ in range(3):
                v()
        info = {v.name: counts(v) for v in variants[:3]}
        ops = info["ember eager"][0]
        for v in variants:
            v.wall.clear()
            v.issue.clear()
        for _ in range(repeat):
            for v in variants:
                v()
        peer = statistics.median(variants[-1].wall) if torch is not None else None
        for v in variants:
            wall, issue = statistics.median(v.wall), statistics.median(v.issue)
            d, s, gpu = info.get(v.name, ("-", "-", None))
            ratio = f"{wall / peer:.2f}" if peer else "-"
            print(f"| {name} | {v.name} | {wall / ops * 1e6:.2f} | {issue / ops * 1e6:.2f} "
                  f"| {d} | {s} | {f'{gpu * 1e3:.2f}' if gpu is not None else '-'} | {ratio} |")
            if peer and v.name in ("ember eager", "ember jit"):
                rows.append(row("gpu", f"{name}, {v.name}", wall / ops * 1e6,
                                peer / ops * 1e6, "µs/op", f"torch {dev} eager"))
    if rows:
        write_record(rows, variant="small" if small else None, device=BACKEND.device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="small sizes (lavapipe, CI)")
    p.add_argument("--repeat", type=int, default=20, help="timed calls per variant")
    args = p.parse_args()
    run(args.small, args.repeat)


if __name__ == "__main__":
    main()
