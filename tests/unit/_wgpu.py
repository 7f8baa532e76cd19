"""The wgpu backend for the wgpu test modules, with upload/readback helpers; importing this
skips the importing test module when numpy, wgpu-py or a GPU adapter (Mesa lavapipe on CPU-only
machines) is missing."""

from __future__ import annotations

import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("wgpu")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import ember
from ember.tensordata import TensorData
from ember.errors import EmberError

try:
    B = ember.get_backend("wgpu")
except (EmberError, ImportError, RuntimeError) as e:  # no adapter / driver
    pytest.skip(f"no wgpu adapter: {e}", allow_module_level=True)


def up(a, dtype=None):
    """A numpy array (or nested list) uploaded to the wgpu backend, as its primitive."""
    return B.from_data(TensorData.from_numpy(np.asarray(a, dtype=dtype)))


def down(p):
    """A wgpu primitive read back as a numpy array."""
    return B.to_data(p).to_numpy()
