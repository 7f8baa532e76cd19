"""Batch inference on Ray Data: the trained MNIST CNN over the test set, or EfficientNet-Lite0
(ImageNet) over a folder of photos, on N actors.

    python demos/distributed/predict.py runs/distributed/final.ckpt            # 2 actors
    python demos/distributed/predict.py runs/distributed/final.ckpt --actors 1 # no Ray
    python demos/distributed/predict.py --images PHOTOS/ --actors 2            # EfficientNet

Each actor loads the model once (``Predictor``, a ``Dataset.map_batches`` class) and turns
numpy batches into numpy predictions; rows come back in their input order. Photos are decoded
and centre-cropped by parallel Ray tasks (``MapColumn``) ahead of the actors.
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
from ember.distributed import MapColumn, load_model, predict, to_ray_dataset

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def gather(out, columns) -> dict:
    """``predict``'s result as ``{column: array}`` (a Ray Dataset's rows, in order)."""
    if isinstance(out, dict):
        return out
    rows = out.take_all()
    return {k: np.stack([r[k] for r in rows]) for k in columns}


def mnist(args) -> dict:
    test = mnist_columns("test")
    out = gather(predict(test, partial(load_model, args.record, mnist_cnn),
                         num_actors=args.actors, batch_size=args.batch_size, inputs="image",
                         transform=preprocess), ("label", "prediction"))
    return {"images": len(out["label"]),
            "accuracy": round(accuracy(out["prediction"], test["label"]), 4),
            "in_order": bool((out["label"] == test["label"]).all())}


def photos(args) -> dict:
    from ember.demos.classify import imagenet_labels, load_image
    from ember.demos.efficientnet import pretrained

    paths = sorted(str(p) for p in Path(args.images).iterdir()
                   if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise SystemExit(f"no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in {args.images}")
    decode = MapColumn(load_image, "path", "image")
    columns = {"path": np.array(paths)}
    if args.actors > 1:
        data = to_ray_dataset(columns, block_rows=args.batch_size).map_batches(
            decode, batch_size=args.batch_size, batch_format="numpy")
    else:
        data = decode(columns)
    out = gather(predict(data, partial(pretrained, fold=True), num_actors=args.actors,
                         batch_size=args.batch_size, inputs="image"), ("path", "prediction"))
    labels = imagenet_labels()
    top1 = [labels[i] for i in out["prediction"]]
    for path, label in zip(out["path"], top1):
        print(f"{Path(path).name}: {label}")
    return {"images": len(paths), "paths": [str(p) for p in out["path"]], "top1": top1,
            "in_order": [str(p) for p in out["path"]] == paths}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", nargs="?", help="final.ckpt of demos/distributed/train.py")
    parser.add_argument("--images", help="a folder of photos: EfficientNet-Lite0 instead")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="rows per batch (default: 250 digits, 8 photos)")
    parser.add_argument("--address", default=None, help="a Ray cluster (default: start one)")
    args = parser.parse_args(argv)
    if (args.record is None) == (args.images is None):
        parser.error("give a record (MNIST) or --images FOLDER (EfficientNet-Lite0)")
    args.batch_size = args.batch_size or (8 if args.images else 250)

    if args.actors > 1 or args.address:
        import ray

        if not ray.is_initialized():
            ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    started = time.perf_counter()
    summary = photos(args) if args.images else mnist(args)
    summary.update(actors=args.actors, seconds=round(time.perf_counter() - started, 2))
    print(f"{summary['images']} images on {args.actors} actor(s) in {summary['seconds']} s"
          + (f": accuracy {summary['accuracy']:.4f}" if "accuracy" in summary else ""))
    return summary


if __name__ == "__main__":
    main()
