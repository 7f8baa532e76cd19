"""Classify images stored one folder per class, with a tiny CNN.

    python demos/image_folder.py --data path/to/images     # images/cat/*.png, images/dog/*.png …
    python demos/image_folder.py --make-shapes data/shapes # draw a toy dataset first, then train

The layout is the usual one (as torchvision's ``ImageFolder``): each subfolder of ``--data``
is a class, named by the folder. Images are resized to ``--size`` and read as float (C, H, W)
in [0, 1]. Training augments each batch with random horizontal flips and normalises it
with per-channel statistics measured on the training images.

``--make-shapes`` draws circles, squares and triangles of random colour, size and place with
Pillow, so the script runs without any data of your own.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import ember
from ember import nn
from ember.dataset import DataLoader, ImageFolderDataset, InMemoryDataset, ShuffledDataset, split
from ember.dataset.transforms import Compose, Normalize, RandomHorizontalFlip
from ember.optim import Adam
from ember.train import Learner, PlainRenderer


def make_shapes(root: Path, per_class: int = 100, size: int = 24, seed: int = 0) -> None:
    """Draw ``per_class`` PNGs of each shape into ``root/<shape>/``."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    for shape in ("circle", "square", "triangle"):
        (root / shape).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            background = tuple(rng.randrange(0, 80) for _ in range(3))
            colour = tuple(rng.randrange(120, 256) for _ in range(3))
            img = Image.new("RGB", (size, size), background)
            draw = ImageDraw.Draw(img)
            r = rng.uniform(0.2, 0.4) * size
            cx, cy = rng.uniform(r, size - r), rng.uniform(r, size - r)
            if shape == "circle":
                draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)
            elif shape == "square":
                draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour)
            else:
                draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
            img.save(root / shape / f"{i:03d}.png")


def tiny_cnn(in_channels: int, classes: int, size: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * (size // 4) ** 2, classes),
    )


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description="A tiny CNN on an image folder.")
    p.add_argument("--data", default="data/shapes", help="folder with one subfolder per class")
    p.add_argument("--make-shapes", action="store_true",
                   help="draw a toy shapes dataset into --data first")
    p.add_argument("--size", type=int, default=24, help="images are resized to size×size")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--out", default="runs/image_folder")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    root = Path(args.data)
    if args.make_shapes:
        make_shapes(root, size=args.size, seed=args.seed)
    ember.seed(args.seed)
    backend = ember.Autodiff(ember.get_backend("numpy"))

    folder = ImageFolderDataset(root, size=(args.size, args.size))
    print(f"{len(folder)} images, classes {folder.classes}")
    # Decoding PNGs every epoch is wasted work for a small dataset: decode once, keep in memory
    # (as numpy arrays, which the DataLoader stacks in one call).
    cached = InMemoryDataset([(image.to_numpy(), label) for image, label in
                              (folder[i] for i in range(len(folder)))])
    train, valid = split(ShuffledDataset(cached, seed=args.seed), [0.8, 0.2])

    # Per-channel mean and std of the training images, for Normalize.
    pixels, _ = next(iter(DataLoader(train, batch_size=len(train))))  # (N, C, H, W)
    mean = pixels.mean(dim=(0, 2, 3)).tolist()
    std = pixels.std(dim=(0, 2, 3)).tolist()
    normalize = Normalize(mean, std)
    augment = Compose([RandomHorizontalFlip(p=0.5), normalize])  # draws from ember.seed

    model = tiny_cnn(len(mean), len(folder.classes), args.size).to(backend)

    def prepare(batch):
        images, labels = batch
        images = images.to(backend)
        # augment while training only; validation sees the images as they are
        return (augment(images) if model.training else normalize(images)), labels.to(backend)

    learner = Learner(model, Adam(model.parameters(), lr=args.lr), nn.loss.cross_entropy,
                      folder=args.out, num_classes=len(folder.classes), monitor="accuracy",
                      prepare=prepare, renderer=PlainRenderer())
    result = learner.fit(
        DataLoader(train, batch_size=args.batch_size, shuffle=True, seed=args.seed),
        DataLoader(valid, batch_size=256), epochs=args.epochs,
    )
    accuracy, epoch = result.best["accuracy"]
    print(f"best validation accuracy {accuracy:.2%} at epoch {epoch}; run folder {args.out}")
    return {"accuracy": accuracy, "classes": folder.classes, "history": result.history}


if __name__ == "__main__":
    main()
