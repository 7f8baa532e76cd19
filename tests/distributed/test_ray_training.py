"""EmberTrainer on a real local Ray cluster: 2 workers against 1 (in-process), a worker killed
mid-epoch, and the demo scripts. The model is the MNIST demo CNN on a 1,024-digit subset (one
epoch: 16 steps of a global batch of 64), evaluated on the 1,500 held-out digits."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from mnist_columns import accuracy
from ray_helpers import TRAIN_ROWS, KillOnce, load_demo

import ember
from ember import optim
from ember.demos.mnist_model import mnist_cnn, preprocess
from ember.distributed import EmberTrainer, load_model, predict
from ember.train import load_checkpoint


def held_out_accuracy(result, columns) -> float:
    out = predict(columns, partial(load_model, result.record, mnist_cnn), inputs="image",
                  transform=preprocess)
    return accuracy(out["prediction"], columns["label"])


@pytest.fixture(scope="module")
def train_demo():
    return load_demo("train")


def run_demo(demo, folder, workers: int) -> dict:
    return demo.main(["--workers", str(workers), "--limit", str(TRAIN_ROWS), "--out", str(folder)])


@pytest.fixture(scope="module")
def one_worker(train_demo, tmp_path_factory, mnist_available):
    return run_demo(train_demo, tmp_path_factory.mktemp("one"), 1)


@pytest.fixture(scope="module")
def two_workers(ray_cluster, train_demo, tmp_path_factory, mnist_available):
    return run_demo(train_demo, tmp_path_factory.mktemp("two"), 2)


def test_two_workers_one_step_gradients_equal_the_single_process_ones(ray_cluster, mnist_train,
                                                                      tmp_path):
    # one global batch of 64 rows: 1 step of 64 in-process, or 2 workers × 32 rows each;
    # SGD with lr=1 makes the step's gradient the change of every parameter
    batch = {k: v[:64] for k, v in mnist_train.items()}
    runs = {n: EmberTrainer(mnist_cnn, partial(optim.SGD, lr=1.0), num_workers=n,
                            folder=tmp_path / str(n), inputs="image", targets="label",
                            transform=preprocess, batch_size=64).fit(batch) for n in (1, 2)}
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


def test_two_workers_reach_the_one_worker_accuracy_after_an_epoch(one_worker, two_workers):
    assert (one_worker["workers"], two_workers["workers"]) == (1, 2)
    assert [h["samples"] for h in two_workers["result"].history] == [TRAIN_ROWS]
    one, two = one_worker["test_accuracy"], two_workers["test_accuracy"]
    assert one > 0.5, one  # it learned something: the comparison means something
    assert abs(one - two) <= 0.005, (one, two)
    # the driver's run log got the epoch (the Learner's metrics.jsonl)
    folder = two_workers["result"].record.parent
    assert (folder / "metrics.jsonl").read_text().count('"train"') == 1


@pytest.fixture(scope="module")
def killed(ray_cluster, train_demo, tmp_path_factory, mnist_train):
    folder = tmp_path_factory.mktemp("killed")
    marker = folder / "killed.pid"
    # rank 1 dies at its 6th batch: after the checkpoint of step 4, before the one of step 8
    kill = KillOnce(preprocess, marker, at_call=6)
    result = train_demo.make_trainer(2, folder, transform=kill).fit(mnist_train)
    return result, marker


def test_a_worker_killed_mid_epoch_resumes_from_the_last_checkpoint(killed, two_workers,
                                                                   mnist_test):
    result, marker = killed
    assert marker.exists(), "the worker was never killed"
    assert result.restarts >= 1
    # the new worker group started from the step-4 checkpoint, not from the start
    assert result.resumed == [(1, 4)], result.resumed
    assert result.reports == [(1, 4), (1, 8), (1, 12), (1, 16)], result.reports
    assert result.history[-1]["samples"] == TRAIN_ROWS  # the epoch's sums survived the kill
    # nothing lost: the final record loads and scores as the uninterrupted run
    assert abs(held_out_accuracy(result, mnist_test) - two_workers["test_accuracy"]) <= 0.005


def test_the_inference_demo_on_two_actors(ray_cluster, two_workers):
    summary = load_demo("predict").main([two_workers["record"], "--actors", "2"])
    assert summary["in_order"] and summary["images"] == 1500
    assert summary["accuracy"] == two_workers["test_accuracy"]  # the in-process evaluation
