"""ember.distributed without Ray: one worker in this process, and the message naming the extra
when more is asked. A small linear classifier keeps these fast."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.distributed import EmberTrainer, predict, trainer as trainer_module
from ember.distributed import predictor as predictor_module
from ember.distributed.log import combine
from ember.train import load_checkpoint

SGD = partial(optim.SGD, lr=0.1, momentum=0.9)


def linear():
    return nn.Linear(4, 3)


@pytest.fixture
def blobs():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 96)
    x = rng.normal(size=(96, 4)).astype(np.float32) + np.eye(3, 4, dtype=np.float32)[y] * 3
    return {"x": x, "y": y.astype(np.int64)}


def test_without_ray_more_than_one_worker_names_the_extra(monkeypatch):
    monkeypatch.setattr(trainer_module, "ray_available", lambda: False)
    monkeypatch.setattr(predictor_module, "ray_available", lambda: False)
    with pytest.raises(ImportError, match=r"pip install 'ember\[ray\]'.*num_workers=1"):
        EmberTrainer(linear, SGD, num_workers=2)
    with pytest.raises(ImportError, match=r"pip install 'ember\[ray\]'"):
        predict({"x": np.zeros((2, 4), np.float32)}, linear, num_actors=2)
    EmberTrainer(linear, SGD)  # one worker needs no Ray


def test_one_worker_trains_in_process_and_logs_like_the_learner(blobs, tmp_path):
    result = EmberTrainer(linear, SGD, folder=tmp_path, epochs=3, batch_size=16).fit(blobs)
    assert [h["epoch"] for h in result.history] == [1, 2, 3]
    assert result.history[-1]["accuracy"] > 0.9
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert (tmp_path / "metrics.jsonl").read_text().count('"train"') == 3
    model = result.load_model(linear)
    with ember.no_grad():
        predicted = model(ember.tensor(blobs["x"])).argmax(dim=1).numpy()
    assert (predicted == blobs["y"]).mean() > 0.9


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(blobs, tmp_path):
    # the checkpoint holds the optimizer's momentum and the position: 1 + 1 epochs == 2 epochs
    def run(folder, epochs, resume=False):
        trainer = EmberTrainer(linear, SGD, folder=folder, epochs=epochs, batch_size=16,
                               checkpoint_every=2)
        result = trainer.fit(blobs, resume=resume)
        return result, load_checkpoint(result.record)["model"]

    run(tmp_path / "a", 1)
    second, resumed = run(tmp_path / "a", 2, resume=True)
    assert second.resumed == [(2, 0)] and [h["epoch"] for h in second.history] == [2]
    _, straight = run(tmp_path / "b", 2)
    for name, value in straight.items():
        np.testing.assert_array_equal(resumed[name].numpy(), value.numpy(), err_msg=name)


def test_the_global_batch_must_split_evenly():
    with pytest.raises(ValueError, match="batch_size 10 must be a multiple of num_workers 4"):
        EmberTrainer(linear, SGD, num_workers=4, batch_size=10)


def test_worker_reports_combine_into_global_figures():
    reports = [
        {"epoch": 2, "step": 5, "end": True, "samples": 10, "loss_sum": 5.0, "correct": 8,
         "steps": 5, "step_s": 1.0, "allreduce_s": 0.25, "grad_bytes": 40},
        {"epoch": 2, "step": 5, "end": True, "samples": 10, "loss_sum": 3.0, "correct": 6,
         "steps": 5, "step_s": 2.0, "allreduce_s": 0.5, "grad_bytes": 40},
    ]
    out = combine(reports)
    assert (out["samples"], out["loss"], out["accuracy"]) == (20, 0.4, 0.7)
    # the slowest worker sets the pace
    assert (out["step_s"], out["allreduce_share"], out["samples_per_s"]) == (0.4, 0.25, 10.0)


def _backend_or_skip(name: str):
    try:
        return ember.get_backend(name)
    except (ImportError, ember.EmberError, RuntimeError) as e:
        pytest.skip(f"no {name} backend: {e}")


@pytest.mark.parametrize("backend", ["numpy", "wgpu"])
def test_averaged_gradients_come_back_on_the_workers_backend(backend):
    """The all-reduce's packing and unpacking (one flat buffer and back into Gradients) on
    either backend: two workers holding the same gradients average to those gradients.
    The "collective" here doubles the buffer, as summing two equal workers would."""
    from ember.distributed.collective import GradientAverager

    inner = _backend_or_skip(backend)
    ember.seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)).to(ember.Autodiff(inner))
    x = ember.tensor(np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32),
                     backend=model[0].weight.backend)
    grads = (model(x) ** 2).mean().backward()
    params = list(model.named_parameters())
    expected = {name: grads.get(p).numpy() for name, p in params}
    averager = GradientAverager(params, world_size=2, all_reduce=lambda flat: flat.__imul__(2))
    averaged = averager.average(grads)
    for name, p in params:
        g = averaged.get(p)
        assert g.backend.name == inner.name, name
        np.testing.assert_allclose(g.numpy(), expected[name], rtol=1e-6, err_msg=name)
    assert averager.nbytes == 4 * sum(v.size for v in expected.values())


def test_the_predictor_shares_memory_with_the_batch_on_numpy():
    """Zero-copy both ways on the numpy backend: the model reads the batch's own array, and
    the output column is the output tensor's buffer."""
    from ember.distributed import Predictor

    class Spy(nn.Module):
        def forward(self, x):
            self.seen, self.out = x, x * 2
            return self.out

    batch = {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}
    predictor = Predictor(Spy)
    result = predictor(batch)
    assert np.shares_memory(np.from_dlpack(predictor.model.seen), batch["x"])
    assert np.shares_memory(result["output"], np.from_dlpack(predictor.model.out))
    assert result["output"].tolist() == (batch["x"] * 2).tolist()
