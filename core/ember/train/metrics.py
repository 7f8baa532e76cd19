"""Training metrics.

A metric accumulates over the batches of one epoch and reports a number (or a matrix) at the
end. Write your own by subclassing :class:`Metric`:

>>> class MaxLoss(Metric):
...     name = "max_loss"
...     def reset(self): self.value = float("-inf")
...     def update(self, step): self.value = max(self.value, step.loss)
...     def compute(self): return self.value

``step`` is a :class:`StepOutput`: the batch loss, logits/outputs and targets as numpy-free
flat Python lists (read once per batch), the batch size and the learning rate.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field


@dataclass
class StepOutput:
    """What one training or validation batch reports to the metrics: the mean loss, the batch size,
    per-item class scores and targets (flat Python lists), the learning rate, anything ``extra``.

    >>> step = StepOutput(loss=0.5, batch_size=2, predictions=[[0.1, 0.9], [0.8, 0.2]],
    ...                   targets=[1, 1], lr=0.01)
    >>> step.loss * step.batch_size, step.extra
    (1.0, {})
    """
    loss: float
    batch_size: int
    predictions: list[list[float]] | None = None  # per item: scores per class
    targets: list[int] | None = None
    lr: float | None = None
    extra: dict = field(default_factory=dict)


class Metric:
    """Base of every metric: ``reset`` at the start of an epoch, ``update`` per batch, ``compute``
    at the end. Class attributes: ``name`` (the column), ``higher_is_better``, ``per_step``
    (shown live) and ``tracked`` (a candidate for "best" and early stopping).

    >>> class Batches(Metric):
    ...     name = "batches"
    ...     def reset(self): self.n = 0
    ...     def update(self, step): self.n += 1
    ...     def compute(self): return self.n
    >>> m = Batches()
    >>> m.update(StepOutput(loss=1.0, batch_size=8)); m.compute()
    1
    """
    name = "metric"
    higher_is_better = True
    per_step = False  # shown live while the epoch runs (loss, items/s)
    tracked = True  # a candidate for "best" and early stopping (not lr, speed, resources)

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget everything accumulated (called at the start of each epoch and by ``__init__``).

        >>> m = Loss(); m.update(StepOutput(loss=2.0, batch_size=1)); m.reset()
        >>> m.count
        0
        """
        raise NotImplementedError

    def update(self, step: StepOutput) -> None:
        """Accumulate one batch's :class:`StepOutput`.

        >>> m = Loss()
        >>> m.update(StepOutput(loss=1.0, batch_size=1))
        >>> m.update(StepOutput(loss=4.0, batch_size=3))
        >>> m.total, m.count
        (13.0, 4)
        """
        raise NotImplementedError

    def compute(self):
        """The value over the batches seen since the last ``reset`` (NaN before any).

        >>> m = Accuracy()
        >>> m.compute()
        nan
        >>> m.update(StepOutput(loss=0.0, batch_size=1, predictions=[[0.0, 1.0]], targets=[1]))
        >>> m.compute()
        1.0
        """
        raise NotImplementedError


class Loss(Metric):
    """The mean loss over the epoch, each batch weighted by its size.

    >>> m = Loss()
    >>> m.update(StepOutput(loss=1.0, batch_size=1)); m.update(StepOutput(loss=4.0, batch_size=3))
    >>> m.compute()
    3.25
    """
    name, higher_is_better, per_step = "loss", False, True

    def reset(self):
        self.total, self.count = 0.0, 0

    def update(self, step):
        self.total += step.loss * step.batch_size
        self.count += step.batch_size

    def compute(self):
        return self.total / self.count if self.count else float("nan")


def _argmax(row: list[float]) -> int:
    return max(range(len(row)), key=row.__getitem__)


class Accuracy(Metric):
    """The share of items whose highest score is at the target class.

    >>> m = Accuracy()
    >>> m.update(StepOutput(0.0, 2, predictions=[[0.1, 0.9], [0.8, 0.2]], targets=[1, 1]))
    >>> m.compute()
    0.5
    """
    name = "accuracy"

    def reset(self):
        self.correct, self.count = 0, 0

    def update(self, step):
        for row, target in zip(step.predictions or [], step.targets or []):
            self.correct += _argmax(row) == target
            self.count += 1

    def compute(self):
        return self.correct / self.count if self.count else float("nan")


class TopKAccuracy(Metric):
    """The share of items whose target is among the ``k`` highest scores.

    >>> m = TopKAccuracy(k=2)
    >>> m.update(StepOutput(0.0, 2, predictions=[[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]], targets=[1, 2]))
    >>> m.name, m.compute()
    ('top2_accuracy', 0.5)
    """
    def __init__(self, k: int = 5):
        self.k = k
        self.name = f"top{k}_accuracy"
        super().__init__()

    def reset(self):
        self.correct, self.count = 0, 0

    def update(self, step):
        for row, target in zip(step.predictions or [], step.targets or []):
            top = sorted(range(len(row)), key=row.__getitem__, reverse=True)[: self.k]
            self.correct += target in top
            self.count += 1

    def compute(self):
        return self.correct / self.count if self.count else float("nan")


class ConfusionMatrix(Metric):
    """Counts ``matrix[target][predicted]``; the basis of precision/recall/F1.

    >>> m = ConfusionMatrix(2)
    >>> m.update(StepOutput(0.0, 3, predictions=[[1, 0], [1, 0], [0, 1]], targets=[0, 1, 1]))
    >>> m.compute()
    [[1, 0], [1, 1]]
    """

    name = "confusion_matrix"

    def __init__(self, num_classes: int):
        self.num_classes = num_classes
        super().__init__()

    def reset(self):
        self.matrix = [[0] * self.num_classes for _ in range(self.num_classes)]

    def update(self, step):
        for row, target in zip(step.predictions or [], step.targets or []):
            self.matrix[target][_argmax(row)] += 1

    def compute(self):
        return [list(r) for r in self.matrix]


