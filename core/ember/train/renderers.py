"""How training progress is shown: a live rich dashboard, or a line per epoch.

Write your own renderer by subclassing :class:`Renderer` and passing ``renderer=`` to
``Learner.fit``; every hook is optional:

>>> class Quiet(Renderer):
...     def on_epoch_end(self, epoch, split, metrics, best):
...         print(epoch, split, round(metrics["loss"], 3))
"""

from __future__ import annotations

import sys

_BLOCKS = " ▁▂▃▄▅▆▇█"


class Renderer:
    """Base of the progress renderers: ``Learner.fit`` calls its hooks; each is a no-op here but
    ``on_message``, which prints.

    >>> class Quiet(Renderer):
    ...     def on_epoch_end(self, epoch, split, metrics, best):
    ...         print(epoch, split, round(metrics["loss"], 3))
    >>> Quiet().on_epoch_end(1, "valid", {"loss": 0.12345}, {})
    1 valid 0.123
    """
    def on_fit_start(self, info: dict) -> None:
        """``info``: epochs, steps per epoch, backend, model summary line, run folder.

        >>> info = {"model": "Net", "backend": "numpy", "epochs": 2, "steps": 10}
        >>> PlainRenderer().on_fit_start(info)
        training Net on numpy for 2 epochs (10 steps each)
        """

    def on_step(self, epoch: int, split: str, step: int, steps: int, live: dict) -> None:
        """After each batch; ``live`` holds per-step metrics (loss, lr, items/s).

        >>> Renderer().on_step(1, "train", 5, 10, {"loss": 0.5}) is None  # a no-op by default
        True
        """

    def on_epoch_end(self, epoch: int, split: str, metrics: dict, best: dict) -> None:
        """After each epoch of each split; ``best`` maps metric → (value, epoch).

        >>> PlainRenderer().on_epoch_end(1, "train", {"loss": 0.25, "accuracy": 0.9}, {})
        epoch 1 train: loss=0.2500, accuracy=0.9000
        """

    def on_message(self, text: str) -> None:
        """A line of text from the learner (a checkpoint saved, early stopping...); printed.

        >>> Renderer().on_message("saved checkpoint 3")
        saved checkpoint 3
        """
        print(text)

    def on_fit_end(self, summary: dict) -> None:
        """After the last epoch; ``summary`` holds the best metrics and the run folder.

        >>> Renderer().on_fit_end({"epochs": 2}) is None
        True
        """
        pass


def _fmt(value) -> str:
    """A metric for a line of text: 4 decimals, 3 significant digits below 0.001 (an
    annealed learning rate is not 0), thousands separators from 100 up.

    >>> [_fmt(v) for v in (0.25, 3.4e-07, 0.0, 1234.5, float("nan"), 7)]
    ['0.2500', '3.40e-07', '0.0000', '1,234', 'nan', '7']
    """
    if isinstance(value, float):
        if value != value:
            return "nan"
        if 0 < abs(value) < 1e-3:
            return f"{value:.2e}"
        return f"{value:.4f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def sparkline(values: list[float], width: int = 24) -> str:
    """A one-line chart of ``values`` with block characters."""
    values = [v for v in values if v == v][-width:]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(_BLOCKS[1 + int((v - lo) / span * (len(_BLOCKS) - 2))] for v in values)


class PlainRenderer(Renderer):
    """A line per epoch and split: for logs, CI and pipes.

    >>> import io
    >>> out = io.StringIO()
    >>> r = PlainRenderer(stream=out)
    >>> r.on_fit_start({"model": "Net", "backend": "numpy", "epochs": 1, "steps": 3})
    >>> r.on_epoch_end(1, "valid", {"loss": 0.5}, {}); r.on_message("done")
    >>> print(out.getvalue().strip())
    training Net on numpy for 1 epochs (3 steps each)
    epoch 1 valid: loss=0.5000
    done
    """

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout

    def on_fit_start(self, info):
        print(f"training {info.get('model', 'model')} on {info.get('backend')} for "
              f"{info.get('epochs')} epochs ({info.get('steps')} steps each)", file=self.stream)

    def on_epoch_end(self, epoch, split, metrics, best):
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in metrics.items()
                          if isinstance(v, (int, float)))
        print(f"epoch {epoch} {split}: {shown}", file=self.stream, flush=True)

    def on_message(self, text):
        print(text, file=self.stream, flush=True)


