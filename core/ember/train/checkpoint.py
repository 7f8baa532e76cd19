"""Training checkpoints: everything needed to resume exactly, in one safetensors file.

Tensors (model parameters and buffers, optimizer moments) are stored as safetensors entries;
everything else (epoch, step, best metrics, scheduler and RNG state, partial metric sums) goes
into the JSON metadata with ``{"__tensor__": key}`` placeholders. Files are written atomically,
so an interrupt never leaves a torn checkpoint; a corrupt one raises RecordError.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..errors import RecordError
from ..store import SafeTensorsFile, save_file
from ..tensor import Tensor

FORMAT = "ember.checkpoint/1"
_TENSOR = "__tensor__"


def flatten_state(obj, tensors: dict, prefix: str = "s"):
    """A JSON-able copy of ``obj`` with each Tensor moved into ``tensors`` under a key."""
    if isinstance(obj, Tensor):
        key = f"{prefix}"
        t = obj.detach() if hasattr(obj, "detach") else obj
        tensors[key] = t.to_data()
        return {_TENSOR: key}
    if isinstance(obj, dict):
        return {"__dict__": [[flatten_state(k, tensors, f"{prefix}.k{i}"),
                              flatten_state(v, tensors, f"{prefix}.{_safe(k, i)}")]
                             for i, (k, v) in enumerate(obj.items())]}
    if isinstance(obj, (list, tuple)):
        items = [flatten_state(v, tensors, f"{prefix}.{i}") for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise RecordError(f"checkpoint: can't store a {type(obj).__name__} ({obj!r:.60})")


def _safe(key, index: int) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", str(key))
    return f"{text}_{index}"


def unflatten_state(obj, file: SafeTensorsFile, backend):
    from ..ops.creation import tensor

    if isinstance(obj, dict):
        if _TENSOR in obj:
            return tensor(file.get(obj[_TENSOR]), backend=backend)
        if "__dict__" in obj:
            return {unflatten_state(k, file, backend): unflatten_state(v, file, backend)
                    for k, v in obj["__dict__"]}
        if "__tuple__" in obj:
            return tuple(unflatten_state(v, file, backend) for v in obj["__tuple__"])
        raise RecordError(f"checkpoint: unexpected object in metadata: {sorted(obj)}")
    if isinstance(obj, list):
        return [unflatten_state(v, file, backend) for v in obj]
    return obj


def save_checkpoint(path: str | os.PathLike, state: dict) -> Path:
    tensors: dict = {}
    skeleton = flatten_state(state, tensors)
    save_file(tensors, path, metadata={"format": FORMAT, "state": json.dumps(skeleton)})
    return Path(path)


def load_checkpoint(path: str | os.PathLike, backend=None) -> dict:
    """The state dict saved by :func:`save_checkpoint` (tensors on ``backend``)."""
    f = SafeTensorsFile(path)
    if f.metadata.get("format") != FORMAT:
        raise RecordError(
            f"checkpoint: {path} is not an ember checkpoint (format "
            f"{f.metadata.get('format')!r}, expected {FORMAT!r})"
        )
    try:
        skeleton = json.loads(f.metadata["state"])
    except (KeyError, json.JSONDecodeError) as e:
        raise RecordError(f"checkpoint: {path} has corrupt metadata: {e}") from e
    return unflatten_state(skeleton, f, backend)
