"""Records: modules, optimizer and scheduler states, and checkpoints on disk.

A record is a safetensors file (tensors readable by any safetensors tool) whose header also
holds Ember's metadata: format version, class, config, dtype, the JSON tree of non-tensor
state and a checksum. Writes are atomic; loads check everything before changing anything.

>>> import os, tempfile, ember
>>> from ember import nn, optim
>>> folder = tempfile.mkdtemp()
>>> model = nn.Linear(2, 1)
>>> opt = optim.Adam(model.parameters(), lr=1e-3)
>>> ember.save({"model": model, "optim": opt, "epoch": 3}, os.path.join(folder, "ckpt"))
>>> ember.load({"model": model, "optim": opt}, os.path.join(folder, "ckpt"))["epoch"]
3
"""

from .api import FORMAT, VERSION, LoadResult, load, read_metadata, save
from .tree import flatten, unflatten

__all__ = [
    "FORMAT",
    "VERSION",
    "LoadResult",
    "flatten",
    "load",
    "read_metadata",
    "save",
    "unflatten",
]
