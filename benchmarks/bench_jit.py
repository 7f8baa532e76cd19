"""The MNIST CNN training step (the demo's model, batch 64, Adam): ember eager vs ember.jit vs
PyTorch on the same device, calls alternated, in one run.

    python benchmarks/bench_jit.py [--backend numpy|wgpu|fusion-numpy|fusion-wgpu] [--repeat 30]

CPU backends race PyTorch CPU at one thread (numpy's BLAS is pinned to one thread too, before
numpy loads); wgpu races torch CUDA when CUDA is available, else PyTorch CPU. Every step ends
with ``loss.item()`` on both sides (a GPU step is timed to completion). Prints a markdown
table: ms/step (median), ratio to PyTorch, and per call the backend steps the jitted tape
replays and (wgpu) the GPU dispatches each variant records. A second table times a chain of
1,000 small elementwise ops (per-op overhead) the same way.
"""

from __future__ import annotations

import argparse
import os
import platform

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads: one BLAS thread, as torch below
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import ember
import ember.jit
import numpy as np
from _common import blas_threads, median_times, profile, row, torch_twin, write_record
from ember import optim
from ember.demos.mnist_model import mnist_cnn
from ember.nn.loss import cross_entropy


def ember_step(backend, x_np, y_np, jitted: bool):
    """A training step on ``backend`` (a fresh model seeded as every other) and its inputs."""
    ember.seed(0)
    with ember.use_backend(backend):
        model = mnist_cnn()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = ember.tensor(x_np, backend=backend), ember.tensor(y_np, backend=backend)

    def step(x, y):
        loss = cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    fn = ember.jit(step) if jitted else step
    return model, fn, (lambda: fn(x, y).item())


def torch_step(torch, model, x_np, y_np, device):
    twin = torch_twin(torch, model).to(device)
    opt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    x, y = torch.from_numpy(x_np).to(device), torch.from_numpy(y_np).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(twin(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


CHAIN = 1000  # elementwise ops per call of the chain workload


def chain(x):
    """1,000 small elementwise ops (the per-op overhead a trace removes)."""
    for i in range(CHAIN // 2):
        x = x * 1.0001 + 0.5 if i % 2 else (x - 0.25).relu()
    return x


def chain_calls(torch, inner, device):
    """eager, jitted and torch calls of :func:`chain` on a (16,) tensor, each read back."""
    data = np.linspace(0, 1, 16, dtype=np.float32)
    x, tx = ember.tensor(data, backend=inner), torch.from_numpy(data).to(device)
    jitted = ember.jit(chain)
    for _ in range(3):
        jitted(x)
    return [lambda: chain(x).tolist(), lambda: jitted(x).tolist(), lambda: chain(tx).tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="numpy",
                        choices=["numpy", "wgpu", "fusion-numpy", "fusion-wgpu"])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    import torch

    inner = ember.get_backend(args.backend)
    backend = ember.Autodiff(inner)
    gpu = "wgpu" in args.backend
    device = "cuda" if gpu and torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x_np = rng.random((args.batch, 1, 28, 28), dtype=np.float32)
    y_np = rng.integers(0, 10, args.batch).astype(np.int64)

    model, _, eager = ember_step(backend, x_np, y_np, jitted=False)
    _, jitted_fn, jitted = ember_step(backend, x_np, y_np, jitted=True)
    peer = torch_step(torch, model, x_np, y_np, device)
    for _ in range(3):  # warm-up, trace, first replay; pipelines compiled
        jitted()
    te, tj, tt = median_times([eager, jitted, peer], args.repeat, warmup=2)
    assert jitted_fn.traces == 1, "the jitted step re-traced during the timing"
    innermost = inner
    while innermost.inner is not None:
        innermost = innermost.inner
    (counts,) = jitted_fn.stats()["steps"]
    p_eager, p_jit = profile(innermost, eager), profile(innermost, jitted)

    print(f"MNIST CNN training step (Adam, batch {args.batch}), median of {args.repeat}, "
          f"calls alternated; ember on {backend.name} ({inner.device}), torch "
          f"{torch.__version__} on {device} ({torch.get_num_threads()} thread(s) on CPU), "
          f"numpy BLAS {blas_threads()[0]} thread(s), {platform.machine()}")
    print(f"tape: {counts['traced']} steps traced, {counts['after_folding']} after constant "
          f"folding, {counts['replayed']} replayed")
    print()
    print("| variant | ms/step | ratio to torch | backend steps/call | dispatches/call "
          "| CPU ms/call | GPU ms/call |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rows = [("ember eager", te, "-", p_eager), ("ember.jit", tj, counts["replayed"], p_jit),
            (f"torch ({device})", tt, "-", (None, None, None))]
    for label, t, steps, (dispatches, cpu, gpu) in rows:
        shown = ["-" if v is None else f"{v:.2f}" if isinstance(v, float) else v
                 for v in (dispatches, cpu, gpu)]
        print(f"| {label} | {t * 1e3:.2f} | {t / tt:.2f}× | {steps} | {' | '.join(map(str, shown))} |")
    target, where = ("gpu", inner.device) if gpu else ("training", None)
    step = f"MNIST CNN training step, batch {args.batch}, Adam, {backend.name}"
    peer = f"torch eager ({device})"
    record = [row(target, f"{step} + ember.jit", tj * 1e3, tt * 1e3, "ms", peer),
              row(target, f"{step}, eager", te * 1e3, tt * 1e3, "ms", peer)]

    te, tj, tt = median_times(chain_calls(torch, inner, device), args.repeat, warmup=2)
    print()
    print(f"A chain of {CHAIN} elementwise ops on 16 floats ({inner.name}), per op:")
    print()
    print("| variant | µs/op | ratio to torch |")
    print("|---|---:|---:|")
    for label, t in (("ember eager", te), ("ember.jit", tj), (f"torch eager ({device})", tt)):
        print(f"| {label} | {t / CHAIN * 1e6:.2f} | {t / tt:.2f}× |")
    record.append(row(target, f"chain of {CHAIN} elementwise ops on 16 floats, {inner.name} + "
                      "ember.jit", tj / CHAIN * 1e6, tt / CHAIN * 1e6, "µs/op", peer))
    write_record(record, variant=None if args.backend == "numpy" else args.backend, device=where)


if __name__ == "__main__":
    main()
