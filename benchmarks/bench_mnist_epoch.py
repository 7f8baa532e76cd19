"""One MNIST training epoch with the demo's CNN: ember Autodiff(numpy) vs PyTorch CPU.

    python benchmarks/bench_mnist_epoch.py [--repeat 3] [--profile]

Both train ``ember.demos.mnist_model.mnist_cnn`` (the same architecture in ``torch.nn``, with
ember's initial weights copied in) with Adam on the 8,500-digit MNIST train split, batch 64,
in the same shuffled order, side by side in one process; epochs alternate between the two so
both see the same machine load. Each framework scales and normalises its own uint8 batches.

Rows:
- *pre-batched*: the batches are numpy arrays made once, up front (model + optimizer cost);
- *with DataLoader*: ember reads through ``DataLoader`` + ``Batcher`` from ``MnistDataset``,
  PyTorch through ``torch.utils.data.DataLoader`` over a ``TensorDataset`` (the whole input
  pipeline included).

PyTorch gets as many threads as numpy's BLAS uses (``threadpoolctl`` when installed);
``--threads N`` sets both. On a machine shared with other work, spinning BLAS/OpenMP threads
collapse when cores are oversubscribed (both frameworks slow down 5-10× and erratically);
``--threads 1`` then gives steady numbers. The load average is printed with the table.
``--profile`` runs one ember epoch under cProfile and prints the top costs.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import os
import platform
import pstats
import statistics
import time

import ember
import numpy as np
from _common import blas_threads, torch_twin
from ember import nn
from ember.dataset import DataLoader, MnistDataset
from ember.demos.mnist_model import MEAN, STD, mnist_cnn, preprocess
from ember.optim import Adam

BATCH, LR = 64, 2e-3


def epoch_order(n: int, epoch: int) -> list[np.ndarray]:
    order = np.random.default_rng(epoch).permutation(n)
    return [order[i : i + BATCH] for i in range(0, n, BATCH)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed epochs per framework")
    parser.add_argument("--profile", action="store_true", help="cProfile one ember epoch")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile")
    parser.add_argument("--threads", type=int, default=None,
                        help="set numpy's BLAS threads (threadpoolctl) and torch's to this; "
                        "1 gives steady figures on a busy machine")
    parser.add_argument("--no-loader", action="store_true", help="skip the DataLoader rows")
    args = parser.parse_args()

    import torch

    if args.threads:
        # threadpoolctl sets the BLAS pool at run time (env vars only work before numpy loads)
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads, user_api="blas")
    threads, how = blas_threads()
    torch.set_num_threads(threads)
    ember.seed(0)

    train = MnistDataset("train")
    images = np.frombuffer(b"".join(train[i][0] for i in range(len(train))), np.uint8)
    images = images.reshape(len(train), 784).copy()  # writable, for torch.from_numpy
    labels = np.array([train[i][1] for i in range(len(train))], dtype=np.int64)
    n = len(train)

    backend = ember.Autodiff(ember.get_backend("numpy"))
    model = mnist_cnn().to(backend)
    opt = Adam(model.parameters(), lr=LR)
    twin = torch_twin(torch, model)
    topt = torch.optim.Adam(twin.parameters(), lr=LR)

    def ember_step(x_u8, y) -> float:
        x = preprocess(x_u8.to(backend))
        loss = nn.loss.cross_entropy(model(x), y.to(backend))
        opt.step(loss.backward())
        return loss.item()

    def torch_step(x_u8, y) -> float:
        x = (x_u8.reshape(-1, 1, 28, 28).float() / 255.0 - MEAN) / STD
        topt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(twin(x), y)
        loss.backward()
        topt.step()
        return loss.item()

    epochs = {"ember": 0, "torch": 0}

    def ember_epoch() -> float:
        epochs["ember"] += 1
        losses = [ember_step(ember.tensor(images[b]), ember.tensor(labels[b]))
                  for b in epoch_order(n, epochs["ember"])]
        return float(np.mean(losses))

    def torch_epoch() -> float:
        epochs["torch"] += 1
        losses = [torch_step(torch.from_numpy(images[b]), torch.from_numpy(labels[b]))
                  for b in epoch_order(n, epochs["torch"])]
        return float(np.mean(losses))

    ember_loader = DataLoader(train, batch_size=BATCH, shuffle=True, seed=0)
    torch_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels)),
        batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(0))

    def ember_loader_epoch() -> float:
        return float(np.mean([ember_step(x, y) for x, y in ember_loader]))

    def torch_loader_epoch() -> float:
        return float(np.mean([torch_step(x, y) for x, y in torch_loader]))

    if args.profile:
        ember_epoch()  # warm-up
        prof = cProfile.Profile()
        prof.enable()
        ember_epoch()
        prof.disable()
        print(f"cProfile of one ember epoch ({-(-n // BATCH)} steps), by own time:\n")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(prof).sort_stats("cumtime").print_stats(args.top)
        return

    runs = {("pre-batched", "ember"): ember_epoch, ("pre-batched", "torch"): torch_epoch}
    if not args.no_loader:
        runs[("with DataLoader", "ember")] = ember_loader_epoch
        runs[("with DataLoader", "torch")] = torch_loader_epoch
    for fn in runs.values():
        fn()  # warm-up epoch each (allocator, caches, lazy imports)
    load_before = os.getloadavg()[0]
    # Every repeat runs every variant once, in turn, so a burst of load from elsewhere on the
    # machine hits all of them rather than one.
    times: dict = {key: [] for key in runs}
    final: dict = {}
    for _ in range(args.repeat):
        for key, fn in runs.items():
            t0 = time.perf_counter()
            final[key] = fn()
            times[key].append(time.perf_counter() - t0)
    load_after = os.getloadavg()[0]
    median = {key: statistics.median(t) for key, t in times.items()}
    rows = [(label, median[(label, "ember")], median[(label, "torch")],
             final[(label, "ember")], final[(label, "torch")])
            for label in dict.fromkeys(label for label, _ in runs)]

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    steps = -(-n // BATCH)
    print(f"MNIST epoch ({n:,} digits, {steps} steps of batch {BATCH}, Adam), mnist_cnn "
          f"({model.num_params():,} params); median of {args.repeat} epochs each after one "
          f"warm-up")
    print(f"{datetime.date.today().isoformat()} · {cpu} · {os.cpu_count()} CPUs · "
          f"{threads} thread(s) ({how}) · Python {platform.python_version()} · "
          f"numpy {np.__version__} · torch {torch.__version__} · load average "
          f"{load_before:.1f} before, {load_after:.1f} after")
    print()
    print("| pipeline | ember Autodiff(numpy) s | PyTorch CPU s | ratio ember/torch "
          "| mean loss ember / torch |")
    print("|---|---:|---:|---:|---:|")
    for label, te, tt, le, lt in rows:
        print(f"| {label} | {te:.2f} | {tt:.2f} | {te / tt:.2f}× | {le:.3f} / {lt:.3f} |")


if __name__ == "__main__":
    main()
