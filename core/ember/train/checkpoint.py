"""Training checkpoints: everything needed to resume exactly, in one record file.

A checkpoint is an :mod:`ember.io` state record (safetensors + a JSON tree): model
parameters and buffers, optimizer moments, scheduler and RNG state, data order, partial metric
sums, gradients accumulated since the last optimizer step. Writes are atomic, so an interrupt
never leaves a torn checkpoint; a truncated or corrupt one (any damaged byte: the record's
checksum covers the whole file) raises :class:`~ember.errors.RecordError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import RecordError
from ..io import load, save


def save_checkpoint(path: str | os.PathLike, state: dict) -> Path:
    """Write ``state`` (nested dicts/lists of tensors and JSON values) atomically to ``path``.

    A bit-exact resume needs everything the loop carries from one step to the next; the
    Learner's state includes the gradients accumulated since the last optimizer step.
    """
    save(state, path, metadata={"kind": "ember.train.checkpoint"})
    return Path(path)


def load_checkpoint(path: str | os.PathLike, backend=None) -> dict:
    """The state dict saved by :func:`save_checkpoint` (tensors on ``backend``)."""
    state = load(path, backend=backend)
    if not isinstance(state, dict) or "model" not in state:
        raise RecordError(f"checkpoint: {path} is not an ember training checkpoint")
    return state
