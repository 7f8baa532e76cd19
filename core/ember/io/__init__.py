"""Everything on disk: Ember records (modules, optimizer states, checkpoints), safetensors,
PyTorch checkpoints (zip and legacy formats, restricted unpickler, no torch), loading either
into a module (``load_weights``), and atomic writes.

A record is a safetensors file (tensors readable by any safetensors tool) whose header also
holds Ember's metadata: format version, class, config, dtype, the JSON tree of non-tensor
state and a checksum over the whole file. Writes are atomic; loads check everything before
changing anything; every reader bounds what a file may make it allocate (``ember.limits``)
and fails only with :class:`~ember.errors.RecordError`.

>>> import os, tempfile, ember
>>> from ember import nn, optim
>>> folder = tempfile.mkdtemp()
>>> model = nn.Linear(2, 1)
>>> opt = optim.Adam(model.parameters(), lr=1e-3)
>>> ember.save({"model": model, "optim": opt, "epoch": 3}, os.path.join(folder, "ckpt"))
>>> ember.load({"model": model, "optim": opt}, os.path.join(folder, "ckpt"))["epoch"]
3
"""

from .record_tree import flatten, unflatten
from .records import FORMAT, VERSION, LoadResult, load, read_metadata, save
from .safetensors import SafeTensorsFile, load_file, save_file

# loaded on first use: the PyTorch readers (zipfile, pickle) and atomic writes (tempfile,
# shutil) cost ~200 ms of imports in a web page that only reads a safetensors file
_LAZY = {
    "atomic_write": "atomic",
    "PyTorchFile": "pytorch",
    "load_pytorch": "pytorch",
    "read_pytorch": "pytorch",
    "detect_format": "weights",
    "load_weights": "weights",
    "open_weights": "weights",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'ember.io' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = [
    "FORMAT",
    "VERSION",
    "LoadResult",
    "PyTorchFile",
    "SafeTensorsFile",
    "atomic_write",
    "detect_format",
    "flatten",
    "load",
    "load_file",
    "load_pytorch",
    "load_weights",
    "open_weights",
    "read_metadata",
    "read_pytorch",
    "save",
    "save_file",
    "unflatten",
]
