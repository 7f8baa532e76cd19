"""Load weights trained elsewhere into an ember module: safetensors, PyTorch checkpoints, records.

Keys are matched after renaming the file's keys with regex rules, every problem (missing,
unexpected and shape-mismatched keys) is reported in one error, and nothing is assigned until
every tensor has been read and checked, so a failed load leaves the module as it was. The
matching and checking are the records module's (:func:`ember.load`); this adds the file
formats.

>>> import os, tempfile, ember
>>> from ember import nn
>>> from ember.io import save_file, load_weights
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> save_file({"net.0.weight": ember.ones(2, 3), "net.0.bias": ember.zeros(2)}, path)
>>> model = nn.Linear(3, 2)
>>> result = load_weights(model, path, remap=[(r"^net\\.0\\.", "")])
>>> result.loaded_keys, model.weight.tolist()[0]
(['weight', 'bias'], [1.0, 1.0, 1.0])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..tensordata import TensorData
from ..errors import RecordError
from ..tensor import Tensor
from .pytorch import PyTorchFile
from .safetensors import SafeTensorsFile
from .untrusted import reading

if TYPE_CHECKING:
    from .records import LoadResult

FORMATS = ("safetensors", "pytorch")
Remap = Iterable[tuple[str, str]] | Mapping[str, str] | None


def detect_format(path: str | os.PathLike) -> str:
    """``"pytorch"`` (zip or legacy pickle) or ``"safetensors"`` (ember records too), from the
    file's first bytes; RecordError for anything else.

    >>> import os, tempfile, ember
    >>> from ember.io import save_file
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> save_file({"w": ember.zeros(1)}, path)
    >>> detect_format(path)
    'safetensors'
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError as e:
        raise RecordError(f"load_weights: can't open {path}: {e.strerror}") from e
    # safetensors first: its 8-byte header length may well start with 0x80, a pickle's first
    # byte (a legacy checkpoint's byte 8 is part of its magic number, never "{")
    if len(head) == 9 and head[8:9] == b"{":
        return "safetensors"
    if head.startswith(b"PK") or head[:1] == b"\x80":
        return "pytorch"
    raise RecordError(
        f"load_weights: {path} is neither a safetensors file nor a PyTorch checkpoint "
        f"(starts with {head!r})"
    )


def open_weights(path: str | os.PathLike, format: str | None = None):
    """The file opened for lazy reads: ``keys()``, ``info(name)`` → (dtype, shape), ``get``.

    >>> import os, tempfile, ember
    >>> from ember.io import save_file
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> save_file({"w": ember.ones(2)}, path)
    >>> f = open_weights(path)
    >>> f.keys(), f.info("w"), f.get("w").tolist()
    (['w'], ('F32', (2,)), [1.0, 1.0])
    """
    _check_format(format)
    format = format or detect_format(path)
    return PyTorchFile(path) if format == "pytorch" else SafeTensorsFile(path)


def _check_format(format: str | None) -> None:
    if format is not None and format not in FORMATS:
        raise ValueError(f"load_weights: format must be one of {FORMATS} or None, got {format!r}")


def load_weights(model, source, *, remap: Remap = None, strict: bool = True,
                 format: str | None = None) -> LoadResult:
    """Copy weights from ``source`` into ``model``; returns a :class:`~ember.io.LoadResult`.

    ``source`` is a path (a safetensors file, an ember record, or a PyTorch checkpoint in the
    zip or legacy format — read without torch, through a restricted unpickler) or a mapping
    ``name → Tensor/TensorData``. ``remap`` is a list of ``(regex, replacement)`` applied in
    order to every source key (``[(r"^module\\.", ""), (r"\\.gamma$", ".weight")]``).
    ``strict=False`` skips missing and unexpected keys (listed in the result); shape
    mismatches always fail. One :class:`~ember.errors.RecordError` lists every problem (and a
    malformed file raises nothing else), and the module is untouched unless the whole load
    succeeds. Values are converted to each
    parameter's dtype and moved to its backend.

    >>> import ember
    >>> from ember import nn
    >>> model = nn.Linear(2, 1)
    >>> load_weights(model, {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}).missing_keys
    []
    """
    # imported here: the records module itself imports ember.io
    from .records import _prepare_module, _rules

    rules = _rules(remap)
    if isinstance(source, Mapping):
        values = {k: v if isinstance(v, TensorData) else _as_data(k, v)
                  for k, v in source.items()}
        shapes = {k: v.shape for k, v in values.items()}
        prepared, result = _prepare_module(model, values.__getitem__, shapes, rules, strict,
                                           "the given state dict")
    else:
        _check_format(format)
        where = os.fspath(source)
        with reading(f"load_weights: {where}"):
            f = open_weights(source, format)
            try:
                shapes = {k: f.info(k)[1] for k in f.keys()}  # noqa: SIM118 - f is not a dict
                prepared, result = _prepare_module(model, f.get, shapes, rules, strict, where)
            finally:
                if callable(close := getattr(f, "close", None)):
                    close()
    model.load_state_dict(prepared, strict=False)
    return result


def _as_data(key: str, value) -> TensorData:
    if isinstance(value, Tensor):
        return value.to_data()
    raise TypeError(f"load_weights: {key!r} is a {type(value).__name__}, not a Tensor or "
                    "TensorData")
