"""One training step (forward + backward + optimizer step): ember Autodiff(numpy) vs PyTorch
CPU, same architectures, weights and batches, side by side in one run.

    python benchmarks/bench_training.py [--repeat 30] [--optimizer adam|sgd]

Prints a markdown table of medians and the ratio ember / PyTorch (goal: <= 1.5).
PyTorch gets as many threads as numpy's BLAS uses (``threadpoolctl`` when installed, else
``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``, else the CPU count).
"""

from __future__ import annotations

import argparse
import platform

import ember
import numpy as np
from _common import blas_threads, median_times, row, torch_twin, write_record
from ember import nn, optim

AD = "autodiff-numpy"


# ---------------------------------------------------------------------------- models
def ember_mlp():
    return nn.Sequential(
        nn.Linear(784, 256, backend=AD),
        nn.ReLU(),
        nn.Linear(256, 256, backend=AD),
        nn.ReLU(),
        nn.Linear(256, 10, backend=AD),
    )


def ember_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, backend=AD),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, backend=AD),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 10, backend=AD),
    )


def make_opt(kind, params, torch=None):
    if torch is None:
        return (
            optim.Adam(params, lr=1e-3)
            if kind == "adam"
            else optim.SGD(params, lr=0.01, momentum=0.9)
        )
    return (
        torch.optim.Adam(params, lr=1e-3)
        if kind == "adam"
        else torch.optim.SGD(params, lr=0.01, momentum=0.9)
    )


def steps(torch, name, model, x_np, y_np, kind):
    loss_fn = nn.CrossEntropyLoss()
    opt = make_opt(kind, model.parameters())
    x, y = ember.tensor(x_np, backend=AD), ember.tensor(y_np, backend=AD)

    def ember_step():
        opt.step(loss_fn(model(x), y).backward())

    twin = torch_twin(torch, model)
    topt = make_opt(kind, twin.parameters(), torch)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
    tloss = torch.nn.CrossEntropyLoss()

    def torch_step():
        topt.zero_grad(set_to_none=True)
        tloss(twin(tx), ty).backward()
        topt.step()

    return ember_step, torch_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument(
        "--only", choices=["mlp", "cnn"], default=None, help="run one model (e.g. under cProfile)"
    )
    parser.add_argument("--ember-only", action="store_true", help="skip PyTorch (profiling)")
    args = parser.parse_args()
    # the numpy backend's speed tip (process-wide, so torch gets the same malloc)
    from ember.backends.numpy import tune_malloc

    tune_malloc()

    import torch

    threads = blas_threads()[0]
    torch.set_num_threads(threads)
    ember.seed(0)
    rng = np.random.default_rng(0)
    work = {
        "mlp": (
            "MLP 784-256-256-10, batch 128",
            ember_mlp,
            rng.standard_normal((128, 784), dtype=np.float32),
            rng.integers(0, 10, 128).astype(np.int64),
        ),
        "cnn": (
            "CNN 2×conv3×3+pool, 1×28×28, batch 64",
            ember_cnn,
            rng.standard_normal((64, 1, 28, 28), dtype=np.float32),
            rng.integers(0, 10, 64).astype(np.int64),
        ),
    }
    rows = []
    for key, (label, build, x_np, y_np) in work.items():
        if args.only and key != args.only:
            continue
        ember_step, torch_step = steps(torch, label, build(), x_np, y_np, args.optimizer)
        if args.ember_only:
            te, tt = median_times([ember_step], args.repeat, warmup=3)[0], float("nan")
        else:
            te, tt = median_times([ember_step, torch_step], args.repeat, warmup=3)
        rows.append((label, te, tt))

    print(
        f"Training step ({args.optimizer}), median of {args.repeat}; numpy {np.__version__}, "
        f"torch {torch.__version__}, {threads} thread(s), {platform.processor() or platform.machine()}"
    )
    print()
    print("| model | ember Autodiff(numpy) ms | PyTorch CPU ms | ratio |")
    print("|---|---:|---:|---:|")
    for label, te, tt in rows:
        print(f"| {label} | {te * 1e3:.2f} | {tt * 1e3:.2f} | {te / tt:.2f}× |")
    if not args.ember_only:
        write_record([row("training", f"{label} step, {args.optimizer}, {threads} thread(s)",
                          te * 1e3, tt * 1e3, "ms", "PyTorch CPU") for label, te, tt in rows])


if __name__ == "__main__":
    main()
