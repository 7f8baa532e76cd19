"""Reading and writing tensors on disk: safetensors (pure Python) with atomic writes, PyTorch
checkpoints (zip and legacy formats, restricted unpickler, no torch), and loading either into
an ember module (``load_weights``)."""

from .atomic import atomic_write
from .loading import detect_format, load_weights, open_weights
from .pytorch import PyTorchFile, load_pytorch, read_pytorch
from .safetensors import SafeTensorsFile, load_file, save_file

__all__ = [
           "PyTorchFile",
           "SafeTensorsFile",
           "atomic_write",
           "detect_format",
           "load_file",
           "load_pytorch",
           "load_weights",
           "open_weights",
           "read_pytorch",
           "save_file",
]
