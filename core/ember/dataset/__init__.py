"""Datasets, batching and data loading."""

from .base import (
    ConcatDataset, Dataset, InMemoryDataset, MappedDataset, PartialDataset, ShuffledDataset,
    TensorDataset, WindowedDataset, split,
)
from .idx import read_idx, write_idx
from .loader import Batcher, DataLoader
from .image_folder import ImageFolderDataset, load_image
from .mnist import MnistDataset, download
from .tabular import CsvDataset

__all__ = [
    "ConcatDataset", "Dataset", "InMemoryDataset", "MappedDataset", "PartialDataset",
    "ShuffledDataset", "TensorDataset", "WindowedDataset", "split", "read_idx", "write_idx",
    "Batcher",
    "DataLoader", "MnistDataset", "download", "ImageFolderDataset", "load_image", "CsvDataset",
]
