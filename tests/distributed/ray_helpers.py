"""Helpers the Ray workers run (shipped by value: see conftest)."""

from __future__ import annotations

import os
import signal
from pathlib import Path


class KillOnce:
    """A transform that SIGKILLs its worker process (Ray Train rank ``rank``) at its
    ``at_call``-th batch — once per run: ``marker`` remembers, so the restart goes on."""

    def __init__(self, transform, marker: Path, at_call: int, rank: int = 1):
        self.transform, self.marker, self.at_call, self.rank = transform, marker, at_call, rank
        self.calls = 0

    def __call__(self, x):
        import ray.train

        self.calls += 1
        if self.calls == self.at_call and not self.marker.exists() \
                and ray.train.get_context().get_world_rank() == self.rank:
            self.marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return self.transform(x)


def seeded_cnn():
    """The demo CNN with fixed weights (seed 0): a ``model_fn`` for the actors."""
    import ember
    from ember.demos.mnist_model import mnist_cnn

    ember.seed(0)
    return mnist_cnn()
