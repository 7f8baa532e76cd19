"""A CSV dataset with typed columns, for regression and classification.

>>> import io, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "d.csv")
>>> _ = open(path, "w").write("x1,x2,label\\n1.5,2,cat\\n0.5,1,dog\\n")
>>> ds = CsvDataset(path, target="label")
>>> ds[0], ds.classes
(([1.5, 2.0], 0), ['cat', 'dog'])
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence

from ..errors import DatasetError


class CsvDataset:
    r"""Rows of a CSV file as ``(features, target)``.

    ``features`` are the float columns listed in ``features`` (default: every column but the
    target). The target is a float for ``task="regression"``; for ``"classification"`` string
    labels map to class indices (sorted, listed in ``.classes``). Every value is parsed once,
    up front, and a bad cell is reported with its row and column.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "flowers.csv")
    >>> _ = open(path, "w").write("petal,sepal,kind\n1.5,3.0,iris\n4.0,2.5,rose\n1.0,2.0,iris\n")
    >>> ds = CsvDataset(path, target="kind")
    >>> len(ds), ds.classes, ds[1]
    (3, ['iris', 'rose'], ([4.0, 2.5], 1))
    """

    def __init__(self, path: str | os.PathLike, target: str, features: Sequence[str] | None = None,
                 task: str = "classification", delimiter: str = ","):
        if task not in ("classification", "regression"):
            raise DatasetError(f"CsvDataset: task must be 'classification' or 'regression', got {task!r}")
        path = os.fspath(path)
        try:
            with open(path, newline="") as f:
                rows = list(csv.reader(f, delimiter=delimiter))
        except OSError as e:
            raise DatasetError(f"CsvDataset: can't read {path}: {e.strerror}") from e
        except csv.Error as e:
            raise DatasetError(f"CsvDataset: {path} is not valid CSV: {e}") from e
        if not rows:
            raise DatasetError(f"CsvDataset: {path} is empty (expected a header row)")
        header, body = rows[0], [r for r in rows[1:] if r]
        if target not in header:
            raise DatasetError(f"CsvDataset: no column {target!r} in {path}; columns: {header}")
        names = list(features) if features is not None else [c for c in header if c != target]
        missing = [c for c in names if c not in header]
        if missing:
            raise DatasetError(f"CsvDataset: columns {missing} not in {path}; columns: {header}")
        cols = [header.index(c) for c in names]
        tcol = header.index(target)
        self.feature_names, self.task = names, task
        self.features: list[list[float]] = []
        raw_targets = []
        for line, row in enumerate(body, start=2):
            if len(row) != len(header):
                raise DatasetError(
                    f"CsvDataset: {path} line {line} has {len(row)} cells, header has {len(header)}"
                )
            try:
                self.features.append([float(row[c]) for c in cols])
            except ValueError:
                bad = next(c for c in cols if not _is_float(row[c]))
                raise DatasetError(
                    f"CsvDataset: {path} line {line}, column {header[bad]!r}: "
                    f"{row[bad]!r} is not a number"
                ) from None
            raw_targets.append(row[tcol])
        if task == "regression":
            try:
                self.targets: list = [float(v) for v in raw_targets]
            except ValueError as e:
                raise DatasetError(f"CsvDataset: target column {target!r}: {e}") from None
            self.classes: list[str] = []
        else:
            self.classes = sorted(set(raw_targets), key=_class_key)
            index = {c: i for i, c in enumerate(self.classes)}
            self.targets = [index[v] for v in raw_targets]

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int):
        return self.features[index], self.targets[index]


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _class_key(label: str):
    """Numeric labels sort numerically ('2' < '10'), others alphabetically."""
    return (0, float(label), "") if _is_float(label) else (1, 0.0, label)
