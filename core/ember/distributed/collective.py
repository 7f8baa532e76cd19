"""Averaging gradients over the workers with an existing collective: ``torch.distributed``'s
all-reduce on the process group Ray Train set up (gloo on CPUs).

All gradients travel in ONE flat buffer (one all-reduce per step: the latency of a collective
is paid once, not once per parameter — PyTorch DDP's bucketing with a single bucket). The
buffer is a numpy array that torch wraps without a copy.
"""

from __future__ import annotations

import time


class GradientAverager:
    """``average(grads)``: the Gradients of ``params`` averaged over the ``world_size``
    workers (``grads`` itself when alone). ``seconds`` sums the time spent in the collective
    and its packing, for the all-reduce share of a step."""

    def __init__(self, named_params: list, world_size: int, all_reduce=None):
        self.named_params = named_params
        self.world_size = world_size
        self.all_reduce = all_reduce or torch_all_reduce
        self.seconds = 0.0
        self.nbytes = 0

    def average(self, grads):
        if self.world_size == 1:
            return grads
        import numpy as np

        started = time.perf_counter()
        parts = [(p, grads.get(p)) for _, p in self.named_params]
        parts = [(p, g) for p, g in parts if g is not None]
        arrays = [np.asarray(g.numpy()).reshape(-1) for _, g in parts]
        flat = np.concatenate(arrays)
        self.nbytes = flat.nbytes
        self.all_reduce(flat)
        flat /= self.world_size
        averaged, at = None, 0
        for (p, g), a in zip(parts, arrays):
            value = flat[at: at + a.size].reshape(g.shape)
            at += a.size
            # seeding backward with a value yields exactly that value as p's gradient
            averaged = p.backward(gradient=_like(value, g), into=averaged)
        self.seconds += time.perf_counter() - started
        return averaged


def _like(array, tensor):
    from ..ops.conversion import tensor as make

    return make(array, backend=tensor.backend)


def torch_all_reduce(flat) -> None:
    """Sum ``flat`` (a numpy array) over every worker, in place, with torch.distributed."""
    from .extras import require

    torch = require("torch", "ember.distributed's all-reduce")
    dist = torch.distributed
    if not dist.is_initialized():
        raise RuntimeError(
            "ember.distributed: torch.distributed has no process group; run the loop under "
            "EmberTrainer (Ray Train's TorchConfig sets it up) or pass world_size=1"
        )
    dist.all_reduce(torch.from_numpy(flat), op=dist.ReduceOp.SUM)
