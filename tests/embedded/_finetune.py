"""Helpers for the last-layer fine-tuning tests: the CPython reference (ember Autodiff + SGD)
and the MicroPython script that runs ember_micro.LastLayer and prints what it learned."""

from __future__ import annotations

import numpy as np


def autodiff_sgd(model, x, labels, lr):
    """Train a copy of ``model``'s last Linear on the body's features, one example per SGD
    step, with ember's Autodiff, mean cross-entropy and optim.SGD. Returns (weight (out, in),
    bias, losses before each step), as float64 numpy."""
    import ember
    from ember import nn, optim
    from ember.export import model_logits

    layers = list(model.children())
    body, last = nn.Sequential(*layers[:-1]), layers[-1]
    feats = model_logits(body, x)
    head = nn.Linear(last.weight.shape[1], last.weight.shape[0]).to(backend="autodiff-numpy")
    head.weight.assign(ember.tensor(last.weight.numpy(), backend="autodiff-numpy"))
    head.bias.assign(ember.tensor(last.bias.numpy(), backend="autodiff-numpy"))
    opt = optim.SGD(head.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for f, y in zip(feats, labels):
        xf = ember.tensor(f[None].astype(np.float32), backend="autodiff-numpy")
        yt = ember.tensor(np.array([y], dtype=np.int64), backend="autodiff-numpy")
        loss = loss_fn(head(xf), yt)
        losses.append(float(loss.item()))
        opt.step(loss.backward())
    return (head.weight.numpy().astype(np.float64), head.bias.numpy().astype(np.float64),
            np.array(losses))


def finetune_script(mount: str, root: str, steps: int, lr: float) -> str:
    """MicroPython: load root/model.emb, SGD on root/x.u8 + y.u8, print losses, heap peak and
    the new weights (lines `loss v`, `heap_peak n`, `b v v ...`, `w v v ...`)."""
    return f"""\
import gc, sys, vfs, uctypes
{mount}
sys.path[:0] = ["{root}/lib"]
import ember_micro
m = ember_micro.Model("{root}/model.emb")
t = ember_micro.LastLayer(m)
xs = open("{root}/x.u8", "rb")
ys = open("{root}/y.u8", "rb").read()
img = bytearray(m.in_size)
peak = 0
for i in range({steps}):
    xs.readinto(img)
    gc.collect()
    print("loss", "%.7g" % t.step(img, ys[i], {lr!r}))
    a = gc.mem_alloc()
    if a > peak:
        peak = a
print("heap_peak", peak)
print("b", " ".join(["%.7g" % v for v in t.layer.bias]))
w = t.layer.weights
for r in range(0, len(w), 64):
    print("w", " ".join(["%.7g" % w[j] for j in range(r, min(r + 64, len(w)))]))
"""


def parse(stdout: str) -> dict:
    got: dict = {"loss": [], "w": [], "b": [], "heap_peak": -1}
    for line in stdout.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "loss":
            got["loss"].append(float(parts[1]))
        elif parts[0] in ("w", "b"):
            got[parts[0]] += [float(v) for v in parts[1:]]
        elif parts[0] == "heap_peak":
            got["heap_peak"] = int(parts[1])
    return {k: np.array(v) if isinstance(v, list) else v for k, v in got.items()}
