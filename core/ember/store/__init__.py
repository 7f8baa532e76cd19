"""Reading and writing tensors on disk: safetensors (pure Python) with atomic writes."""

from .atomic import atomic_write
from .safetensors import SafeTensorsFile, load_file, save_file

__all__ = ["atomic_write", "SafeTensorsFile", "load_file", "save_file"]
