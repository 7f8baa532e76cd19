"""Where a worker's rows come from: columns in memory or a Ray Dataset (or its shard).

A *source* is either a mapping ``{column: numpy array}`` (all of one length) or anything with
Ray Data's ``iter_batches`` (a ``ray.data.Dataset``, the ``DataIterator`` a Ray Train worker
gets from ``get_dataset_shard``). Batches are ``{column: numpy array}`` either way, in the
source's order, so a run that restarts can skip the batches it already trained on.

>>> import numpy as np
>>> cols = {"x": np.arange(5), "y": np.arange(5) * 10}
>>> [b["y"].tolist() for b in iter_batches(cols, 2)]
[[0, 10], [20, 30], [40]]
>>> [b["x"].tolist() for b in iter_batches(cols, 2, skip=1)]
[[2, 3], [4]]
>>> MapColumn(lambda v: [v, -v], "x", "pair")(cols)["pair"].tolist()
[[0, 0], [1, -1], [2, -2], [3, -3], [4, -4]]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping


def iter_batches(source, batch_size: int, skip: int = 0) -> Iterator[dict]:
    """The batches of ``source`` in order, the first ``skip`` batches left out.

    >>> import numpy as np
    >>> [b["x"].tolist() for b in iter_batches({"x": np.arange(5)}, 2, skip=1)]
    [[2, 3], [4]]
    """
    if isinstance(source, Mapping):
        n = num_rows(source)
        for start in range(skip * batch_size, n, batch_size):
            yield {k: v[start: start + batch_size] for k, v in source.items()}
        return
    if not hasattr(source, "iter_batches"):
        raise TypeError(
            f"ember.distributed: data must be {{column: numpy array}} or a Ray Dataset, got "
            f"{type(source).__name__}"
        )
    for i, batch in enumerate(source.iter_batches(batch_size=batch_size, batch_format="numpy")):
        if i >= skip:
            yield batch


class MapColumn:
    """``MapColumn(fn, source, target)(batch)``: the batch with ``target`` = ``fn`` of each row
    of ``source``, stacked — per-row preprocessing (decode a file, crop) as a function for
    ``Dataset.map_batches``, run as parallel Ray tasks ahead of the predicting actors.

    >>> import numpy as np
    >>> MapColumn(lambda v: v * 10, "x", "x10")({"x": np.arange(3)})["x10"].tolist()
    [0, 10, 20]
    """

    def __init__(self, fn, source: str, target: str):
        self.fn, self.source, self.target = fn, source, target

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        return {**batch, self.target: np.stack([self.fn(v) for v in batch[self.source]])}


def num_rows(columns: Mapping) -> int:
    """The common length of in-memory columns (a ValueError names the odd one out)."""
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"ember.distributed: columns of different lengths: {lengths}")
    return next(iter(lengths.values()))


def to_ray_dataset(columns: Mapping, block_rows: int):
    """A Ray Dataset of in-memory columns in blocks of ``block_rows`` rows, in order.

    Multi-dimensional columns (images) become Ray's tensor columns. With equal blocks, Ray
    Train's split hands them to the workers in turn (with ``preserve_order``), so step ``k``
    of N workers trains on the same rows as step ``k`` of one worker with N times its batch.

    Needs Ray (``pip install 'ember[ray]'``); importing it takes seconds, so this one is not run:

    >>> import numpy as np
    >>> ds = to_ray_dataset({"x": np.arange(6)}, block_rows=2)  # doctest: +SKIP
    >>> ds.count()  # doctest: +SKIP
    6
    """
    from .extras import require

    data = require("ray.data", "ember.distributed.to_ray_dataset")
    pa = require("pyarrow", "ember.distributed.to_ray_dataset")
    from ray.data.extensions import ArrowTensorArray

    def column(v):
        return ArrowTensorArray.from_numpy(v) if v.ndim > 1 else pa.array(v)

    n = num_rows(columns)
    tables = [
        pa.table({k: column(v[start: start + block_rows]) for k, v in columns.items()})
        for start in range(0, n, block_rows)
    ]
    return data.from_arrow(tables)
