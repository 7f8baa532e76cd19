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

    >>> import ember, tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = save_checkpoint(os.path.join(folder, "ckpt.emb"),
    ...                            {"model": {"w": ember.tensor([1.0, 2.0])}, "epoch": 3})
    ...     state = load_checkpoint(path)
    >>> state["epoch"], state["model"]["w"].tolist()
    (3, [1.0, 2.0])
    """
    save(state, path, metadata={"kind": "ember.train.checkpoint"})
    return Path(path)


def load_checkpoint(path: str | os.PathLike, backend=None) -> dict:
    """The state dict saved by :func:`save_checkpoint` (tensors on ``backend``).

    >>> import tempfile, os
    >>> from ember.io import save
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "weights.emb")
    ...     _ = save({"w": [1, 2]}, path)
    ...     load_checkpoint(path)
    Traceback (most recent call last):
    ...
    ember.errors.RecordError: checkpoint: ... is not an ember training checkpoint
    """
    state = load(path, backend=backend)
    if not isinstance(state, dict) or "model" not in state:
        raise RecordError(f"checkpoint: {path} is not an ember training checkpoint")
    return state
