"""Batching and the DataLoader (seeded shuffling, background prefetching).

>>> from ember.dataset import DataLoader, InMemoryDataset
>>> items = InMemoryDataset([([float(i), float(i)], i % 2) for i in range(10)])
>>> loader = DataLoader(items, batch_size=4, shuffle=True, seed=0)
>>> [tuple(x.shape) for x, y in loader]
[(4, 2), (4, 2), (2, 2)]
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import dtype as dt
from ..tensordata import TensorData
from .base import Dataset


class Batcher:
    r"""Turns a list of items into batched tensors on ``backend``.

    Items may be numbers, bytes (uint8 rows), lists, ``array.array``s, numpy arrays, TensorData or Tensors, or
    tuples/dicts of those (batched field by field). Floats become ``float_dtype``, ints int64.

    >>> batch = Batcher()([([1.0, 2.0], 0), ([3.0, 4.0], 1)])
    >>> batch[0].tolist(), batch[1].tolist(), batch[1].dtype
    ([[1.0, 2.0], [3.0, 4.0]], [0, 1], ember.int64)
    >>> Batcher().stack([b"\x01\x02", b"\x03\x04"]).tolist()  # bytes are uint8 rows
    [[1, 2], [3, 4]]
    """

    def __init__(self, backend=None, float_dtype=None):
        self.backend = backend
        self.float_dtype = float_dtype

    def __call__(self, items: list) -> Any:
        first = items[0]
        if isinstance(first, tuple):
            return tuple(self([it[i] for it in items]) for i in range(len(first)))
        if isinstance(first, dict):
            return {k: self([it[k] for it in items]) for k in first}
        return self.stack(items)

    def stack(self, items: list):
        """One batched tensor from a list of items of one kind (no tuples/dicts: ``__call__`` splits
        those field by field).
        """
        from ..ops.creation import tensor
        from ..tensor import Tensor

        first = items[0]
        if isinstance(first, Tensor):
            from ..ops.shape_ops import stack

            return stack(items).to(self.backend) if self.backend else stack(items)
        if hasattr(first, "__array_interface__"):
            import numpy as np

            batch = np.stack(items)
            if batch.dtype.kind == "f" and self.float_dtype is not None:
                batch = batch.astype(dt.as_dtype(self.float_dtype).name)
            elif batch.dtype.kind == "f" and batch.dtype != np.dtype(dt.default_float.name):
                batch = batch.astype(dt.default_float.name)
            return tensor(batch, backend=self.backend)
        if isinstance(first, (bytes, bytearray)):  # raw uint8 rows, e.g. MNIST images
            raw = b"".join(items)
            return tensor(TensorData(raw, (len(items), len(first)), dt.uint8), backend=self.backend)
        if isinstance(first, TensorData):
            if any(it.shape != first.shape or it.dtype != first.dtype for it in items):
                raise ValueError(
                    f"Batcher: items differ in shape/dtype ({first.shape} {first.dtype} vs "
                    f"others); resize or pad them to one shape"
                )
            raw = b"".join(it.buffer for it in items)  # bytes are already in the final layout
            return tensor(TensorData(raw, (len(items), *first.shape), first.dtype),
                          backend=self.backend)
        if isinstance(first, (int, float, bool)):
            kind = float if any(isinstance(v, float) for v in items) else type(first)
            d = self.float_dtype if kind is float else (dt.bool_ if kind is bool else dt.int64)
            return tensor(TensorData.from_values(items, (len(items),),
                                                 dt.as_dtype(d or dt.default_float)),
                          backend=self.backend)
        # sequences (lists, array.array): a flat row per item, nested lists keep their shape
        if isinstance(first, array):
            shape = (len(items), len(first))
            flat = [v for it in items for v in it]
            is_float = first.typecode in "fd"
        else:
            td = TensorData.from_list(items)
            shape, flat, is_float = td.shape, td.values(), td.dtype.is_float
        d = dt.as_dtype(self.float_dtype or dt.default_float) if is_float else dt.int64
        return tensor(TensorData.from_values(flat, shape, d), backend=self.backend)


class DataLoader:
    """Iterates a dataset in batches.

    ``shuffle`` draws a new order each epoch from ``seed + epoch``; ``num_workers`` threads
    prefetch batches in the background without changing their order or content, so results
    for a seed are the same with or without prefetching. ``state_dict()`` records the epoch
    so a resumed run sees the same orders.

    >>> from ember.dataset import InMemoryDataset
    >>> loader = DataLoader(InMemoryDataset(list(range(5))), batch_size=2, shuffle=True, seed=1)
    >>> len(loader), loader.batch_indices(0) == loader.batch_indices(0)
    (3, True)
    >>> sorted(i for batch in loader.batch_indices(0) for i in batch)
    [0, 1, 2, 3, 4]
    >>> first = [b.tolist() for b in loader]  # epoch 0
    >>> state = loader.state_dict(); state
    {'epoch': 1, 'seed': 1}
    >>> loader.load_state_dict({"epoch": 0, "seed": 1})
    >>> [b.tolist() for b in loader.iter_from(1)] == first[1:]  # resume epoch 0 at batch 1
    True
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        batcher: Callable[[list], Any] | None = None,
        num_workers: int = 0,
        prefetch: int = 2,
    ):
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {batch_size}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.batcher = batcher or Batcher()
        self.num_workers = num_workers
        self.prefetch = max(1, prefetch)
        self.epoch = 0

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def batch_indices(self, epoch: int) -> list[list[int]]:
        """The dataset indices of each batch of ``epoch`` (shuffled from ``seed`` and ``epoch``)."""
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        return batches

    def _load(self, indices: list[int]):
        return self.batcher([self.dataset[i] for i in indices])

    def iter_from(self, start_batch: int = 0) -> Iterator:
        """Iterate the current epoch from batch ``start_batch`` (used when resuming)."""
        batches = self.batch_indices(self.epoch)[start_batch:]
        self.epoch += 1
        if self.num_workers <= 0:
            for b in batches:
                yield self._load(b)
            return
        with ThreadPoolExecutor(self.num_workers, thread_name_prefix="ember-loader") as pool:
            pending = [pool.submit(self._load, b) for b in batches[: self.prefetch]]
            for i in range(len(batches)):
                result = pending.pop(0).result()
                nxt = i + self.prefetch
                if nxt < len(batches):
                    pending.append(pool.submit(self._load, batches[nxt]))
                yield result

    def __iter__(self) -> Iterator:
        return self.iter_from(0)

    def state_dict(self) -> dict:
        """``{"epoch", "seed"}``: what a resumed run needs to draw the same orders."""
        return {"epoch": self.epoch, "seed": self.seed}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.epoch, self.seed = int(state["epoch"]), int(state["seed"])
