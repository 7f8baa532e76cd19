"""Quantization-aware training (issue 17): held-out accuracy of the MNIST demo CNN as float32,
PTQ int8 (``ember.quantize``) and int8 after one epoch of QAT (``prepare_qat`` → train →
``convert_qat``), side by side in one run, and the cost of a QAT epoch against a float epoch.

    .venv/bin/python benchmarks/bench_qat.py [--epochs 4] [--outlier 100] [--lr 1e-4]

What runs (numpy, ``Autodiff(numpy)`` for training, one BLAS thread):

1. the demo CNN trained for ``--epochs`` by ``ember demo mnist``'s own training
   (``train_mnist``: 90 % of the training split, random shifts, Adam + cosine);
2. **one more epoch** over the same training digits (same shifts, Adam at ``--lr``), twice,
   in alternating steps: the float model (the control: is a gain from QAT or from more
   training?) and its ``prepare_qat`` copy (calibrated on 512 training digits, as PTQ);
   the time of each step is kept, so the epoch cost ratio comes from the same machine load;
3. held-out test accuracy (the MNIST test split) of: float32, float32 + 1 epoch, PTQ int8 of
   each, and the QAT model converted to int8 (also checked against the fake-quant model);
4. ``--outlier K`` (0: skip): the same with the most active hidden unit of the 1568→64 Linear
   (on the calibration digits) scaled ×K
   in and ×1/K out (the float function is unchanged: ReLU is positively homogeneous) — a
   single large channel, as real networks have, which makes the next layer's per-tensor int8
   input step K× coarser: where PTQ loses points and QAT has something to win back.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from _common import pin_blas_threads, row, write_record

if __name__ == "__main__":
    pin_blas_threads("1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from ember import nn
from ember.dataset import DataLoader, MnistDataset, ShuffledDataset, split
from ember.dataset.transforms import RandomCrop
from ember.demos.mnist import evaluate, load_trained, train_mnist
from ember.demos.mnist_model import preprocess
from ember.optim import Adam
from ember.quantize import convert_qat, prepare_qat

SEED = 0
AD = "autodiff-numpy"  # one instance: tensors of two Autodiff(numpy) wrappers don't mix


def _data():
    """The training part ``train_mnist`` trains on (same split, same seed), 512 of its
    digits for calibration, and the held-out test loader."""
    full = MnistDataset("train")
    train_part, _ = split(ShuffledDataset(full, seed=SEED), [0.9, 0.1])
    calibration = preprocess(next(iter(DataLoader(train_part, batch_size=512)))[0])
    return train_part, calibration, DataLoader(MnistDataset("test"), batch_size=512)


def _one_more_epoch(models, train_part, lr: float) -> list[float]:
    """One epoch of every model in ``models`` over the same batches, a step of each in turn;
    returns each model's seconds (sum of its steps)."""
    ad = ember.get_backend(AD)
    loader = DataLoader(train_part, batch_size=64, shuffle=True, seed=SEED + 1)
    shift = RandomCrop(28, padding=2)
    opts = [Adam(m.parameters(), lr=lr) for m in models]
    spent = [0.0] * len(models)
    for m in models:
        m.train()
    for x, y in loader:
        x, y = shift(preprocess(x.to(ad))), y.to(ad)
        for i, (m, opt) in enumerate(zip(models, opts)):
            t0 = time.perf_counter()
            opt.step(nn.loss.cross_entropy(m(x), y).backward())
            spent[i] += time.perf_counter() - t0
    return spent


def _outlier(model, k: float, calibration):
    """``model`` with the most active hidden unit (on ``calibration``) of its 1568→64 Linear
    scaled ×k in, ×1/k out."""
    linear, head = model[7], model[9]
    seen = []
    hook = model[8].register_forward_hook(lambda m, args, out: seen.append(out.numpy()))
    with ember.no_grad():
        model.eval()(calibration)
    hook.remove()
    unit = int(np.concatenate(seen).mean(axis=0).argmax())
    w, b, w2 = linear.weight.numpy(), linear.bias.numpy(), head.weight.numpy()
    w[unit] *= k
    b[unit] *= k
    w2[:, unit] /= k
    for p, v in ((linear.weight, w), (linear.bias, b), (head.weight, w2)):
        p.assign(ember.tensor(v, backend=p.backend))
    return model


