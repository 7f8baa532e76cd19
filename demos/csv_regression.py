"""Regression on a CSV file: an MLP against a linear least-squares baseline.

    python demos/csv_regression.py                         # writes data/regression.csv if missing
    python demos/csv_regression.py --csv my.csv --target price --epochs 50

Without ``--csv`` the script writes a small synthetic table: four features and a target that
is a noisy *nonlinear* function of them, so a straight line explains only part of it and the
MLP should do clearly better. The score is R² on rows held out from training
(1 = perfect, 0 = no better than predicting the mean).
"""

from __future__ import annotations

import argparse
import csv
import math
import random
from pathlib import Path

import ember
import numpy as np
from ember import nn
from ember.dataset import CsvDataset, DataLoader, ShuffledDataset, split
from ember.optim import Adam


def write_synthetic_csv(path: Path, rows: int = 2000, seed: int = 0) -> None:
    """y = 2 sin(x1) + x2² − x3·x4 + 0.5 x1 + noise, features uniform in [−2, 2]."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["x1", "x2", "x3", "x4", "y"])
        for _ in range(rows):
            x1, x2, x3, x4 = (rng.uniform(-2, 2) for _ in range(4))
            y = 2 * math.sin(x1) + x2**2 - x3 * x4 + 0.5 * x1 + rng.gauss(0, 0.1)
            out.writerow([f"{v:.5f}" for v in (x1, x2, x3, x4, y)])


def r2_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return 1.0 - float(((y_true - y_pred) ** 2).sum() / ((y_true - y_true.mean()) ** 2).sum())


def as_arrays(dataset) -> tuple[np.ndarray, np.ndarray]:
    rows = [dataset[i] for i in range(len(dataset))]
    return (np.array([r[0] for r in rows], dtype=np.float64),
            np.array([r[1] for r in rows], dtype=np.float64))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description="MLP regression on a CSV file.")
    p.add_argument("--csv", default="data/regression.csv")
    p.add_argument("--target", default="y")
    p.add_argument("--rows", type=int, default=2000, help="rows of the synthetic table")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    path = Path(args.csv)
    if not path.exists():
        write_synthetic_csv(path, args.rows, args.seed)
        print(f"wrote {args.rows} synthetic rows to {path}")
    ember.seed(args.seed)
    backend = ember.Autodiff(ember.get_backend("numpy"))

    # Items are ([x1, x2, ...], y) with float targets; hold 20% of the rows out.
    table = CsvDataset(path, target=args.target, task="regression")
    train, test = split(ShuffledDataset(table, seed=args.seed), [0.8, 0.2])
    print(f"{len(table)} rows, features {table.feature_names}: {len(train)} train, "
          f"{len(test)} test")

    # Standardise features and target with training statistics only (no peeking at test).
    x_train, y_train = as_arrays(train)
    x_test, y_test = as_arrays(test)
    x_mean, x_std = x_train.mean(0), x_train.std(0) + 1e-8
    y_mean, y_std = y_train.mean(), y_train.std() + 1e-8
    mean = ember.tensor(x_mean.astype(np.float32), backend=backend)
    std = ember.tensor(x_std.astype(np.float32), backend=backend)

    # Baseline: ordinary least squares with an intercept, solved exactly by numpy.
    design = np.c_[x_train, np.ones(len(x_train))]
    coef, *_ = np.linalg.lstsq(design, y_train, rcond=None)
    baseline_r2 = r2_score(y_test, np.c_[x_test, np.ones(len(x_test))] @ coef)

    model = nn.Sequential(
        nn.Linear(len(table.feature_names), args.hidden), nn.Tanh(),
        nn.Linear(args.hidden, args.hidden), nn.Tanh(),
        nn.Linear(args.hidden, 1),
    ).to(backend)
    optimizer = Adam(model.parameters(), lr=args.lr)
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True, seed=args.seed)

    def predict(features) -> ember.Tensor:
        """Model output in the target's units, shape (N,)."""
        x = (features.to(backend) - mean) / std
        return model(x).squeeze(1) * y_std + y_mean

    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for features, target in loader:
            # the loss is on the standardised target so its scale doesn't depend on the data
            scaled = (predict(features) - y_mean) / y_std
            loss = nn.loss.mse_loss(scaled, (target.to(backend) - y_mean) / y_std)
            optimizer.step(loss.backward())
            total += loss.item() * target.shape[0]
        if epoch == 1 or epoch % 10 == 0 or epoch == args.epochs:
            print(f"epoch {epoch:3d}: train MSE (standardised) {total / len(train):.4f}")

    model.eval()
    with ember.no_grad():
        predicted = predict(ember.tensor(x_test.astype(np.float32))).numpy()
    model_r2 = r2_score(y_test, predicted.astype(np.float64))
    print(f"test R²: MLP {model_r2:.4f}  vs  linear least squares {baseline_r2:.4f}")
    return {"r2": model_r2, "baseline_r2": baseline_r2}


if __name__ == "__main__":
    main()
