"""MNIST on MicroPython: data helpers, a quick trainer and ``demo_embedded`` for
``ember demo mnist --embedded``."""

from __future__ import annotations

import os
import tempfile

from ..export.ir import _np

# uint8 pixel b → (b / 255 - MEAN) / STD, the normalisation of ember.demos.mnist_model
_MEAN, _STD = 0.1307, 0.3081
INPUT_TRANSFORM = (1.0 / (255.0 * _STD), -_MEAN / _STD)


def mnist_arrays(split: str = "test", limit: int | None = None):
    """(images uint8 (N, 784), labels int64 (N,)) from ``ember.dataset.MnistDataset``."""
    from ..dataset import MnistDataset

    np = _np()
    ds = MnistDataset(split)
    images = np.frombuffer(ds.images, dtype=np.uint8).reshape(-1, 784)
    labels = np.frombuffer(ds.labels, dtype=np.uint8).astype(np.int64)
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    return images, labels


def normalize(images_u8):
    """uint8 (N, 784) → float32 (N, 1, 28, 28), exactly as the board computes it."""
    np = _np()
    mul, add = (np.float32(v) for v in INPUT_TRANSFORM)
    return (images_u8.astype(np.float32) * mul + add).reshape(-1, 1, 28, 28)


def export_mnist(model, path, kind: str, images_u8):
    """Write an MNIST ``model`` for the boards as ``kind``: "f32", "int8" (calibrated on the
    first 200 of ``images_u8``) or "int4" (ember.quantize's weight-only preset); the boards
    feed raw bytes (``INPUT_TRANSFORM``). Returns the export report.

    >>> import numpy as np, os, tempfile
    >>> images = np.zeros((4, 28, 28), np.uint8)
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.emb")
    >>> report = export_mnist(mnist_mlp(16), path, "int8", images)
    >>> report.layers, report.size_bytes < report.float_size_bytes / 3
    (['linear+relu (784, 1, 1)->(16, 1, 1)', 'linear (16, 1, 1)->(10, 1, 1)'], True)
    """
    import ember
    from ..export import export

    if kind not in ("f32", "int8", "int4"):
        raise ValueError(f"export_mnist: kind {kind!r}; valid: 'f32', 'int8', 'int4'")
    if kind == "int4":
        return export(ember.quantize(model, None, "int4"), path, (1, 28, 28),
                      input_transform=INPUT_TRANSFORM)
    return export(model, path, (1, 28, 28), int8=kind == "int8", input_transform=INPUT_TRANSFORM,
                  calibration=normalize(images_u8[:200]) if kind == "int8" else None)


def mnist_mlp(hidden: int = 128):
    """The MLP counterpart of ``mnist_cnn``: Flatten → Linear(784, hidden) → ReLU → Linear."""
    from .. import nn

    return nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def train_briefly(model, images_u8, labels, *, steps: int = 200, batch: int = 64,
                  lr: float = 2e-3, seed: int = 0):
    """A few hundred Adam steps on the Autodiff numpy backend (enough for ~90%+ on MNIST);
    returns the trained model (its parameters live on ``autodiff-numpy``)."""
    import ember

    from .. import nn, optim

    np = _np()
    model = model.to(backend="autodiff-numpy")
    model.train()
    opt = optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    x_all = normalize(images_u8)
    for _ in range(steps):
        idx = rng.integers(0, len(x_all), batch)
        x = ember.tensor(x_all[idx], backend="autodiff-numpy")
        y = ember.tensor(labels[idx].astype(np.int64), backend="autodiff-numpy")
        grads = loss_fn(model(x), y).backward()
        opt.step(grads)
    model.eval()
    return model


def demo_embedded(model=None, *, n: int = 20, int8: bool = False, tier: str = "auto",
                  heapsize: str = "256K", printer=print):
    """Export ``model`` (default: a briefly trained ``mnist_cnn``), run it on the local
    MicroPython over ``n`` held-out digits and print predictions, time per image and heap.

    Returns the :class:`~ember.export.micropython.MicroRun`.
    """
    from ..export.api import export
    from ..export.micropython import find_micropython, run_on_micropython
    from .mnist_model import mnist_cnn

    micropython = find_micropython()  # what is missing is said before any work
    train_x, train_y = mnist_arrays("train")
    if model is None:
        printer("training mnist_cnn briefly (200 steps)...")
        model = train_briefly(mnist_cnn(), train_x, train_y)
    test_x, test_y = mnist_arrays("test", n)
    with tempfile.TemporaryDirectory(prefix="ember-mnist-") as tmp:
        path = os.path.join(tmp, "mnist.emb")
        report = export(model, path, (1, 28, 28), int8=int8, input_transform=INPUT_TRANSFORM,
                        calibration=normalize(train_x[:256]) if int8 else None,
                        evaluate=(normalize(test_x), test_y) if int8 else None)
        printer(str(report))
        run = run_on_micropython(path, test_x, test_y, tier=tier, heapsize=heapsize,
                                 micropython=micropython)
    printer(f"MicroPython, {run.tier} kernels, -X heapsize={heapsize}:")
    printer(f"  predictions {run.predictions}")
    printer(f"  labels      {[int(v) for v in test_y]}")
    printer(f"accuracy {100 * run.accuracy:.1f}% · {run.ms_per_image:.2f} ms/image · heap after "
            f"load {run.heap_after_load:,} bytes")
    return run
