"""The run folder's metric log (JSONL and CSV) and its training-curve plots."""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path


class RunLog:
    """Appends one record per (epoch, split) to ``metrics.jsonl`` and ``metrics.csv``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     log = RunLog(folder)
    ...     log.log(1, "train", {"loss": 0.5}); log.log(2, "train", {"loss": 0.25})
    ...     log.truncate_after(1)
    ...     print(log.records(), log.csv.read_text().splitlines())
    [{'epoch': 1, 'split': 'train', 'loss': 0.5}] ['epoch,split,metric,value', '1,train,loss,0.5']
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.jsonl = self.folder / "metrics.jsonl"
        self.csv = self.folder / "metrics.csv"

    def log(self, epoch: int, split: str, metrics: dict) -> None:
        """Append the numeric ``metrics`` of one epoch and split to both files."""
        record = {"epoch": epoch, "split": split}
        record.update({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
        with open(self.jsonl, "a") as f:
            f.write(json.dumps(record) + "\n")
        new = not self.csv.exists()
        with open(self.csv, "a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(["epoch", "split", "metric", "value"])
            for k, v in record.items():
                if k not in ("epoch", "split"):
                    writer.writerow([epoch, split, k, v])

    def records(self) -> list[dict]:
        """Every record of ``metrics.jsonl``, in order (``[]`` before the first)."""
        if not self.jsonl.exists():
            return []
        with open(self.jsonl) as f:
            return [json.loads(line) for line in f if line.strip()]

    def truncate_after(self, epoch: int) -> None:
        """Drop records of epochs after ``epoch`` (a resumed run rewrites them)."""
        keep = [r for r in self.records() if r["epoch"] <= epoch]
        for path in (self.jsonl, self.csv):
            if path.exists():
                path.unlink()
        for r in keep:
            self.log(r["epoch"], r["split"], {k: v for k, v in r.items() if k not in ("epoch", "split")})


def plot_curves(log: RunLog, path: str | os.PathLike | None = None) -> Path | None:
    """One panel per metric, train vs valid per epoch, saved as PNG. None without matplotlib.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print(plot_curves(RunLog(folder)))  # nothing logged yet: no plot
    None
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    records = log.records()
    names = sorted({k for r in records for k in r if k not in ("epoch", "split")})
    names = [n for n in names if n not in ("cpu_percent", "memory_mib")] or names
    if not names:
        return None
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        for split, style in (("train", "-o"), ("valid", "-s")):
            pts = [(r["epoch"], r[name]) for r in records if r["split"] == split and name in r]
            if pts:
                ax.plot(*zip(*pts), style, label=split, markersize=3)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    out = Path(path) if path else log.folder / "curves.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
