"""Learning-rate schedulers with ``torch.optim.lr_scheduler``'s names and behaviour.

Each scheduler computes the learning rate in closed form from the step count and the
group's ``initial_lr``, so a schedule never drifts and composes cleanly (``SequentialLR``).
``step()`` once per epoch (or per batch), after ``opt.step(grads)``::

    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for epoch in range(100):
        ...; opt.step(grads)
        sched.step()

>>> import ember
>>> from ember import nn, optim
>>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
>>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
>>> for _ in range(3):
...     sched.step()
>>> round(sched.get_last_lr()[0], 6), round(opt.param_groups[0]["lr"], 6)
(0.1, 0.1)
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence


class LRScheduler:
    """Base class: a subclass defines :meth:`lr_at` (the lr of one group at step ``t``).

    >>> from ember import nn, optim
    >>> class Halving(optim.LRScheduler):
    ...     def lr_at(self, base_lr, t):
    ...         return base_lr / 2**t
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = Halving(opt)  # the constructor takes step 0
    >>> sched.step(); sched.get_last_lr(), opt.lr, sched.get_lr()
    ([0.5], 0.5, [0.5])
    >>> saved = sched.state_dict(); sched.step(); sched.get_last_lr()
    [0.25]
    >>> sched.load_state_dict(saved); sched.get_last_lr(), sched.last_epoch
    ([0.5], 1)
    """

    def __init__(self, optimizer, last_epoch: int = -1):
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(
                f"{type(self).__name__}: expected an Optimizer, got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"{type(self).__name__}: resuming at last_epoch={last_epoch} needs "
                    f"'initial_lr' in param group {i} (load the optimizer's state first)"
                )
        self.base_lrs: list[float] = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._last_lr: list[float] = [g["lr"] for g in optimizer.param_groups]
        self._initial_step()

    def _initial_step(self) -> None:
        self.step()

    def lr_at(self, base_lr: float, t: int) -> float:
        """The learning rate of a group whose initial rate is ``base_lr``, at step ``t``.

        >>> from ember import nn, optim
        >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
        >>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> [sched.lr_at(1.0, t) for t in range(5)]
        [1.0, 1.0, 0.5, 0.5, 0.25]
        """
        raise NotImplementedError

    def get_lr(self) -> list[float]:
        """The learning rates for the current ``last_epoch`` (use :meth:`get_last_lr`)."""
        return [self.lr_at(base, self.last_epoch) for base in self.base_lrs]

    def get_last_lr(self) -> list[float]:
        """The learning rate of each parameter group, as last set by :meth:`step`."""
        return list(self._last_lr)

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (or jump to ``epoch``) and write the new rates into the groups."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        lrs = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = lrs

    def state_dict(self) -> dict:
        """Everything but the optimizer and callables (JSON-friendly numbers and lists)."""
        return {
            k: v
            for k, v in self.__dict__.items()
            if k != "optimizer" and not callable(v) and k != "lr_lambdas"
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved."""
        self.__dict__.update({k: v for k, v in state.items() if k != "lr_lambdas"})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, lr={self._last_lr})"


def _per_group(value, optimizer, name: str) -> list:
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: expected {n} values (one per param group), got {len(value)}")
        return list(value)
    return [value] * n


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(t)`` (one function, or one per group).

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> s = optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5 ** t); s.step(); s.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer, lr_lambda: Callable[[int], float] | Sequence, last_epoch=-1):
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "LambdaLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """>>> from ember import nn, optim
        >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=2.0)
        >>> optim.lr_scheduler.LambdaLR(opt, lambda t: t + 1).get_lr()
        [2.0]
        """
        return [b * f(self.last_epoch) for b, f in zip(self.base_lrs, self.lr_lambdas)]


class ConstantLR(LRScheduler):
    """``initial_lr * factor`` for the first ``total_iters`` steps, then ``initial_lr``.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
    >>> [sched.lr_at(1.0, t) for t in range(4)]
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch=-1):
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        return base_lr * self.factor if t < self.total_iters else base_lr


