"""The driver's side of the metrics: every worker's report, combined, into the Learner's run
log (``metrics.jsonl``/``.csv``, ``curves.png``) and its renderer (dashboard or plain lines).

>>> import tempfile
>>> log = DriverLog(tempfile.mkdtemp(), renderer=None)
>>> log([{"epoch": 1, "step": 2, "end": True, "samples": 4, "loss_sum": 2.0, "correct": 3,
...       "steps": 2, "step_s": 0.5, "allreduce_s": 0.1, "grad_bytes": 8}])
>>> {k: log.history[0][k] for k in ("epoch", "loss", "accuracy", "allreduce_share")}
{'epoch': 1, 'loss': 0.5, 'accuracy': 0.75, 'allreduce_share': 0.2}
"""

from __future__ import annotations

from pathlib import Path


class DriverLog:
    """Called with one report per worker (a list); epoch ends go to the run log."""

    def __init__(self, folder, renderer=None):
        from ..train.renderers import Renderer
        from ..train.runlog import RunLog

        self.runlog = RunLog(Path(folder))
        self.renderer = renderer or Renderer()  # the base renderer shows nothing
        self.history: list[dict] = []
        self.steps = None  # per epoch, where known (on_fit_start)
        self.positions: list[tuple[int, int]] = []  # (epoch, step) of each report, in order
        self.resumed: list[tuple[int, int]] = []  # where each restarted attempt began

    def start(self, info: dict) -> None:
        """The renderer's ``on_fit_start`` (the Learner's info: epochs, steps, backend…)."""
        self.steps = info.get("steps")
        self.renderer.on_fit_start(info)

    def finish(self, summary: dict) -> None:
        self.renderer.on_fit_end(summary)

    def __call__(self, reports: list[dict]) -> None:
        combined = combine(reports)
        self.positions.append((combined["epoch"], combined["step"]))
        start = (combined["start_epoch"], combined["start_step"])
        if start != (1, 0) and start not in self.resumed:
            self.resumed.append(start)
            self.renderer.on_message(f"resumed from the checkpoint of epoch {start[0]}, step "
                                     f"{start[1]}")
        if not combined["end"]:
            self.renderer.on_step(combined["epoch"], "train", combined["step"], self.steps,
                                  {"loss": combined["loss"]})
            return
        epoch = combined["epoch"]
        self.runlog.truncate_after(epoch - 1)  # a restarted run reports its epoch again
        values = {k: v for k, v in combined.items()
                  if k not in ("epoch", "end", "step", "start_epoch", "start_step")}
        self.runlog.log(epoch, "train", values)
        self.history = [h for h in self.history if h["epoch"] < epoch] + [combined]
        self.renderer.on_epoch_end(epoch, "train", values, {})


def combine(reports: list[dict]) -> dict:
    """The workers' sums as one epoch's figures: mean loss and accuracy over every sample,
    the slowest worker's step and all-reduce time (the others wait for it)."""
    samples = sum(r["samples"] for r in reports)
    step_s = max(r["step_s"] for r in reports)
    reduce_s = max(r["allreduce_s"] for r in reports)
    first = reports[0]
    return {
        "epoch": first["epoch"], "step": first["step"], "end": first["end"],
        "start_epoch": first.get("start_epoch", 1), "start_step": first.get("start_step", 0),
        "workers": len(reports), "samples": samples,
        "loss": sum(r["loss_sum"] for r in reports) / samples if samples else float("nan"),
        "accuracy": sum(r["correct"] for r in reports) / samples if samples else float("nan"),
        "step_s": step_s / max(1, first["steps"]),
        "allreduce_share": reduce_s / step_s if step_s else 0.0,
        "samples_per_s": samples / step_s if step_s else float("nan"),
        "grad_bytes": first["grad_bytes"],
    }
