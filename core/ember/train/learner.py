"""The Learner: a training loop with metrics, checkpoints, resume, early stopping and a
graceful Ctrl-C.

>>> # learner = Learner(model, optimizer, loss_fn=nn.loss.cross_entropy, folder="runs/mnist")
>>> # result = learner.fit(train_loader, valid_loader, epochs=5)

Everything a resumed run needs is in the last checkpoint (model, optimizer, scheduler, RNG
and data-order state, partial metric sums, the gradients accumulated so far when stopped
between two optimizer steps of ``accumulate``), so ``resume=True`` continues exactly where the
interrupted run stopped and produces the same result as an uninterrupted run, bit for bit.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import dtype as dt
from ..errors import RecordError
from ..random import default_generator
from ..io.untrusted import reading
from ..jit import benefits
from ..jit import jit as ember_jit
from .checkpoint import load_checkpoint, save_checkpoint
from .interrupt import GracefulInterrupt
from .metrics import Metric, StepOutput, classification_metrics
from .renderers import Renderer, default_renderer
from .runlog import RunLog, plot_curves


@dataclass
class FitResult:
    """What :meth:`Learner.fit` returns: epochs run, the best value (and epoch) of each tracked
    metric, the per-(epoch, split) history, how the run ended (``interrupted``: Ctrl-C or
    :meth:`Learner.request_stop`; ``stopped_early``: patience; ``max_steps_reached``: the
    ``max_steps`` budget ran out before ``epochs``), its folder and wall time.

    >>> r = FitResult(epochs_run=2, best={"loss": (0.25, 2)}, history=[])
    >>> r.best["loss"], r.interrupted, r.stopped_early, r.max_steps_reached
    ((0.25, 2), False, False, False)
    """

    epochs_run: int
    best: dict  # metric → (value, epoch)
    history: list[dict]  # one record per (epoch, split)
    interrupted: bool = False
    stopped_early: bool = False
    folder: Path | None = None
    wall_time: float = 0.0
    summary: dict = field(default_factory=dict)
    max_steps_reached: bool = False


#: the checkpoints a stop inside an epoch writes, by cause; ``resume`` continues from either
MID_EPOCH = {"interrupted": "interrupted", "max_steps": "max-steps"}


class Learner:
    """Trains ``model`` with ``optimizer`` on batches ``(inputs, targets)``.

    - ``loss_fn(outputs, targets)`` returns a one-element tensor;
    - ``prepare(batch)`` (optional) turns a loader batch into ``(inputs, targets)`` on the
      model's backend (default: ``.to(backend)`` both);
    - ``metrics``: a list of :class:`Metric` (default: the classification set);
    - ``scheduler`` stepped every ``"step"`` or ``"epoch"``; ``accumulate`` batches per
      optimizer step; ``monitor``/``patience`` for early stopping and the best checkpoint;
    - checkpoints go to ``folder/checkpoints`` (last ``keep_last`` kept, plus ``best``);
    - ``jit``: run the training step (forward, loss, backward, optimizer update) and the
      validation forward through :func:`ember.jit` — default: where the backend benefits
      (:func:`ember.jit.benefits`: wgpu); ``False`` always eager. Steps that accumulate
      gradients (``accumulate > 1``, a resumed accumulation) run eagerly.

    >>> import tempfile, ember
    >>> from ember import nn
    >>> from ember.dataset import DataLoader, InMemoryDataset
    >>> from ember.optim import SGD
    >>> from ember.train import Learner, Renderer
    >>> with ember.use_backend("autodiff-python"):
    ...     model = nn.Linear(2, 2)
    >>> data = DataLoader(InMemoryDataset([([0.0, 1.0], 1)] * 4), batch_size=2)
    >>> learner = Learner(model, SGD(model.parameters(), lr=0.1), nn.loss.cross_entropy,
    ...                   folder=tempfile.mkdtemp(), num_classes=2, renderer=Renderer())
    >>> result = learner.fit(data, epochs=2)
    >>> result.epochs_run, result.history[1]["loss"] < result.history[0]["loss"]
    (2, True)
    >>> sorted(p.name for p in learner.checkpoints.iterdir()), learner.last_checkpoint().name
    (['best.ckpt', 'epoch-1.ckpt', 'epoch-2.ckpt'], 'epoch-2.ckpt')
    >>> state = learner.restore(learner.last_checkpoint(), data)
    >>> state["epoch"], learner.save("manual", state).name
    (2, 'manual.ckpt')
    >>> learner.request_stop()  # outside a fit: nothing to stop
    """

    def __init__(self, model, optimizer, loss_fn: Callable, folder: str | Path,
                 metrics: list[Metric] | None = None, num_classes: int | None = None,
                 scheduler=None, scheduler_step: str = "epoch", accumulate: int = 1,
                 monitor: str = "loss", patience: int | None = None, keep_last: int = 2,
                 prepare: Callable | None = None, renderer: Renderer | None = None,
                 jit: bool | None = None):
        if scheduler_step not in ("epoch", "step"):
            raise ValueError(f"Learner: scheduler_step must be 'epoch' or 'step', got {scheduler_step!r}")
        if accumulate < 1:
            raise ValueError(f"Learner: accumulate must be >= 1, got {accumulate}")
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.folder = Path(folder)
        self.metric_factory = (lambda: [type(m)(**_init_args(m)) for m in metrics]) if metrics \
            else (lambda: classification_metrics(num_classes or 10))
        self.scheduler, self.scheduler_step = scheduler, scheduler_step
        self.accumulate, self.monitor, self.patience = accumulate, monitor, patience
        self.keep_last = keep_last
        self.prepare = prepare or self._to_backend
        self.renderer = renderer
        self.backend = next(iter(model.parameters())).backend
        self.jit = benefits(self.backend) if jit is None else bool(jit)
        self._train_step = ember_jit(self._step) if self.jit else self._step
        self._forward = ember_jit(self.model) if self.jit else self.model
        self._interrupt: GracefulInterrupt | None = None  # the running fit's, for request_stop

    # ------------------------------------------------------------------ helpers
    def _to_backend(self, batch):
        x, y = batch
        return x.to(self.backend), y.to(self.backend)

    @property
    def checkpoints(self) -> Path:
        """The checkpoint folder, ``folder/checkpoints``."""
        return self.folder / "checkpoints"

    def _state(self, epoch: int, step: int, train_loader, best, bad_epochs, metrics,
               history, grads=None) -> dict:
        return {
            "epoch": epoch, "step": step, "best": {k: list(v) for k, v in best.items()},
            "bad_epochs": bad_epochs, "history": history,
            "model": {k: v for k, v in self.model.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler else None,
            "rng": list(default_generator.get_state()),
            "loader": train_loader.state_dict(),
            "metrics": [_metric_state(m) for m in metrics] if metrics else None,
            "accumulated": self._accumulated(step, grads),
        }

    def _accumulated(self, step: int, grads) -> dict | None:
        """The gradients summed since the last optimizer step, by parameter name."""
        if grads is None:
            return None
        named = {name: grads.get(p) for name, p in self.model.named_parameters()}
        return {"batches": step % self.accumulate, "accumulate": self.accumulate,
                "grads": {name: g for name, g in named.items() if g is not None}}

    def _restore_accumulated(self, saved: dict | None):
        """Gradients equal to the saved ones, keyed by this model's parameters: seeding
        ``p.backward`` with a value gives exactly that value, so the next ``backward(into=)``
        adds to it as the uninterrupted run did."""
        if saved is None:
            return None
        if saved["accumulate"] != self.accumulate:
            raise RecordError(
                f"resume: the checkpoint stopped {saved['batches']} batches into an "
                f"accumulation of {saved['accumulate']}; resume with "
                f"accumulate={saved['accumulate']} (this Learner has {self.accumulate})"
            )
        params = dict(self.model.named_parameters())
        grads = None
        for name, g in saved["grads"].items():
            grads = params[name].backward(gradient=g, into=grads)
        return grads

    def save(self, name: str, state: dict) -> Path:
        """Write ``state`` as ``checkpoints/<name>.ckpt``; of the ``epoch-N`` ones only the
        last ``keep_last`` are kept."""
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        path = save_checkpoint(self.checkpoints / f"{name}.ckpt", state)
        if name.startswith("epoch-"):
            epochs = sorted(self.checkpoints.glob("epoch-*.ckpt"), key=_epoch_of)
            for old in epochs[: -self.keep_last]:
                old.unlink(missing_ok=True)
        return path

    def last_checkpoint(self) -> Path | None:
        """The newest of the mid-epoch checkpoints (``interrupted.ckpt``, ``max-steps.ckpt``)
        and the last epoch checkpoint (what ``resume`` loads), or None."""
        mid_epoch = [self.checkpoints / f"{name}.ckpt" for name in MID_EPOCH.values()]
        epochs = sorted(self.checkpoints.glob("epoch-*.ckpt"), key=_epoch_of)
        candidates = [p for p in (*mid_epoch, *(epochs[-1:])) if p.exists()]
        return max(candidates, key=lambda p: p.stat().st_mtime_ns) if candidates else None

    def restore(self, path: Path, train_loader) -> dict:
        """Load a checkpoint into the model, optimizer, scheduler, RNG and loader; the
        returned state's ``"grads"`` holds the restored accumulated gradients (or None)."""
        state = load_checkpoint(path, backend=self._inner_backend())
        with reading(f"resume: checkpoint {path} doesn't fit this model"):
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            if self.scheduler and state.get("scheduler"):
                self.scheduler.load_state_dict(state["scheduler"])
            default_generator.set_state(tuple(state["rng"]))
            train_loader.load_state_dict(state["loader"])
            state["grads"] = self._restore_accumulated(state.get("accumulated"))
        return state

    def _step(self, x, y):
        """One optimizer step on one batch: ``(loss, outputs)``."""
        out = self.model(x)
        loss = self.loss_fn(out, y)
        self.optimizer.step(loss.backward())
        return loss, out

    def _inner_backend(self):
        return self.backend.inner or self.backend

    # ------------------------------------------------------------------ the loop
    def fit(self, train_loader, valid_loader=None, epochs: int = 1, resume: bool = False,
            max_steps: int | None = None) -> FitResult:
        """Train for ``epochs``; ``max_steps`` stops after that many batches (tests, demos),
        checkpointed like a Ctrl-C (``max-steps.ckpt`` inside an epoch) so ``resume=True``
        continues; the result's ``max_steps_reached`` says it happened."""
        return _read_synchronously(self._loop(train_loader, valid_loader, epochs, resume,
                                              max_steps))

    async def fit_async(self, train_loader, valid_loader=None, epochs: int = 1,
                        resume: bool = False, max_steps: int | None = None,
                        pause: Callable[[], Awaitable] | None = None) -> FitResult:
        """:meth:`fit` for an event loop: the same loop and result, but it awaits ``pause()``
        (default ``asyncio.sleep(0)``) after every step and reads each step's loss and
        outputs with ``await tensor.to_data_async()``, so a browser page stays responsive and
        nothing needs JSPI (Pyodide's synchronous reads): the checkpoints written at the end of
        each epoch and on a stop are copied to the host the same way first.
        :meth:`request_stop` ends it like a Ctrl-C.

        >>> import asyncio, tempfile, ember
        >>> from ember import nn
        >>> from ember.dataset import DataLoader, InMemoryDataset
        >>> from ember.optim import SGD
        >>> with ember.use_backend("autodiff-python"):
        ...     model = nn.Linear(2, 2)
        >>> data = DataLoader(InMemoryDataset([([0.0, 1.0], 1)] * 4), batch_size=2)
        >>> learner = Learner(model, SGD(model.parameters(), lr=0.1), nn.loss.cross_entropy,
        ...                   folder=tempfile.mkdtemp(), num_classes=2, renderer=Renderer())
        >>> asyncio.run(learner.fit_async(data)).epochs_run
        1
        """
        import asyncio

        pause = pause or (lambda: asyncio.sleep(0))
        loop = self._loop(train_loader, valid_loader, epochs, resume, max_steps)
        values = None
        while True:
            try:
                request = loop.send(values)
            except StopIteration as done:
                return done.value
            if request is None:
                await pause()
                values = None
            elif isinstance(request, _Snapshot):
                values = await request.on_host()
            else:
                values = (await request.to_data_async()).tolist()

    def request_stop(self) -> None:
        """Stop the running fit after its current step, as a first Ctrl-C does (a checkpoint
        is written; the result says ``interrupted``): a page's Stop button."""
        if self._interrupt is not None:
            self._interrupt.requested = True

    def _loop(self, train_loader, valid_loader, epochs: int, resume: bool,
              max_steps: int | None):
        """The training loop of :meth:`fit` and :meth:`fit_async` as a generator: it yields
        ``None`` after each step (a point to pause) and each tensor it must read, receiving
        that tensor's values as a list; it returns the :class:`FitResult`."""
        from ..autodiff import no_grad

        start_time = time.perf_counter()
        renderer = self.renderer or default_renderer()
        log = RunLog(self.folder)
        best: dict = {}
        history: list[dict] = []
        bad_epochs, start_epoch, start_step = 0, 1, 0
        resumed_metrics = resumed_grads = None
        if resume and (path := self.last_checkpoint()) is not None:
            state = self.restore(path, train_loader)
            best = {k: tuple(v) for k, v in state["best"].items()}
            history, bad_epochs = state["history"], state["bad_epochs"]
            start_epoch, start_step = state["epoch"], state["step"]
            if start_step == 0:
                start_epoch += 1
            else:
                train_loader.epoch -= 1  # the loader state counted the interrupted epoch
            resumed_metrics, resumed_grads = state["metrics"], state["grads"]
            log.truncate_after(start_epoch - 1)
            renderer.on_message(f"resumed from {path.name}: epoch {start_epoch}, step {start_step}")
        elif not resume:
            for old in (log.jsonl, log.csv):
                old.unlink(missing_ok=True)
        steps_per_epoch = len(train_loader)
        renderer.on_fit_start({
            "epochs": epochs, "steps": steps_per_epoch, "start_epoch": start_epoch - 1,
            "backend": self.backend.name, "model": type(self.model).__name__,
            "folder": str(self.folder), "has_valid": valid_loader is not None,
        })
        interrupted = stopped_early = reached = False
        epoch = start_epoch - 1
        steps_done = 0
        with GracefulInterrupt() as stop:
            self._interrupt = stop
            for epoch in range(start_epoch, epochs + 1):
                self.model.train()
                metrics = self.metric_factory()
                first = start_step if epoch == start_epoch else 0
                if first and resumed_metrics:
                    for m, s in zip(metrics, resumed_metrics):
                        _load_metric_state(m, s)
                step = first
                grads = resumed_grads if epoch == start_epoch else None
                for batch in train_loader.iter_from(first):
                    x, y = self.prepare(batch)
                    step += 1
                    steps_done += 1
                    lr = self.optimizer.lr  # this step's: a "step" schedule moves it after
                    if self.accumulate == 1 and grads is None:
                        loss, out = self._train_step(x, y)
                    else:
                        out = self.model(x)
                        loss = self.loss_fn(out, y)
                        scaled = loss / self.accumulate if self.accumulate > 1 else loss
                        grads = scaled.backward(into=grads) if grads is not None \
                            else scaled.backward()
                        if step % self.accumulate == 0 or step == steps_per_epoch:
                            self.optimizer.step(grads)
                            grads = None
                    if grads is None and self.scheduler and self.scheduler_step == "step":
                        self.scheduler.step()
                    yield from self._update(metrics, loss, out, y, lr)
                    live = {m.name: m.compute() for m in metrics if m.per_step}
                    renderer.on_step(epoch, "train", step, steps_per_epoch, live)
                    reached = max_steps is not None and steps_done >= max_steps
                    if stop.requested or reached:
                        break
                    yield None
                if stop.requested or (reached and step < steps_per_epoch):
                    interrupted, reached = stop.requested, not stop.requested
                    state = yield _Snapshot(self._state(epoch, step, train_loader, best,
                                                        bad_epochs, metrics, history, grads))
                    cause = "interrupted" if interrupted else "max_steps"
                    path = self.save(MID_EPOCH[cause], state)
                    why = "interrupted" if interrupted else \
                        f"stopped: max_steps={max_steps} steps done"
                    renderer.on_message(f"{why} at epoch {epoch}, step {step} of "
                                        f"{steps_per_epoch}: checkpoint saved to {path}")
                    break
                if self.scheduler and self.scheduler_step == "epoch":
                    self.scheduler.step()
                results = {"train": _results(metrics)}
                if valid_loader is not None:
                    self.model.eval()
                    vmetrics = [m for m in self.metric_factory() if not m.per_step or
                                m.name == "loss"]
                    with no_grad():
                        for i, batch in enumerate(valid_loader, 1):
                            x, y = self.prepare(batch)
                            out = self._forward(x)
                            yield from self._update(vmetrics, self.loss_fn(out, y), out, y)
                            renderer.on_step(epoch, "valid", i, len(valid_loader), {})
                            yield None
                    results["valid"] = _results(vmetrics)
                watched = results.get("valid", results["train"])
                improved = self._track_best(best, results, epoch)
                for split, values in results.items():
                    log.log(epoch, split, values)
                    history.append({"epoch": epoch, "split": split, **_scalars(values)})
                    renderer.on_epoch_end(epoch, split, values, best)
                bad_epochs = 0 if improved else bad_epochs + 1
                state = yield _Snapshot(self._state(epoch, 0, train_loader, best, bad_epochs,
                                                    None, history))
                epoch_path = self.save(f"epoch-{epoch}", state)
                for name in MID_EPOCH.values():
                    (self.checkpoints / f"{name}.ckpt").unlink(missing_ok=True)
                if improved:
                    self.save("best", state)
                if self.patience is not None and bad_epochs >= self.patience:
                    stopped_early = True
                    renderer.on_message(
                        f"early stop: {self.monitor} did not improve for {bad_epochs} epochs "
                        f"(best {watched.get(self.monitor)!r:.8})"
                    )
                    break
                if reached and epoch < epochs:
                    renderer.on_message(f"stopped: max_steps={max_steps} steps done at the end "
                                        f"of epoch {epoch}: checkpoint saved to {epoch_path}")
                    break
                reached = False  # the budget ran out with the last epoch: a complete run
        self._interrupt = None
        plot = plot_curves(log)
        wall = time.perf_counter() - start_time
        summary = {
            "epochs_run": epoch, "best": {k: list(v) for k, v in best.items()},
            "final": history[-1] if history else {}, "interrupted": interrupted,
            "stopped_early": stopped_early, "max_steps_reached": reached,
            "wall_time_s": round(wall, 2),
            "backend": self.backend.name, "run_folder": str(self.folder),
            "plot": str(plot) if plot else None,
        }
        renderer.on_fit_end(summary)
        return FitResult(epoch, best, history, interrupted, stopped_early, self.folder, wall,
                         summary, reached)

    def _update(self, metrics, loss, out, y, lr: float | None = None):
        """(A generator, as :meth:`_loop`: it yields the tensor to read.) ``lr``: the learning
        rate the step was taken with."""
        needs_outputs = any(m.tracked and m.name != "loss" for m in metrics)
        loss_value, predictions, targets = yield from _reading_step(
            loss, out if needs_outputs else None, y if needs_outputs else None)
        step = StepOutput(loss=loss_value, batch_size=int(y.shape[0]), predictions=predictions,
                          targets=targets, lr=lr)
        for m in metrics:
            m.update(step)

    def _track_best(self, best: dict, results: dict, epoch: int) -> bool:
        source = results.get("valid", results["train"])
        improved = False
        for m in self.metric_factory():
            if not m.tracked:
                continue
            value = source.get(m.name)
            if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
                continue
            old = best.get(m.name)
            better = old is None or (value > old[0] if m.higher_is_better else value < old[0])
            if better:
                best[m.name] = (value, epoch)
                if m.name == self.monitor:
                    improved = True
        if self.monitor not in source:
            raise KeyError(
                f"Learner: monitor {self.monitor!r} is not a metric; metrics: {sorted(source)}"
            )
        return improved