class StepLR(LRScheduler):
    """Multiply by ``gamma`` every ``step_size`` steps.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(opt.lr); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch=-1):
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        return base_lr * self.gamma ** (t // self.step_size)


class MultiStepLR(LRScheduler):
    """Multiply by ``gamma`` at each of the ``milestones``.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
    >>> [sched.lr_at(1.0, t) for t in range(4)]
    [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        return base_lr * self.gamma ** bisect_right(self.milestones, t)


class ExponentialLR(LRScheduler):
    """``initial_lr * gamma ** t``.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> [optim.lr_scheduler.ExponentialLR(opt, gamma=0.5).lr_at(1.0, t) for t in range(3)]
    [1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer, gamma: float, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        return base_lr * self.gamma**t


class LinearLR(LRScheduler):
    """Linear warm-up (or decay): the factor goes from ``start_factor`` to ``end_factor``
    over ``total_iters`` steps, then stays.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> [sched.lr_at(1.0, t) for t in range(5)]
    [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch=-1,
    ):
        if not (0 < start_factor <= 1 and 0 <= end_factor <= 1):
            raise ValueError(
                f"LinearLR: need 0 < start_factor <= 1 and 0 <= end_factor <= 1, got "
                f"{start_factor}, {end_factor}"
            )
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        frac = min(t, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * frac)


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``initial_lr`` down to ``eta_min`` over ``T_max`` steps.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    >>> [round(sched.lr_at(1.0, t), 6) for t in range(5)]
    [1.0, 0.853553, 0.5, 0.146447, 0.0]
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch=-1):
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        cos = 1 + math.cos(math.pi * t / self.T_max)
        return self.eta_min + (base_lr - self.eta_min) * cos / 2


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine cycles of ``T_0``, ``T_0 * T_mult``, ... steps, restarting at
    ``initial_lr``.

    >>> from ember import nn, optim
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> [round(sched.lr_at(1.0, t), 6) for t in range(5)]
    [1.0, 0.5, 1.0, 0.5, 1.0]
    """

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch=-1):
        if T_0 < 1 or T_mult < 1 or int(T_mult) != T_mult:
            raise ValueError(
                f"CosineAnnealingWarmRestarts: need T_0 >= 1 and an integer T_mult >= 1, got "
                f"T_0={T_0}, T_mult={T_mult}"
            )
        self.T_0, self.T_mult, self.eta_min = T_0, int(T_mult), eta_min
        super().__init__(optimizer, last_epoch)

    def _position(self, t: int) -> tuple[int, int]:
        # Integer walk over the cycles: exact at the restart steps, where a log() can round.
        if self.T_mult == 1:
            return t % self.T_0, self.T_0
        cur, length = t, self.T_0
        while cur >= length:
            cur -= length
            length *= self.T_mult
        return cur, length

    def lr_at(self, base_lr, t):
        cur, length = self._position(max(t, 0))
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * cur / length)) / 2


class NoamLR(LRScheduler):
    """The Transformer schedule (Vaswani et al., 2017), scaled by the optimizer's lr::

        lr = initial_lr * d_model**-0.5 * min(s**-0.5, s * warmup_steps**-1.5),  s = t + 1

    ``lr=1.0`` in the optimizer gives the paper's schedule.

    >>> from ember import nn, optim
    >>> opt = optim.Adam(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> s = optim.lr_scheduler.NoamLR(opt, d_model=512, warmup_steps=4000)
    >>> round(s.get_last_lr()[0], 10)
    1.747e-07
    """

    def __init__(self, optimizer, d_model: int, warmup_steps: int = 4000, last_epoch=-1):
        if d_model < 1 or warmup_steps < 1:
            raise ValueError(
                f"NoamLR: d_model and warmup_steps must be >= 1, got {d_model}, {warmup_steps}"
            )
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, t):
        s = max(t, 0) + 1
        return base_lr * self.d_model**-0.5 * min(s**-0.5, s * self.warmup_steps**-1.5)


class SequentialLR(LRScheduler):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; each one
    restarts from its own step 0 at its milestone (``torch.optim.lr_scheduler.SequentialLR``).

    >>> from ember import nn, optim
    >>> from ember.optim import lr_scheduler as S
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> warm = S.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> cos = S.CosineAnnealingLR(opt, T_max=4)
    >>> sched = S.SequentialLR(opt, [warm, cos], milestones=[3])
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(round(sched.get_last_lr()[0], 3)); sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 0.854, 0.5]

    >>> before, saved = sched.get_last_lr(), sched.state_dict()
    >>> sched.step(); sched.load_state_dict(saved); sched.get_last_lr() == before
    True
    """

    def __init__(
        self,
        optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
    ):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR: expected at least one scheduler")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} "
                f"milestones, got {len(milestones)}"
            )
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: scheduler {i} drives a different optimizer")
        self.optimizer = optimizer
        self._schedulers = schedulers
        self.milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        # The schedulers' constructors each took a first step; start over from the first one.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        schedulers[0].step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self, epoch: int | None = None) -> None:
        if epoch is not None:
            raise TypeError("SequentialLR.step: takes no epoch")
        self.last_epoch += 1
        idx = bisect_right(self.milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self.milestones[idx - 1] == self.last_epoch:
            sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def state_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state: dict) -> None:
        state = dict(state)
        subs = state.pop("_schedulers", [])
        if len(subs) != len(self._schedulers):
            raise ValueError(
                f"SequentialLR.load_state_dict: saved state has {len(subs)} "
                f"schedulers, this one has {len(self._schedulers)}"
            )
        self.__dict__.update(state)
        for s, sub in zip(self._schedulers, subs):
            s.load_state_dict(sub)


