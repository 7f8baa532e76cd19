"""One MNIST training epoch with the demo's CNN: ember Autodiff(numpy), eager and through
``ember.jit``, vs PyTorch CPU; or ember on wgpu vs PyTorch on CUDA.

    python benchmarks/bench_mnist_epoch.py [--repeat 3] [--threads 1] [--profile]
    python benchmarks/bench_mnist_epoch.py --backend wgpu [--fusion] [--repeat 3]

Every variant trains ``ember.demos.mnist_model.mnist_cnn`` from the same initial weights (the
same architecture in ``torch.nn`` for PyTorch, with ember's weights copied in) with Adam on
the 8,500-digit MNIST train split, batch 64, in the same shuffled order, side by side in one
process; epochs alternate between the variants so all see the same machine load. Each
framework scales and normalises its own uint8 batches; every step reads its loss back
(``loss.item()``), on both sides.

Variants:
- *ember eager*: ``loss = cross_entropy(model(preprocess(x)), y); opt.step(loss.backward())``;
- *ember + jit*: the same step (preprocessing included) through ``ember.jit``, the loss read
  outside: after a warm-up call and the traced call per batch shape, the steps replay the tape;
- ``--backend wgpu``: Autodiff(wgpu) eager and jitted, Autodiff(Fusion(wgpu)) jitted with
  ``--fusion``, and Autodiff(numpy) jitted for the ratio of a GPU epoch to a CPU one on the same
  host; PyTorch on CUDA when available (TF32 off), else on the CPU. The dispatches per step of
  the wgpu variants are counted over the timed epochs.

Rows per input pipeline:
- *pre-batched*: the batches are numpy arrays made once, up front (model + optimizer cost);
- *with DataLoader*: ember reads through ``DataLoader`` + ``Batcher`` from ``MnistDataset``,
  PyTorch through ``torch.utils.data.DataLoader`` over a ``TensorDataset`` (the whole input
  pipeline included).

PyTorch gets as many threads as numpy's BLAS uses (``threadpoolctl`` when installed);
``--threads N`` sets both. On a machine shared with other work, spinning BLAS/OpenMP threads
collapse when cores are oversubscribed (both frameworks slow down 5-10× and erratically);
``--threads 1`` then gives steady numbers. The load average is printed with the table.
``--max-steps N`` cuts every epoch to N batches (a quick check of the script, not a figure).
``--profile`` runs one eager ember epoch under cProfile and prints the top costs.
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

from _common import blas_threads, dispatches, pin_blas_threads, row, torch_twin, write_record

pin_blas_threads()  # --threads N, before numpy loads (threadpoolctl, when installed, too)
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # wgpu-py's Vulkan loader wants one

import ember
import ember.jit
import numpy as np
from ember import nn
from ember.dataset import DataLoader, MnistDataset
from ember.demos.mnist_model import MEAN, STD, mnist_cnn, preprocess
from ember.optim import Adam

BATCH, LR = 64, 2e-3


def epoch_order(n: int, epoch: int, max_steps: int | None) -> list[np.ndarray]:
    order = np.random.default_rng(epoch).permutation(n)
    return [order[i : i + BATCH] for i in range(0, n, BATCH)][:max_steps]


def ember_trainer(backend, jit: bool):
    """A fresh model (seeded as every other variant's), its Adam, and ``run(x_u8, y) -> loss``
    for one training step; ``jit``: the step through ``ember.jit``."""
    ember.seed(0)
    model = mnist_cnn().to(backend)
    opt = Adam(model.parameters(), lr=LR)

    def step(x_u8, y):
        loss = nn.loss.cross_entropy(model(preprocess(x_u8)), y)
        opt.step(loss.backward())
        return loss

    fn = ember.jit(step) if jit else step

    def run(x_u8, y) -> float:
        return fn(x_u8.to(backend), y.to(backend)).item()

    return model, run, (fn if jit else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("numpy", "wgpu"), default="numpy",
                        help="numpy: vs PyTorch CPU; wgpu: vs PyTorch CUDA (when available)")
    parser.add_argument("--fusion", action="store_true",
                        help="wgpu: add Autodiff(Fusion(wgpu)), jitted")
    parser.add_argument("--repeat", type=int, default=3, help="timed epochs per variant")
    parser.add_argument("--profile", action="store_true", help="cProfile one ember epoch")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile")
    parser.add_argument("--threads", type=int, default=None,
                        help="set numpy's BLAS threads (threadpoolctl) and torch's to this; "
                        "1 gives steady figures on a busy machine")
    parser.add_argument("--no-loader", action="store_true", help="skip the DataLoader rows")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="batches per epoch (a quick check; default: the whole split)")
    args = parser.parse_args()
    # the numpy backend's speed tip (process-wide, so torch gets the same malloc)
    from ember.backends.numpy import tune_malloc

    tune_malloc()

    import torch

    if args.threads:
        try:  # the environment variables set above are enough; threadpoolctl makes sure
            from threadpoolctl import threadpool_limits

            threadpool_limits(args.threads, user_api="blas")
        except ImportError:
            pass
    threads, how = blas_threads()
    torch.set_num_threads(threads)
    gpu = args.backend == "wgpu"
    device = "cuda" if gpu and torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    train = MnistDataset("train")
    images = np.frombuffer(b"".join(train[i][0] for i in range(len(train))), np.uint8)
    images = images.reshape(len(train), 784).copy()  # writable, for torch.from_numpy
    labels = np.array([train[i][1] for i in range(len(train))], dtype=np.int64)
    n = len(train)
    steps = len(epoch_order(n, 0, args.max_steps))

    numpy_ad = ember.Autodiff(ember.get_backend("numpy"))
    if gpu:
        wgpu = ember.get_backend("wgpu")
        specs = [("ember Autodiff(wgpu)", ember.Autodiff(wgpu), False),
                 ("ember Autodiff(wgpu) + jit", ember.Autodiff(wgpu), True)]
        if args.fusion:
            specs.append(("ember Autodiff(Fusion(wgpu)) + jit",
                          ember.Autodiff(ember.Fusion(wgpu)), True))
        specs.append(("ember Autodiff(numpy) + jit", numpy_ad, True))
    else:
        specs = [("ember Autodiff(numpy)", numpy_ad, False),
                 ("ember Autodiff(numpy) + jit", numpy_ad, True)]
    trainers = {label: (backend, *ember_trainer(backend, jit)) for label, backend, jit in specs}
    model0 = next(iter(trainers.values()))[1]
    twin = torch_twin(torch, model0).to(device)
    topt = torch.optim.Adam(twin.parameters(), lr=LR)
    torch_label = f"PyTorch {device.upper() if gpu else 'CPU'}"

    def torch_step(x_u8, y) -> float:
        x_u8, y = x_u8.to(device), y.to(device)
        x = (x_u8.reshape(-1, 1, 28, 28).float() / 255.0 - MEAN) / STD
        topt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(twin(x), y)
        loss.backward()
        topt.step()
        return loss.item()

    def prebatched(step, make):
        """An epoch over the pre-made batches in the shared order of that epoch number."""
        epochs = [0]

        def epoch() -> float:
            epochs[0] += 1
            return float(np.mean([step(make(images[b]), make(labels[b]))
                                  for b in epoch_order(n, epochs[0], args.max_steps)]))

        return epoch

    def loader_epoch(step, loader):
        def epoch() -> float:
            losses = []
            for x, y in loader:
                losses.append(step(x, y))
                if len(losses) == args.max_steps:
                    break
            return float(np.mean(losses))

        return epoch

    runs = {}  # (pipeline, variant) -> (backend for the dispatch count, epoch function)
    for label, (backend, _, run, _) in trainers.items():
        runs[("pre-batched", label)] = (backend, prebatched(run, ember.tensor))
    runs[("pre-batched", torch_label)] = (None, prebatched(torch_step, torch.from_numpy))
    if not args.no_loader:
        for label, (backend, _, run, _) in trainers.items():
            loader = DataLoader(train, batch_size=BATCH, shuffle=True, seed=0)
            runs[("with DataLoader", label)] = (backend, loader_epoch(run, loader))
        torch_loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels)),
            batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(0))
        runs[("with DataLoader", torch_label)] = (None, loader_epoch(torch_step, torch_loader))

    if args.profile:
        first = runs[("pre-batched", specs[0][0])][1]
        first()  # warm-up
        prof = cProfile.Profile()
        prof.enable()
        first()
        prof.disable()
        print(f"cProfile of one {specs[0][0]} epoch ({steps} steps), by own time:\n")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(prof).sort_stats("cumtime").print_stats(args.top)
        return

    for _ in range(2):  # jit's warm-up and traced calls: the timed steps replay
        for _, fn in runs.values():
            fn()  # every variant alike, so all train the same epochs (comparable losses)
    load_before = os.getloadavg()[0]
    # Every repeat runs every variant once, in turn, so a burst of load from elsewhere on the
    # machine hits all of them rather than one.
    times: dict = {key: [] for key in runs}
    counts: dict = {key: [] for key in runs}
    final: dict = {}
    for _ in range(args.repeat):
        for key, (backend, fn) in runs.items():

            def timed(key=key, fn=fn):
                t0 = time.perf_counter()
                final[key] = fn()
                times[key].append(time.perf_counter() - t0)

            counts[key].append(dispatches(backend, timed))
    load_after = os.getloadavg()[0]
    median = {key: statistics.median(t) for key, t in times.items()}

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    peer = torch.cuda.get_device_name(0) if device == "cuda" else cpu
    print(f"MNIST epoch ({steps * BATCH if args.max_steps else n:,} digits, {steps} steps of "
          f"batch {BATCH}, Adam), mnist_cnn ({model0.num_params():,} params); median of "
          f"{args.repeat} epochs each after two warm-up epochs, variants alternated")
    gpu_note = f" · ember wgpu on {wgpu.device} · torch on {peer}" if gpu else ""
    print(f"{datetime.date.today().isoformat()} · {cpu} · {os.cpu_count()} CPUs · "
          f"{threads} thread(s) ({how}) · Python {platform.python_version()} · "
          f"numpy {np.__version__} · torch {torch.__version__}{gpu_note} · load average "
          f"{load_before:.1f} before, {load_after:.1f} after")
    print()
    print(f"| pipeline | variant | s/epoch | ratio to {torch_label} | "
          + ("dispatches/step | " if gpu else "") + "mean loss |")
    print("|---|---|---:|---:|" + ("---:|" if gpu else "") + "---:|")
    for (pipeline, label), t in median.items():
        ratio = t / median[(pipeline, torch_label)]
        shown = ""
        if gpu:
            d = counts[(pipeline, label)][-1]
            shown = f"{'-' if d is None else round(d / steps)} | "
        print(f"| {pipeline} | {label} | {t:.2f} | {ratio:.2f}× | {shown}"
              f"{final[(pipeline, label)]:.3f} |")
    print()
    digits = f"{steps * BATCH if args.max_steps else n:,} digits"
    write_record([row("gpu" if gpu else "training",
                      f"one MNIST epoch ({digits}, batch {BATCH}), {pipeline}, {label}, "
                      f"{threads} thread(s)", t, median[(pipeline, torch_label)], "s", torch_label)
                  for (pipeline, label), t in median.items() if label != torch_label],
                 variant="wgpu" if gpu else None, device=wgpu.device if gpu else None)
    for label, (_, _, _, jitted) in trainers.items():
        if jitted is not None:  # a trace costs more than an eager step: show how many ran
            stats = jitted.stats()
            print(f"{label}: {stats['traces']} traces for {stats['signatures']} batch shapes, "
                  f"{stats['replays']} replays over the run (warm-up epochs included).")
    if gpu:
        for pipeline in dict.fromkeys(p for p, _ in median):
            cpu_t = median[(pipeline, "ember Autodiff(numpy) + jit")]
            gpu_t = median[(pipeline, "ember Autodiff(wgpu) + jit")]
            print(f"{pipeline}: the jitted wgpu epoch is {cpu_t / gpu_t:.2f}× as fast as the "
                  "jitted numpy epoch on the same host.")


if __name__ == "__main__":
    main()