class _Snapshot:
    """A checkpoint's state yielded by :meth:`Learner._loop` before it is saved: the
    synchronous driver sends it back as it is (the save reads each tensor); ``fit_async``
    sends back :meth:`on_host`'s copy, read with ``await to_data_async``: no synchronous read
    of the model's backend (a browser without JSPI has none for WebGPU)."""

    def __init__(self, state: dict):
        self.state = state

    async def on_host(self):
        """The state with each tensor replaced by its host data (TensorData, which records
        store as they store tensors)."""
        from ..tensor import Tensor

        async def copy(value):
            if isinstance(value, Tensor):
                return await value.to_data_async()
            if isinstance(value, dict):
                return {k: await copy(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)([await copy(v) for v in value])
            return value

        return await copy(self.state)


def _read_synchronously(reads):
    """Run a generator of :meth:`Learner._loop`'s kind to its return value, answering each
    tensor it yields with that tensor's values (``tolist``): the synchronous driver."""
    values = None
    while True:
        try:
            request = reads.send(values)
        except StopIteration as done:
            return done.value
        values = (None if request is None else request.state if isinstance(request, _Snapshot)
                  else request.tolist())


def _read_step(loss, out, y) -> tuple[float, list | None, list | None]:
    """The loss, the (batch, classes) outputs and the class targets as Python values, in ONE
    read from the device (each read waits for the GPU: one sync per step, not three)."""
    return _read_synchronously(_reading_step(loss, out, y))


def _reading_step(loss, out, y):
    """:func:`_read_step` as a generator: it yields the tensor to read and receives its values
    as a (nested) list, so that ``fit`` reads synchronously and ``fit_async`` awaits."""
    from ..ops.shape_ops import cat

    # the loss's own dtype (float64 stays exact), at least float32 (class ids stay exact)
    dtype = loss.dtype if loss.dtype.itemsize >= 4 else dt.float32
    parts = [loss.detach().reshape(1).astype(dtype)]
    rows = out is not None and out.ndim == 2
    labels = y is not None and y.ndim == 1 and not y.dtype.is_float
    if rows:
        parts.append(out.detach().reshape(-1).astype(dtype))
    if labels:
        parts.append(y.astype(dtype))
    values = yield (cat(parts) if len(parts) > 1 else parts[0])
    predictions = targets = None
    at = 1
    if rows:
        n, k = out.shape
        predictions = [values[at + i * k: at + (i + 1) * k] for i in range(n)]
        at += n * k
    if labels:
        targets = [int(v) for v in values[at:]]
    elif y is not None and y.ndim == 1:
        targets = yield y
    return float(values[0]), predictions, targets


def _results(metrics: list[Metric]) -> dict:
    return {m.name: m.compute() for m in metrics}


def _scalars(values: dict) -> dict:
    return {k: v for k, v in values.items() if isinstance(v, (int, float))}


def _epoch_of(path: Path) -> int:
    return int(path.stem.split("-")[1])


def _init_args(metric: Metric) -> dict:
    return {k: getattr(metric, k) for k in ("k", "num_classes") if hasattr(metric, k)}


def _metric_state(metric: Metric) -> str:
    return json.dumps({k: v for k, v in vars(metric).items()
                       if isinstance(v, (int, float, list)) and k not in ("k", "num_classes")})


def _load_metric_state(metric: Metric, saved: str) -> None:
    for k, v in json.loads(saved).items():
        setattr(metric, k, v)
