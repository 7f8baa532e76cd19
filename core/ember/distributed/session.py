"""Where the training loop runs: in this process, or as one worker of a Ray Train run.

A session gives the loop its rows (``batches``), its collective (``all_reduce``, None alone),
the state to resume from (``restored``) and takes its reports (``report``: metrics, and a
function making the Ember record that becomes the checkpoint, called where one is written).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

CHECKPOINT_FILE = "ember.ckpt"


class LocalSession:
    """One worker in this process: the whole data, checkpoints in ``folder/checkpoints``,
    reports straight to ``sink`` (the driver's log)."""

    rank, world_size, all_reduce = 0, 1, None

    def __init__(self, data, folder: Path, sink, resume: bool):
        self.data, self.sink, self.resume = data, sink, resume
        self.last = Path(folder) / "checkpoints" / "last.ckpt"

    def batches(self, batch_size: int, skip: int):
        from .data import iter_batches

        return iter_batches(self.data, batch_size, skip)

    def restored(self, backend) -> dict | None:
        from ..train.checkpoint import load_checkpoint

        return load_checkpoint(self.last, backend=backend) \
            if self.resume and self.last.exists() else None

    def report(self, metrics: dict, state) -> None:
        from ..train.checkpoint import save_checkpoint

        self.last.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(self.last, state())
        self.sink([metrics])


class RaySession:
    """This process as a Ray Train worker: its shard of the ``train`` dataset, the gloo process
    group Ray Train set up, checkpoints reported through ``ray.train.report`` (rank 0 writes
    the record; every worker reports, as Ray Train requires)."""

    def __init__(self):
        import ray.train

        from .collective import torch_all_reduce

        self.train = ray.train
        context = ray.train.get_context()
        self.rank, self.world_size = context.get_world_rank(), context.get_world_size()
        self.all_reduce = torch_all_reduce
        self.shard = ray.train.get_dataset_shard("train")

    def batches(self, batch_size: int, skip: int):
        from .data import iter_batches

        return iter_batches(self.shard, batch_size, skip)

    def restored(self, backend) -> dict | None:
        from ..train.checkpoint import load_checkpoint

        checkpoint = self.train.get_checkpoint()
        if checkpoint is None:
            return None
        with checkpoint.as_directory() as folder:
            return load_checkpoint(Path(folder) / CHECKPOINT_FILE, backend=backend)

    def report(self, metrics: dict, state) -> None:
        from ..train.checkpoint import save_checkpoint

        if self.rank != 0:
            self.train.report(metrics)
            return
        with tempfile.TemporaryDirectory(prefix="ember-ckpt-") as folder:
            save_checkpoint(Path(folder) / CHECKPOINT_FILE, state())
            self.train.report(metrics, checkpoint=self.train.Checkpoint.from_directory(folder))
