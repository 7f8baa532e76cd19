"""EmberTrainer: data-parallel training of an Ember model on Ray Train, or in this process.

>>> import tempfile, numpy as np
>>> from ember import nn, optim
>>> from ember.distributed import EmberTrainer
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.normal(size=(64, 4)).astype("float32"), "y": rng.integers(0, 3, 64)}
>>> trainer = EmberTrainer(lambda: nn.Linear(4, 3), lambda p: optim.SGD(p, lr=0.1),
...                        batch_size=16, folder=tempfile.mkdtemp())
>>> result = trainer.fit(data)
>>> result.history[-1]["samples"], result.record.name
(64, 'final.ckpt')
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .extras import INSTALL, ray_available, require
from .data import num_rows, to_ray_dataset
from .log import DriverLog
from .loop import TrainSpec, share, train_loop
from .session import CHECKPOINT_FILE, LocalSession


@dataclass
class TrainResult:
    """>>> import os, tempfile
    >>> from ember import nn
    >>> from ember.train import save_checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), "final.ckpt")
    >>> trained = nn.Linear(2, 1)
    >>> _ = save_checkpoint(path, {"model": trained.state_dict()})
    >>> result = TrainResult(record=path, history=[], workers=1, wall_s=0.0)
    >>> model = result.load_model(lambda: nn.Linear(2, 1))
    >>> model.weight.tolist() == trained.weight.tolist(), model.training
    (True, False)
    """
    record: Path  # the final Ember record (model, optimizer, position): load_checkpoint(record)
    history: list[dict]  # one combined record per epoch (loss, accuracy, timings)
    workers: int
    wall_s: float
    restarts: int = 0  # failed worker groups Ray Train restarted from a checkpoint
    reports: list[tuple[int, int]] = field(default_factory=list)  # (epoch, step), in order
    resumed: list[tuple[int, int]] = field(default_factory=list)  # each restart's (epoch, step)

    def load_model(self, model_fn: Callable, backend: str = "numpy"):
        """``model_fn()`` with the trained weights, on ``backend``, ready for inference."""
        return load_model(self.record, model_fn, backend)


def load_model(record, model_fn: Callable, backend: str = "numpy"):
    """``model_fn()`` with the weights of an EmberTrainer record (a checkpoint), for inference;
    ``functools.partial(load_model, record, model_fn)`` is a ``model_fn`` for
    :class:`~ember.distributed.Predictor` actors.

    >>> import os, tempfile
    >>> from ember import nn
    >>> from ember.train import save_checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), "final.ckpt")
    >>> trained = nn.Linear(2, 1)
    >>> _ = save_checkpoint(path, {"model": trained.state_dict()})
    >>> model = load_model(path, lambda: nn.Linear(2, 1), backend="python")
    >>> model.bias.tolist() == trained.bias.tolist()
    True
    """
    from ..train.checkpoint import load_checkpoint

    model = model_fn().to(backend)
    model.load_state_dict(load_checkpoint(record, backend=backend)["model"])
    return model.eval()


class EmberTrainer:
    """Train ``model_fn()`` with ``optimizer_fn(params)`` on ``num_workers`` data-parallel
    workers; the arguments not listed here are :class:`~ember.distributed.loop.TrainSpec`'s.

    - ``num_workers=1`` runs in this process (no Ray needed); more run on Ray Train's
      ``DataParallelTrainer`` over the current Ray cluster (``ray.init()`` first to pick one;
      a local one is started otherwise). ``use_ray=True`` puts even one worker on Ray.
    - Each worker trains on its shard of the Ray Dataset (in-memory columns are turned into
      one); gradients are averaged by torch.distributed's gloo all-reduce.
    - ``checkpoint_every`` steps (and at every epoch end) rank 0 reports an Ember record;
      ``max_failures`` restarts of a failed worker group resume from the last one.
    - Epoch metrics reach ``folder``'s run log (``metrics.jsonl``, ``curves.png``) and the
      ``renderer`` on the driver as they happen.

    >>> import tempfile, numpy as np
    >>> from ember import nn, optim
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.normal(size=(32, 4)).astype("float32"), "y": rng.integers(0, 3, 32)}
    >>> trainer = EmberTrainer(lambda: nn.Linear(4, 3), lambda p: optim.SGD(p, lr=0.1),
    ...                        batch_size=16, epochs=2, folder=tempfile.mkdtemp())
    >>> trainer.num_workers, trainer.use_ray  # one worker: in this process
    (1, False)
    >>> result = trainer.fit(data)
    >>> [(h["epoch"], h["samples"]) for h in result.history], result.record.name
    ([(1, 32), (2, 32)], 'final.ckpt')
    """

    def __init__(self, model_fn: Callable, optimizer_fn: Callable, loss_fn: Callable | None = None,
                 *, num_workers: int = 1, folder: str | Path = "runs/distributed",
                 max_failures: int = 0, renderer=None, use_ray: bool | None = None, **spec):
        if num_workers < 1:
            raise ValueError(f"EmberTrainer: num_workers must be >= 1, got {num_workers}")
        if loss_fn is None:
            from ..nn.loss import cross_entropy as loss_fn
        self.spec = TrainSpec(model_fn, optimizer_fn, loss_fn, **spec)
        share(self.spec.batch_size, num_workers)  # a bad split fails here, not on a worker
        self.num_workers, self.max_failures = num_workers, max_failures
        self.folder, self.renderer = Path(folder), renderer
        self.use_ray = num_workers > 1 if use_ray is None else use_ray
        if self.use_ray and not ray_available():
            raise ImportError(
                f"EmberTrainer(num_workers={num_workers}) runs on Ray Train, which is not "
                f"installed: {INSTALL} (num_workers=1 trains in this process without it)"
            )

    def fit(self, data, resume: bool = False) -> TrainResult:
        """Train on ``data`` ({column: numpy array} or a Ray Dataset); ``resume`` (in-process
        runs) continues from ``folder/checkpoints/last.ckpt``."""
        started = time.perf_counter()
        self.folder.mkdir(parents=True, exist_ok=True)
        log = DriverLog(self.folder, self.renderer)
        rows = num_rows(data) if isinstance(data, Mapping) else None
        log.start({"epochs": self.spec.epochs, "start_epoch": 0, "has_valid": False,
                   "steps": -(-rows // self.spec.batch_size) if rows is not None else None,
                   "backend": f"{self.spec.backend} × {self.num_workers} worker(s)",
                   "model": _name(self.spec.model_fn),
                   "folder": str(self.folder)})
        if self.use_ray:
            record, restarts = self._fit_ray(data, log)
        else:
            session = LocalSession(data, self.folder, log, resume)
            train_loop(self.spec, session)
            record, restarts = self.folder / "final.ckpt", 0
            shutil.copyfile(session.last, record)
        from ..train.runlog import plot_curves

        plot_curves(log.runlog)
        wall = time.perf_counter() - started
        log.finish({"epochs_run": len(log.history), "wall_time_s": round(wall, 2),
                    "final": log.history[-1] if log.history else {}, "restarts": restarts,
                    "run_folder": str(self.folder)})
        return TrainResult(record, log.history, self.num_workers, wall, restarts,
                           log.positions, log.resumed)

    def _fit_ray(self, data, log: DriverLog) -> tuple[Path, int]:
        ray = require("ray", "EmberTrainer on Ray")
        train = require("ray.train", "EmberTrainer on Ray")
        from ray.data import ExecutionOptions
        from ray.train.torch import TorchConfig
        from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

        from .forward import ReportForwarder

        if not ray.is_initialized():
            ray.init()
        local_batch = share(self.spec.batch_size, self.num_workers)
        dataset = data
        if isinstance(data, Mapping):
            dataset = to_ray_dataset(data, block_rows=max(1, local_batch))
        forwarder = ReportForwarder(log)
        trainer = DataParallelTrainer(
            _ray_worker,
            train_loop_config={"spec": self.spec},
            backend_config=TorchConfig(backend="gloo"),
            scaling_config=train.ScalingConfig(num_workers=self.num_workers, use_gpu=False,
                                               resources_per_worker={"CPU": 1}),
            run_config=train.RunConfig(
                name=f"ember-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**6}",
                storage_path=str((self.folder / "ray").resolve()),
                failure_config=train.FailureConfig(max_failures=self.max_failures),
                checkpoint_config=train.CheckpointConfig(num_to_keep=2),
                callbacks=[forwarder.callback()],
            ),
            datasets={"train": dataset},
            # in order: the split hands equal blocks to the workers in turn, deterministically
            dataset_config=train.DataConfig(execution_options=ExecutionOptions(preserve_order=True)),
        )
        with forwarder:
            result = trainer.fit()
        record = self.folder / "final.ckpt"
        with result.checkpoint.as_directory() as folder:
            shutil.copyfile(Path(folder) / CHECKPOINT_FILE, record)
        return record, forwarder.failures


def _name(fn) -> str:
    """A model function's name for the dashboard (a ``functools.partial``'s function's)."""
    return getattr(getattr(fn, "func", fn), "__name__", "model")


def _ray_worker(config: dict) -> None:
    """The function Ray Train runs on every worker."""
    from .session import RaySession

    train_loop(config["spec"], RaySession())
