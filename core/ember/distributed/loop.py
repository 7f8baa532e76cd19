"""The training loop every worker runs, the same in-process and on a Ray Train worker.

Each step: the worker's batch (its share of the global batch) → forward → Autodiff gradients →
averaged over the workers by the session's all-reduce → optimizer step. At checkpoint steps and
epoch ends the worker reports its metrics and (rank 0) an Ember record of everything a restart
needs: model, optimizer, position (epoch, step) and the epoch's partial metric sums. The loop
only talks to a *session* (:mod:`ember.distributed.session`): where its rows come from, how
gradients are summed, where reports go.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial


@dataclass
class TrainSpec:
    """What to train and how; picklable (functions by reference), so Ray ships it to workers.

    ``model_fn()`` builds the model (the same on every worker: the seed is set first);
    ``optimizer_fn(params)`` its optimizer; ``loss_fn(outputs, targets)``; rows come in
    columns ``inputs``/``targets``; ``transform(x)`` (optional) runs on the backend tensor of
    inputs. ``batch_size`` is the GLOBAL batch, split evenly over the workers.

    >>> from ember import nn, optim
    >>> spec = TrainSpec(lambda: nn.Linear(4, 3), lambda p: optim.SGD(p, lr=0.1),
    ...                  nn.loss.cross_entropy, batch_size=16)
    >>> spec.inputs, spec.targets, spec.backend, spec.epochs
    ('x', 'y', 'numpy', 1)
    """

    model_fn: Callable
    optimizer_fn: Callable
    loss_fn: Callable
    inputs: str = "x"
    targets: str = "y"
    transform: Callable | None = None
    backend: str = "numpy"
    epochs: int = 1
    batch_size: int = 64
    checkpoint_every: int | None = None
    seed: int = 0


def train_loop(spec: TrainSpec, session) -> None:
    """Run ``spec`` to the end on ``session`` (resuming from its last checkpoint, if any).

    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from ember import nn, optim
    >>> from ember.distributed.session import LocalSession
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.normal(size=(64, 4)).astype("float32"), "y": rng.integers(0, 3, 64)}
    >>> spec = TrainSpec(lambda: nn.Linear(4, 3), lambda p: optim.SGD(p, lr=0.1),
    ...                  nn.loss.cross_entropy, batch_size=16)
    >>> reports = []  # the driver's sink: one list of worker reports per report
    >>> train_loop(spec, LocalSession(data, Path(tempfile.mkdtemp()), reports.append, False))
    >>> [(r["epoch"], r["steps"], r["samples"]) for r in reports[-1]]
    [(1, 4, 64)]
    """
    from ..autodiff import Autodiff
    from ..backends import get_backend
    from ..random import seed as set_seed
    from .collective import GradientAverager

    local_batch = share(spec.batch_size, session.world_size)
    set_seed(spec.seed)
    inner = get_backend(spec.backend)
    backend = inner if inner.caps.gradients else Autodiff(inner)
    model = spec.model_fn().to(backend)
    optimizer = spec.optimizer_fn(model.parameters())
    epoch, step, sums = 1, 0, _Sums()
    state = session.restored(inner)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        epoch, step, sums = state["epoch"], state["step"], _Sums(**state["sums"])
    # where this attempt began, in every report: the driver tells a restart from a fresh run
    start = {"start_epoch": epoch, "start_step": step}
    averager = GradientAverager(list(model.named_parameters()), session.world_size,
                                session.all_reduce)

    def record(at_epoch: int, at_step: int) -> dict:
        """The checkpoint's content; sessions call it only where a record is written."""
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": at_epoch, "step": at_step, "sums": vars(sums).copy()}

    model.train()
    while epoch <= spec.epochs:
        for batch, last in _with_last(session.batches(local_batch, skip=step)):
            started = time.perf_counter()
            reduce_before = averager.seconds
            x, y = _tensors(batch, spec, backend)
            out = model(x)
            loss = spec.loss_fn(out, y)
            optimizer.step(averager.average(loss.backward()))
            sums.add(loss, out, y)
            sums.allreduce_s += averager.seconds - reduce_before
            sums.step_s += time.perf_counter() - started
            step += 1
            if spec.checkpoint_every and step % spec.checkpoint_every == 0 and not last:
                session.report({**sums.metrics(epoch, step, averager.nbytes, end=False), **start},
                               partial(record, epoch, step))
        metrics = {**sums.metrics(epoch, step, averager.nbytes, end=True), **start}
        epoch, step, sums = epoch + 1, 0, _Sums()
        session.report(metrics, partial(record, epoch, step))


def share(batch_size: int, workers: int) -> int:
    """Each worker's part of the global batch (a ValueError unless it divides evenly: with
    equal parts the average of the workers' mean gradients is the global batch's)."""
    if batch_size < workers or batch_size % workers:
        raise ValueError(
            f"EmberTrainer: batch_size {batch_size} must be a multiple of num_workers "
            f"{workers} (each worker takes an equal share of the global batch)"
        )
    return batch_size // workers


def _with_last(batches):
    """``(batch, is_last)`` pairs: a checkpoint due at the epoch's last step is left to the
    epoch-end report, which follows at once."""
    it = iter(batches)
    prev = next(it, None)
    while prev is not None:
        nxt = next(it, None)
        yield prev, nxt is None
        prev = nxt


class _Sums:
    """An epoch's running sums on one worker (saved in checkpoints: a resumed epoch reports
    the same totals as an uninterrupted one)."""

    def __init__(self, loss: float = 0.0, correct: int = 0, samples: int = 0, steps: int = 0,
                 step_s: float = 0.0, allreduce_s: float = 0.0):
        self.loss, self.correct, self.samples, self.steps = loss, correct, samples, steps
        self.step_s, self.allreduce_s = step_s, allreduce_s

    def add(self, loss, out, y) -> None:
        n = int(y.shape[0])
        self.loss += loss.item() * n
        if out.ndim == 2 and y.ndim == 1:
            self.correct += int((out.argmax(dim=1) == y).sum().item())
        self.samples += n
        self.steps += 1

    def metrics(self, epoch: int, step: int, grad_bytes: int, end: bool) -> dict:
        return {"epoch": epoch, "step": step, "end": end, "samples": self.samples,
                "loss_sum": self.loss, "correct": self.correct, "steps": self.steps,
                "step_s": self.step_s, "allreduce_s": self.allreduce_s,
                "grad_bytes": grad_bytes}


def _tensors(batch: dict, spec: TrainSpec, backend):
    from ..ops.conversion import tensor

    for column in (spec.inputs, spec.targets):
        if column not in batch:
            raise KeyError(f"EmberTrainer: no column {column!r} in the data; columns: "
                           f"{sorted(batch)}")
    x = tensor(batch[spec.inputs], backend=backend)
    y = tensor(batch[spec.targets], backend=backend)
    return (spec.transform(x) if spec.transform else x), y
