"""``ember demo mnist``: train the demo CNN on MNIST (or Fashion-MNIST) and save everything.

The run folder gets the model record (``model.safetensors`` + ``model.json``), the run log
(``metrics.jsonl``/``.csv``), the training curves (``curves.png``), checkpoints and a
``summary.json`` with the held-out test accuracy.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .. import nn
from ..autodiff import Autodiff, no_grad
from ..backends import get_backend
from ..dataset import DataLoader, MnistDataset, ShuffledDataset, split
from ..optim import Adam
from ..optim.lr_scheduler import CosineAnnealingLR
from ..dataset.transforms import RandomCrop
from ..random import seed as set_seed
from ..io import atomic_write, save_file
from ..jit import benefits
from ..jit import jit as ember_jit
from ..train import Learner
from .acceleration import demo_backend
from .mnist_model import MEAN, STD, mnist_cnn, preprocess

DEFAULT_EPOCHS = {"mnist": 8, "fashion-mnist": 3}
TARGET_ACCURACY = {"mnist": 0.97, "fashion-mnist": 0.88}


def evaluate(model, loader, backend, jit: bool | None = None) -> float:
    """Top-1 accuracy of ``model`` over ``loader`` (no graph recorded); ``jit`` as in
    :class:`~ember.train.Learner`."""
    model.eval()
    use_jit = benefits(backend) if jit is None else jit
    forward = ember_jit(lambda x: model(preprocess(x)).argmax(dim=1)) if use_jit \
        else (lambda x: model(preprocess(x)).argmax(dim=1))
    correct = total = 0
    with no_grad():
        for x, y in loader:
            pred = forward(x.to(backend))
            correct += int((pred == y.to(backend)).sum().item())
            total += int(y.shape[0])
    return correct / total if total else float("nan")


def train_mnist(dataset: str = "mnist", backend: str = "numpy", epochs: int | None = None,
                batch_size: int = 64, lr: float = 2e-3, run_dir: str | Path | None = None,
                resume: bool = False, seed: int = 0, renderer=None,
                max_steps: int | None = None, jit: bool | None = None,
                int8: bool = False) -> dict:
    """Train, evaluate on the held-out test split, save the run; returns ``summary.json``.
    ``jit``: capture the training step with :func:`ember.jit` (default: on wgpu, over
    ``Fusion``; see :func:`~ember.demos.acceleration.demo_backend`). ``int8``: also quantize
    the trained model (:func:`quantize_run`), summary key ``"int8"``."""
    started = time.perf_counter()
    set_seed(seed)
    epochs = epochs or DEFAULT_EPOCHS[dataset]
    folder = Path(run_dir or Path("runs") / dataset)
    inner, jit = demo_backend(backend, jit)
    train_backend = inner if inner.caps.gradients else Autodiff(inner)

    full = MnistDataset("train", name=dataset)
    test = MnistDataset("test", name=dataset)
    train_part, valid_part = split(ShuffledDataset(full, seed=seed), [0.9, 0.1])
    train_loader = DataLoader(train_part, batch_size=batch_size, shuffle=True, seed=seed,
                              num_workers=1)
    valid_loader = DataLoader(valid_part, batch_size=512)
    test_loader = DataLoader(test, batch_size=512)

    model = mnist_cnn().to(train_backend)
    optimizer = Adam(model.parameters(), lr=lr)
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs * len(train_loader))

    # small random shifts: 8,500 digits are few, and the drawing page centres less exactly
    shift = RandomCrop(28, padding=2)  # draws from the default generator: checkpointed

    def prepare(batch):
        x, y = batch
        x = preprocess(x.to(train_backend))
        return (shift(x) if model.training else x), y.to(train_backend)

    learner = Learner(model, optimizer, nn.loss.cross_entropy, folder=folder, scheduler=scheduler,
                      scheduler_step="step", monitor="accuracy", prepare=prepare,
                      renderer=renderer, jit=jit)
    result = learner.fit(train_loader, valid_loader, epochs=epochs, resume=resume,
                         max_steps=max_steps)
    test_accuracy = evaluate(model, test_loader, train_backend, jit=learner.jit)

    inference = model.to(inner)
    save_file(inference.state_dict(), folder / "model.safetensors",
              metadata={"format": "ember.mnist_cnn/1"})
    config = {"architecture": "mnist_cnn", "channels": [16, 32], "hidden": 64,
              "mean": MEAN, "std": STD, "dataset": dataset, "classes": list(range(10))}
    _write_json(folder / "model.json", config)
    summary = {
        "dataset": dataset, "backend": backend, "train_backend": train_backend.name,
        "test_accuracy": round(test_accuracy, 4), "target_accuracy": TARGET_ACCURACY[dataset],
        "best": result.best, "best_epoch": result.best.get("accuracy", (None, None))[1],
        "epochs_run": result.epochs_run, "jit": learner.jit, "interrupted": result.interrupted,
        "max_steps_reached": result.max_steps_reached,
        "wall_time_s": round(time.perf_counter() - started, 1),
        "sizes": {"train": len(train_part), "valid": len(valid_part), "test": len(test)},
        "files": {"model": str(folder / "model.safetensors"), "config": str(folder / "model.json"),
                  "log": str(folder / "metrics.jsonl"), "plot": result.summary.get("plot"),
                  "checkpoints": str(folder / "checkpoints")},
        "data_source": full.source,
    }
    if int8:
        calibration = next(iter(DataLoader(train_part, batch_size=512)))[0]
        summary["int8"] = quantize_run(inference, folder, preprocess(calibration.to(inner)),
                                       test_loader, inner, test_accuracy)
    _write_json(folder / "summary.json", summary)
    return summary


def quantize_run(model, folder: Path, calibration, test_loader, backend,
                 f32_accuracy: float) -> dict:
    """Quantize the trained ``model`` to int8 (``ember.quantize``, preset ``"int8-u8"``: unsigned
    codes after the ReLUs, MSE ranges, bias correction, GPTQ rounding; calibrated on
    ``calibration``), measure it on the held-out test split, save it next to the float model
    as ``model_int8.safetensors``; returns sizes and accuracies."""
    from .. import quantize

    q = quantize(model, calibration, "int8-u8")
    accuracy = evaluate(q, test_loader, backend, jit=False)
    path = folder / "model_int8.safetensors"
    quantize.save(q, path)
    return {"test_accuracy": round(accuracy, 4), "f32_test_accuracy": round(f32_accuracy, 4),
            "change_points": round(100 * (accuracy - f32_accuracy), 2),
            "bytes": path.stat().st_size,
            "f32_bytes": (folder / "model.safetensors").stat().st_size, "file": str(path)}


def _write_json(path: Path, data: dict) -> None:
    with atomic_write(path) as f:
        f.write((json.dumps(data, indent=2) + "\n").encode())


def load_trained(folder: str | Path, backend: str = "numpy"):
    """The model saved by :func:`train_mnist` in ``folder``, ready for inference."""
    from ..io import load_file

    folder = Path(folder)
    config = json.loads((folder / "model.json").read_text())
    model = mnist_cnn(tuple(config["channels"]), config["hidden"]).to(get_backend(backend))
    model.load_state_dict(load_file(folder / "model.safetensors", backend=backend))
    return model.eval()
