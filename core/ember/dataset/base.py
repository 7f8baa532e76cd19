"""The Dataset protocol and composable wrappers (Burn's dataset crate, in Python).

A dataset is anything with ``__len__`` and ``__getitem__(int)``. Wrappers compose:

>>> from ember.dataset import InMemoryDataset, MappedDataset, ShuffledDataset, split
>>> data = InMemoryDataset(list(range(10)))
>>> squares = MappedDataset(data, lambda x: x * x)
>>> train, valid = split(ShuffledDataset(squares, seed=0), [0.8, 0.2])
>>> len(train), len(valid)
(8, 2)
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Dataset(Protocol):
    """The dataset protocol: ``len(ds)`` and ``ds[i]`` (an item: any value, a tuple for
    ``(input, target)``). Any sequence fits; the wrappers below compose.

    >>> from ember.dataset import Dataset
    >>> isinstance([1, 2, 3], Dataset), isinstance(InMemoryDataset([1]), Dataset)
    (True, True)
    """
    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def _check_index(index: int, length: int, name: str) -> int:
    if not isinstance(index, int):
        raise TypeError(f"{name}: index must be an int, got {type(index).__name__}")
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError(f"{name}: index {index} out of range for {length} items")
    return index


class InMemoryDataset:
    """A dataset over a list (or any sequence) of items.

    >>> ds = InMemoryDataset([("a", 0), ("b", 1)])
    >>> len(ds), ds[1], ds[-1]
    (2, ('b', 1), ('b', 1))
    """

    def __init__(self, items: Sequence):
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[_check_index(index, len(self.items), "InMemoryDataset")]


class TensorDataset:
    """A dataset over tensors of one length along dim 0: item ``i`` is the tuple of each
    tensor's row ``i``, as ``torch.utils.data.TensorDataset`` (a :class:`DataLoader` batches
    the rows back into tensors).

    >>> import ember
    >>> from ember.dataset import DataLoader
    >>> ds = TensorDataset(ember.arange(6.0).reshape(3, 2), ember.tensor([0, 1, 0]))
    >>> len(ds), ds[1][0].tolist(), ds[-1][1].item()
    (3, [2.0, 3.0], 0)
    >>> [(x.shape, y.tolist()) for x, y in DataLoader(ds, batch_size=2)]
    [((2, 2), [0, 1]), ((1, 2), [0])]
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: pass at least one tensor")
        sizes = [t.shape[0] if getattr(t, "shape", ()) else None for t in tensors]
        if sizes[0] is None or any(n != sizes[0] for n in sizes):
            shapes = ", ".join(str(getattr(t, "shape", type(t).__name__)) for t in tensors)
            raise ValueError(
                f"TensorDataset: the tensors must have one size along dim 0, got shapes {shapes}"
            )
        self.tensors = tensors

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, index: int) -> tuple:
        index = _check_index(index, len(self), "TensorDataset")
        return tuple(t[index] for t in self.tensors)


class MappedDataset:
    """Applies ``transform`` to every item when it is read (lazily).

    >>> MappedDataset(InMemoryDataset([1, 2, 3]), lambda x: x * 10)[2]
    30
    """

    def __init__(self, dataset: Dataset, transform: Callable[[Any], Any]):
        self.dataset, self.transform = dataset, transform

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int):
        return self.transform(self.dataset[index])


class ShuffledDataset:
    """A fixed, seeded permutation of another dataset.

    >>> ds = ShuffledDataset(InMemoryDataset(list(range(5))), seed=0)
    >>> order = [ds[i] for i in range(len(ds))]
    >>> sorted(order), order == [ShuffledDataset(InMemoryDataset(list(range(5))), seed=0)[i]
    ...                          for i in range(5)]  # the same seed, the same order
    ([0, 1, 2, 3, 4], True)
    """

    def __init__(self, dataset: Dataset, seed: int = 0):
        self.dataset = dataset
        self.order = list(range(len(dataset)))
        random.Random(seed).shuffle(self.order)

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index: int):
        return self.dataset[self.order[_check_index(index, len(self.order), "ShuffledDataset")]]


class PartialDataset:
    """Items ``start`` to ``stop`` (exclusive) of another dataset.

    >>> part = PartialDataset(InMemoryDataset(list("abcdef")), 2, 5)
    >>> len(part), [part[i] for i in range(len(part))]
    (3, ['c', 'd', 'e'])
    """

    def __init__(self, dataset: Dataset, start: int, stop: int):
        if not 0 <= start <= stop <= len(dataset):
            raise ValueError(
                f"PartialDataset: range [{start}, {stop}) is outside 0..{len(dataset)}"
            )
        self.dataset, self.start, self.stop = dataset, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, index: int):
        return self.dataset[self.start + _check_index(index, len(self), "PartialDataset")]


class ConcatDataset:
    """Several datasets one after another.

    >>> ds = ConcatDataset([InMemoryDataset([1, 2]), InMemoryDataset([3])])
    >>> len(ds), [ds[i] for i in range(len(ds))]
    (3, [1, 2, 3])
    """

    def __init__(self, datasets: Sequence[Dataset]):
        self.datasets = list(datasets)
        self.ends = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.ends.append(total)

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getitem__(self, index: int):
        index = _check_index(index, len(self), "ConcatDataset")
        which = bisect.bisect_right(self.ends, index)
        start = self.ends[which - 1] if which else 0
        return self.datasets[which][index - start]


class WindowedDataset:
    """Sliding windows of ``size`` consecutive items (for sequences and time series).

    >>> ds = WindowedDataset(InMemoryDataset([1, 2, 3, 4, 5]), size=3, stride=2)
    >>> len(ds), [list(ds[i]) for i in range(len(ds))]
    (2, [[1, 2, 3], [3, 4, 5]])
    """

    def __init__(self, dataset: Dataset, size: int, stride: int = 1):
        if size < 1 or stride < 1:
            raise ValueError(f"WindowedDataset: size and stride must be >= 1, got {size}, {stride}")
        self.dataset, self.size, self.stride = dataset, size, stride

    def __len__(self) -> int:
        n = len(self.dataset) - self.size
        return 0 if n < 0 else n // self.stride + 1

    def __getitem__(self, index: int):
        start = _check_index(index, len(self), "WindowedDataset") * self.stride
        return [self.dataset[start + i] for i in range(self.size)]


def split(dataset: Dataset, parts: Sequence[float] | Sequence[int]) -> list[PartialDataset]:
    """Consecutive parts by fractions summing to 1 (``[0.8, 0.2]``) or by item counts.

    Shuffle first (``ShuffledDataset``) when the source is ordered.

    >>> train, valid = split(InMemoryDataset(list(range(10))), [0.8, 0.2])
    >>> len(train), len(valid), valid[0]
    (8, 2, 8)
    >>> [len(p) for p in split(InMemoryDataset(list(range(10))), [3, 7])]
    [3, 7]
    """
    n = len(dataset)
    if all(isinstance(p, int) for p in parts):
        sizes = list(parts)
        if sum(sizes) > n:
            raise ValueError(f"split: sizes {sizes} add up to more than {n} items")
    else:
        if abs(sum(parts) - 1.0) > 1e-6 or any(p < 0 for p in parts):
            raise ValueError(f"split: fractions must be >= 0 and sum to 1, got {list(parts)}")
        sizes = [int(p * n) for p in parts]
        sizes[-1] = n - sum(sizes[:-1])
    out, start = [], 0
    for size in sizes:
        out.append(PartialDataset(dataset, start, start + size))
        start += size
    return out