def run(model, label: str, train_part, calibration, test_loader, lr: float,
        record: list) -> list[str]:
    numpy = ember.get_backend("numpy")
    ad = ember.get_backend(AD)

    def acc(m):
        return evaluate(m.to(numpy), test_loader, numpy, jit=False)

    f32, ptq = acc(model), acc(ember.quantize(model, calibration))
    tuned = nn.module.clone_module(model).to(ad)
    qat = prepare_qat(model, calibration).to(ad)
    t_float, t_qat = _one_more_epoch([tuned, qat], train_part, lr)
    q = convert_qat(qat).to(numpy)
    rows = [(f"float32 ({label})", f32), ("PTQ int8", ptq),
            ("float32 + 1 epoch (control)", acc(tuned)),
            ("PTQ int8 of float32 + 1 epoch", acc(ember.quantize(tuned, calibration))),
            ("**QAT int8, 1 epoch** (prepare_qat → convert_qat)", acc(q))]
    fake = acc(qat)  # now on numpy, in eval mode
    x = calibration[:64]
    with ember.no_grad():
        diff = float(np.abs(q(x).numpy() - qat(x).numpy()).max())
    lines = ["| model | held-out accuracy | vs float32 |", "|---|---:|---:|"]
    lines += [f"| {name} | {a:.2%} | {100 * (a - f32):+.2f} points |" for name, a in rows]
    lines += ["", f"QAT fake-quant model (eval) {fake:.2%}; converted int8 vs fake-quant logits "
                  f"max |diff| {diff:.2e} on 64 digits. Epoch time (steps alternating): float "
                  f"{t_float:.1f} s, QAT {t_qat:.1f} s = **{t_qat / t_float:.2f}x**."]
    record += [row("quant", f"MNIST CNN ({label}): held-out accuracy, QAT int8 after 1 epoch",
                   100 * rows[-1][1], 100 * ptq, "%", "PTQ int8 (ember)", higher_is_better=True,
                   note=f"float32 {f32:.2%}"),
               row("quant", f"MNIST CNN ({label}): one training epoch with QAT", t_qat, t_float,
                   "s", "one float32 epoch (ember)")]
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=4, help="float training epochs (train_mnist)")
    p.add_argument("--lr", type=float, default=1e-4, help="Adam lr of the extra epoch")
    p.add_argument("--outlier", type=float, default=100.0,
                   help="scale of the outlier hidden unit (0: skip that section)")
    args = p.parse_args()
    print(f"## {date.today()} — bench_qat ({platform.machine()}, {platform.python_version()}, "
          f"numpy {np.__version__})\n", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = train_mnist(epochs=args.epochs, run_dir=tmp, seed=SEED)
        model = load_trained(tmp)
    print(f"Float training: {args.epochs} epochs, {summary['sizes']['train']} digits, "
          f"{time.perf_counter() - t0:.0f} s; test split {summary['sizes']['test']} digits.\n",
          flush=True)
    train_part, calibration, test_loader = _data()
    record = []
    print("\n".join(run(model, f"{args.epochs} epochs", train_part, calibration, test_loader,
                        args.lr, record)) + "\n", flush=True)
    if args.outlier:
        print(f"With one outlier hidden unit (×{args.outlier:g} in, ×1/{args.outlier:g} out):\n")
        print("\n".join(run(_outlier(model, args.outlier, calibration), "outlier unit", train_part,
                            calibration, test_loader, args.lr, record)), flush=True)
    write_record(record)


if __name__ == "__main__":
    main()
