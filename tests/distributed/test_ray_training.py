"""EmberTrainer on a real local Ray cluster: 2 workers against 1 (in-process), a worker killed
mid-epoch. The model is the MNIST demo CNN on a 1,024-digit subset (one epoch: 16 steps)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from conftest import TRAIN_ROWS
from mnist_columns import accuracy
from ray_helpers import KillOnce

import ember
from ember import optim
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.distributed import EmberTrainer
from ember.train import load_checkpoint

COMMON = dict(inputs="image", targets="label", transform=preprocess, batch_size=64, epochs=1)
ADAM = partial(optim.Adam, lr=2e-3)


def fit(folder, data, optimizer=ADAM, **options):
    return EmberTrainer(mnist_cnn, optimizer, folder=folder, **{**COMMON, **options}).fit(data)


def test_accuracy(result, columns) -> float:
    """Not a test: the accuracy of a run's final record on ``columns``."""
    model = result.load_model(mnist_cnn)
    with ember.no_grad():
        out = model(preprocess(ember.tensor(columns["image"]))).argmax(dim=1).numpy()
    return accuracy(out, columns["label"])


test_accuracy.__test__ = False


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory, mnist_train):
    return fit(tmp_path_factory.mktemp("one"), mnist_train)


@pytest.fixture(scope="module")
def two_workers(ray_cluster, tmp_path_factory, mnist_train):
    return fit(tmp_path_factory.mktemp("two"), mnist_train, num_workers=2, checkpoint_every=4)


def test_two_workers_one_step_gradients_equal_the_single_process_ones(ray_cluster, mnist_train,
                                                                      tmp_path):
    # one global batch of 64 rows: 1 step of 64 in-process, or 2 workers × 32 rows each;
    # SGD with lr=1 makes the step's gradient the change of every parameter
    batch = {k: v[:64] for k, v in mnist_train.items()}
    sgd = partial(optim.SGD, lr=1.0)
    runs = {n: fit(tmp_path / str(n), batch, sgd, num_workers=n) for n in (1, 2)}
    assert runs[2].workers == 2 and runs[2].history[0]["samples"] == 64
    ember.seed(0)  # the trainer's seed: the initial weights every worker starts from
    start = {k: v.numpy() for k, v in mnist_cnn().state_dict().items()}
    grads = {n: {k: start[k] - v.numpy() for k, v in load_checkpoint(r.record)["model"].items()}
             for n, r in runs.items()}
    reference = torch_gradients(start, batch)
    for name in start:
        np.testing.assert_allclose(grads[2][name], grads[1][name], rtol=1e-4, atol=1e-6,
                                   err_msg=name)
        np.testing.assert_allclose(grads[1][name], reference[name], rtol=1e-3, atol=1e-5,
                                   err_msg=name)


def torch_gradients(weights: dict, batch: dict) -> dict:
    """The same CNN's gradients by torch, in float64: an independent reference."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10),
    ).double()
    model.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()})
    x = torch.from_numpy(batch["image"].astype(np.float64)).reshape(-1, 1, 28, 28) / 255.0
    x = (x - 0.1307) / 0.3081
    loss = nn.functional.cross_entropy(model(x), torch.from_numpy(batch["label"]))
    loss.backward()
    return {k: p.grad.numpy() for k, p in model.named_parameters()}


def test_two_workers_reach_the_one_worker_accuracy_after_an_epoch(one_worker, two_workers,
                                                                   mnist_test):
    assert [h["samples"] for h in two_workers.history] == [TRAIN_ROWS]
    one, two = (test_accuracy(r, mnist_test) for r in (one_worker, two_workers))
    assert one > 0.5, one  # it learned something: the comparison means something
    assert abs(one - two) <= 0.005, (one, two)
    # the driver's run log got the epoch (the Learner's metrics.jsonl)
    assert (two_workers.record.parent / "metrics.jsonl").read_text().count('"train"') == 1


@pytest.fixture(scope="module")
def killed(ray_cluster, tmp_path_factory, mnist_train):
    folder = tmp_path_factory.mktemp("killed")
    marker = folder / "killed.pid"
    # rank 1 dies at its 6th batch: after the checkpoint of step 4, before the one of step 8
    kill = KillOnce(preprocess, marker, at_call=6)
    result = fit(folder, mnist_train, num_workers=2, checkpoint_every=4, max_failures=1,
                 transform=kill)
    return result, marker


def test_a_worker_killed_mid_epoch_resumes_from_the_last_checkpoint(killed, two_workers,
                                                                   mnist_test):
    result, marker = killed
    assert marker.exists(), "the worker was never killed"
    assert result.restarts >= 1
    # resumed at step 4 (not from the start: step 4 would be reported twice)
    assert result.reports == [(1, 4), (1, 8), (1, 12), (1, 16)], result.reports
    assert result.history[-1]["samples"] == TRAIN_ROWS  # the epoch's sums survived the kill
    # nothing lost: the final record loads and scores as the uninterrupted run
    assert abs(test_accuracy(result, mnist_test) - test_accuracy(two_workers, mnist_test)) \
        <= 0.005