class ChainedScheduler(LRScheduler):
    """Apply several schedulers at once: their factors multiply (``ConstantLR`` warm-up
    times ``ExponentialLR`` decay, say). Each one is stepped on every ``step()``.

    >>> from ember import nn, optim
    >>> from ember.optim import lr_scheduler as S
    >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
    ...                             S.ExponentialLR(opt, gamma=0.5)])
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(opt.lr); sched.step()
    >>> lrs  # 0.5 (warm-up) * 0.5 ** t, then 1 * 0.5 ** t
    [0.5, 0.25, 0.25, 0.125]
    >>> saved = sched.state_dict(); sched.step(); sched.load_state_dict(saved)
    >>> sched.get_last_lr()  # restored (the optimizer's lr changes at the next step)
    [0.0625]
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler: expected at least one scheduler")
        self.optimizer = optimizer or schedulers[0].optimizer
        self._schedulers = schedulers
        self.base_lrs = [g["initial_lr"] for g in self.optimizer.param_groups]
        self.last_epoch = schedulers[0].last_epoch
        self._apply()

    def _apply(self) -> None:
        lrs = []
        for i, base in enumerate(self.base_lrs):
            lr = base
            for s in self._schedulers:
                lr *= s.get_lr()[i] / base if base else 0.0
            lrs.append(lr)
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = lrs

    def step(self, epoch: int | None = None) -> None:
        for s in self._schedulers:
            s.step()
        self.last_epoch += 1
        self._apply()

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


def warmup_cosine(
    optimizer, warmup_steps: int, total_steps: int, start_factor: float = 1e-3, eta_min: float = 0.0
) -> SequentialLR:
    """Linear warm-up for ``warmup_steps``, then cosine decay to ``eta_min`` by
    ``total_steps``: the usual transformer recipe as one ``SequentialLR``.

    >>> from ember import nn, optim
    >>> opt = optim.AdamW(nn.Linear(1, 1).parameters(), lr=1e-3)
    >>> sched = optim.lr_scheduler.warmup_cosine(opt, warmup_steps=10, total_steps=100)
    >>> type(sched).__name__
    'SequentialLR'
    """
    if not 0 < warmup_steps < total_steps:
        raise ValueError(
            f"warmup_cosine: need 0 < warmup_steps < total_steps, got {warmup_steps}, {total_steps}"
        )
    warm = LinearLR(optimizer, start_factor=start_factor, total_iters=warmup_steps)
    cos = CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=eta_min)
    return SequentialLR(optimizer, [warm, cos], milestones=[warmup_steps])
