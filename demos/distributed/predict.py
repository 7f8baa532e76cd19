"""Batch inference on Ray Data: the trained MNIST CNN over the test set on N actors.

    python demos/distributed/predict.py runs/distributed/final.ckpt            # 2 actors
    python demos/distributed/predict.py runs/distributed/final.ckpt --actors 1 # no Ray

Each actor loads the model once (``Predictor``, a ``Dataset.map_batches`` class) and turns
numpy batches into numpy predictions; rows come back in their input order.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from mnist_columns import accuracy, mnist_columns

from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.distributed import load_model, predict


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", help="final.ckpt of demos/distributed/train.py")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=250)
    parser.add_argument("--address", default=None, help="a Ray cluster (default: start one)")
    args = parser.parse_args(argv)

    if args.actors > 1 or args.address:
        import ray

        if not ray.is_initialized():
            ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    test = mnist_columns("test")
    started = time.perf_counter()
    out = predict(test, partial(load_model, args.record, mnist_cnn), num_actors=args.actors,
                  batch_size=args.batch_size, inputs="image", transform=preprocess)
    if not isinstance(out, dict):  # a Ray Dataset: gather its rows, in order
        rows = out.take_all()
        out = {k: np.stack([r[k] for r in rows]) for k in ("label", "prediction")}
    seconds = time.perf_counter() - started
    summary = {"actors": args.actors, "images": len(out["label"]),
               "accuracy": round(accuracy(out["prediction"], test["label"]), 4),
               "in_order": bool((out["label"] == test["label"]).all()),
               "seconds": round(seconds, 2)}
    print(f"{summary['images']} digits on {args.actors} actor(s): accuracy "
          f"{summary['accuracy']:.4f} in {seconds:.1f} s")
    return summary


if __name__ == "__main__":
    main()