class _FromConfusion(Metric):
    """Macro-averaged scores computed from a confusion matrix."""

    def __init__(self, num_classes: int):
        self.confusion = ConfusionMatrix(num_classes)
        super().__init__()

    def reset(self):
        self.confusion.reset()

    def update(self, step):
        self.confusion.update(step)

    def per_class(self) -> list[tuple[float, float]]:
        """``(precision, recall)`` of each class.

        >>> m = Precision(2)
        >>> m.update(StepOutput(0.0, 3, predictions=[[1, 0], [1, 0], [0, 1]], targets=[0, 1, 1]))
        >>> m.per_class()
        [(0.5, 1.0), (1.0, 0.5)]
        """
        m = self.confusion.matrix
        n = len(m)
        out = []
        for c in range(n):
            tp = m[c][c]
            predicted = sum(m[r][c] for r in range(n))
            actual = sum(m[c])
            precision = tp / predicted if predicted else 0.0
            recall = tp / actual if actual else 0.0
            out.append((precision, recall))
        return out

    def _mean(self, values: list[float]) -> float:
        return sum(values) / len(values) if values else float("nan")


class Precision(_FromConfusion):
    """Macro-averaged precision: the mean over classes of ``tp / predicted``.

    >>> m = Precision(2)
    >>> m.update(StepOutput(0.0, 3, predictions=[[1, 0], [1, 0], [0, 1]], targets=[0, 1, 1]))
    >>> m.compute()  # (1/2 + 1/1) / 2
    0.75
    """
    name = "precision"

    def compute(self):
        return self._mean([p for p, _ in self.per_class()])


class Recall(_FromConfusion):
    """Macro-averaged recall: the mean over classes of ``tp / actual``.

    >>> m = Recall(2)
    >>> m.update(StepOutput(0.0, 3, predictions=[[1, 0], [1, 0], [0, 1]], targets=[0, 1, 1]))
    >>> m.compute()  # (1/1 + 1/2) / 2
    0.75
    """
    name = "recall"

    def compute(self):
        return self._mean([r for _, r in self.per_class()])


class F1(_FromConfusion):
    """Macro-averaged F1: the mean over classes of ``2 p r / (p + r)``.

    >>> m = F1(2)
    >>> m.update(StepOutput(0.0, 3, predictions=[[1, 0], [1, 0], [0, 1]], targets=[0, 1, 1]))
    >>> round(m.compute(), 4)  # both classes: 2 * 0.5 * 1 / 1.5
    0.6667
    """
    name = "f1"

    def compute(self):
        scores = [2 * p * r / (p + r) if p + r else 0.0 for p, r in self.per_class()]
        return self._mean(scores)


class LearningRate(Metric):
    """The learning rate the last batch was trained with (a schedule stepped per batch moves the
    optimizer's rate on after it); not a candidate for "best".

    >>> m = LearningRate()
    >>> m.update(StepOutput(0.0, 1, lr=0.01)); m.compute()
    0.01
    """
    name, per_step = "lr", True
    tracked = False

    def reset(self):
        self.value = float("nan")

    def update(self, step):
        if step.lr is not None:
            self.value = step.lr

    def compute(self):
        return self.value


class ItemsPerSecond(Metric):
    """Training speed: items since the epoch started per second of wall time.

    >>> m = ItemsPerSecond()
    >>> m.update(StepOutput(0.0, 32)); m.items, m.compute() > 0
    (32, True)
    """
    name, per_step = "items_per_s", True
    tracked = False

    def reset(self):
        self.start, self.items = time.perf_counter(), 0

    def update(self, step):
        self.items += step.batch_size

    def compute(self):
        elapsed = time.perf_counter() - self.start
        return self.items / elapsed if elapsed > 0 else 0.0


class CpuUsage(Metric):
    """Process CPU use over the epoch, in percent of one core.

    >>> m = CpuUsage(); m.update(StepOutput(0.0, 1))
    >>> m.compute() >= 0.0
    True
    """

    name, higher_is_better, tracked = "cpu_percent", False, False

    def reset(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def update(self, step):
        pass

    def compute(self):
        wall = time.perf_counter() - self.wall
        return 100.0 * (time.process_time() - self.cpu) / wall if wall > 0 else 0.0


class MemoryUsage(Metric):
    """Resident memory of the process in MiB (Linux /proc; peak RSS elsewhere; None where
    neither exists, as in a browser).

    >>> m = MemoryUsage(); m.update(StepOutput(0.0, 1))
    >>> m.compute() > 1.0  # MiB: a Python process is bigger than that
    True
    """

    name, higher_is_better, tracked = "memory_mib", False, False

    def reset(self):
        pass

    def update(self, step):
        pass

    def compute(self):
        try:
            with open(f"/proc/{os.getpid()}/statm") as f:
                pages = int(f.read().split()[1])
            return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError, AttributeError):
            pass
        try:
            import resource
        except ImportError:  # Pyodide: no process memory to read (the history leaves it out)
            return None
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def classification_metrics(num_classes: int) -> list[Metric]:
    """The default set for a classifier.

    >>> [m.name for m in classification_metrics(10)][:4]
    ['loss', 'accuracy', 'top5_accuracy', 'precision']
    """
    return [
        Loss(), Accuracy(), TopKAccuracy(min(5, num_classes)), Precision(num_classes),
        Recall(num_classes), F1(num_classes), ConfusionMatrix(num_classes), LearningRate(),
        ItemsPerSecond(), CpuUsage(), MemoryUsage(),
    ]