class DashboardRenderer(Renderer):
    """A live terminal dashboard (rich): progress bars with ETA, current and best metrics, and
    a chart per metric of train vs valid across epochs.

    >>> import io
    >>> from rich.console import Console
    >>> console = Console(file=io.StringIO(), width=100)
    >>> r = DashboardRenderer(console=console)
    >>> r.on_fit_start({"model": "Net", "backend": "numpy", "epochs": 1, "steps": 2})
    >>> r.on_step(1, "train", 2, 2, {"loss": 0.5}); r.on_message("checkpoint saved")
    >>> r.on_epoch_end(1, "train", {"loss": 0.5}, {"loss": (0.5, 1)}); r.on_fit_end({})
    >>> text = console.file.getvalue()
    >>> "loss" in text and "checkpoint saved" in text and "Net" in text
    True
    """

    TRACKED = ("loss", "accuracy", "f1", "top5_accuracy", "lr", "items_per_s")

    def __init__(self, console=None, refresh_per_second: float = 4):
        try:
            from rich.console import Console
            from rich.live import Live
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
        except ImportError as e:
            raise ImportError("the dashboard needs rich: pip install 'ember[train]'") from e
        self.console = console or Console()
        self.progress = Progress(
            TextColumn("{task.description:>12}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TextColumn("eta"),
            TimeRemainingColumn(), console=self.console,
        )
        self.live_cls = Live
        self.refresh = refresh_per_second
        self.history: dict[tuple[str, str], list[float]] = {}
        self.current: dict[str, dict] = {}
        self.best: dict = {}
        self.messages: list[str] = []
        self.live = None
        self.info: dict = {}

    def _table(self):
        from rich.table import Table

        table = Table(expand=False, title=self.info.get("title"), title_justify="left")
        for col in ("metric", "train", "valid", "best (epoch)", "train ▸ valid per epoch"):
            table.add_column(col, justify="right" if col != "metric" else "left")
        for name in self.TRACKED:
            train = self.current.get("train", {}).get(name)
            valid = self.current.get("valid", {}).get(name)
            if train is None and valid is None:
                continue
            best = self.best.get(name)
            chart = (f"[cyan]{sparkline(self.history.get(('train', name), []), 14)}[/] "
                     f"[magenta]{sparkline(self.history.get(('valid', name), []), 14)}[/]")
            table.add_row(name, _fmt(train) if train is not None else "",
                          _fmt(valid) if valid is not None else "",
                          f"{_fmt(best[0])} ({best[1]})" if best else "", chart)
        return table

    def _render(self):
        from rich.console import Group
        from rich.text import Text

        parts = [self.progress, self._table()]
        parts += [Text(m, style="dim") for m in self.messages[-3:]]
        return Group(*parts)

    def on_fit_start(self, info):
        self.info = info
        self.info["title"] = (f"ember · {info.get('model', 'model')} · {info.get('backend')} · "
                              f"run {info.get('folder', '')}")
        self.epochs_task = self.progress.add_task("epochs", total=info["epochs"],
                                                  completed=info.get("start_epoch", 0), info="")
        self.step_task = self.progress.add_task("train", total=info["steps"], info="")
        self.live = self.live_cls(self._render(), console=self.console,
                                  refresh_per_second=self.refresh, transient=False)
        self.live.start()

    def on_step(self, epoch, split, step, steps, live):
        self.progress.update(self.step_task, description=f"{split} e{epoch}", total=steps,
                             completed=step,
                             info=" ".join(f"{k}={_fmt(v)}" for k, v in live.items()))
        for k, v in live.items():
            self.current.setdefault(split, {})[k] = v
        if self.live:
            self.live.update(self._render())

    def on_epoch_end(self, epoch, split, metrics, best):
        self.current[split] = dict(metrics)
        for k, v in metrics.items():
            if isinstance(v, (int, float)):
                self.history.setdefault((split, k), []).append(float(v))
        self.best = best
        if split == "valid" or not self.info.get("has_valid", True):
            self.progress.update(self.epochs_task, completed=epoch)
        if self.live:
            self.live.update(self._render())

    def on_message(self, text):
        self.messages.append(text)
        if self.live:
            self.live.update(self._render())
        else:
            self.console.print(text)

    def on_fit_end(self, summary):
        if self.live:
            self.live.update(self._render())
            self.live.stop()
            self.live = None


def default_renderer() -> Renderer:
    """The dashboard on a terminal (when rich is installed), else a line per epoch.

    >>> type(default_renderer()).__name__  # stdout is not a terminal under doctest
    'PlainRenderer'
    """
    if sys.stdout.isatty():
        try:
            return DashboardRenderer()
        except ImportError:
            pass
    return PlainRenderer()
