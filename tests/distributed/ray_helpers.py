"""Helpers of the distributed tests; what the Ray workers run travels by value (conftest).

(A module of its own: test modules import from here, not from ``conftest``, a name several
folders of tests/ share.)"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from pathlib import Path

TRAIN_ROWS = 1024  # the digits the training tests use: 16 steps of a global batch of 64
DEMOS = Path(__file__).resolve().parents[2] / "demos" / "distributed"


def load_demo(name: str):
    """A script of demos/distributed as a module (its ``main(argv)`` runs in this process)."""
    spec = importlib.util.spec_from_file_location(f"demo_distributed_{name}", DEMOS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class KillOnce:
    """A transform that SIGKILLs its worker process (Ray Train rank ``rank``) at its
    ``at_call``-th batch — once per run: ``marker`` remembers, so the restart goes on.

    It waits ``settle`` seconds first: the controller collects reports by polling (every
    0.25 s in these tests), and a worker killed before its last report was collected takes
    that checkpoint with it — the run would then rightly start over, testing nothing."""

    def __init__(self, transform, marker: Path, at_call: int, rank: int = 1, settle: float = 1.5):
        self.transform, self.marker, self.at_call, self.rank = transform, marker, at_call, rank
        self.settle, self.calls = settle, 0

    def __call__(self, x):
        import ray.train

        self.calls += 1
        if self.calls == self.at_call and not self.marker.exists() \
                and ray.train.get_context().get_world_rank() == self.rank:
            self.marker.write_text(str(os.getpid()))
            time.sleep(self.settle)
            os.kill(os.getpid(), signal.SIGKILL)
        return self.transform(x)


def seeded_cnn():
    """The demo CNN with fixed weights (seed 0): a ``model_fn`` for the actors."""
    import ember
    from ember.demos.mnist_model import mnist_cnn

    ember.seed(0)
    return mnist_cnn()
