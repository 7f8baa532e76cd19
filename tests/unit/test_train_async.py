"""``Learner.fit_async``: the same loop as ``fit`` (same seed, same weights, metrics and
history), awaiting between steps so other tasks of the event loop run, reading through
``to_data_async``, and stopped by ``request_stop`` like a Ctrl-C."""

import asyncio
import os

import numpy as np

import ember
from ember import nn
from ember.dataset import DataLoader
from ember.optim import Adam
from ember.train import Learner, PlainRenderer
from test_train import _data  # the same four-feature, three-class problem


def _setup(folder, seed=0):
    ember.seed(seed)
    with ember.use_backend("autodiff-numpy"):
        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
    learner = Learner(model, Adam(model.parameters(), lr=0.02), nn.loss.cross_entropy,
                      folder=folder, num_classes=3,
                      renderer=PlainRenderer(stream=open(os.devnull, "w")))
    train = DataLoader(_data(96, 0), batch_size=16, shuffle=True, seed=seed)
    valid = DataLoader(_data(32, 1), batch_size=16)
    return model, learner, train, valid


def _untimed(record, timing):
    return {k: v for k, v in record.items() if k not in timing}


def _weights(model):
    return {k: v.numpy() for k, v in model.state_dict().items()}


def test_fit_async_equals_fit(tmp_path):
    model, learner, train, valid = _setup(tmp_path / "sync")
    expected = learner.fit(train, valid, epochs=3)
    model2, learner2, train2, valid2 = _setup(tmp_path / "async")
    got = asyncio.run(learner2.fit_async(train2, valid2, epochs=3))
    assert got.epochs_run == expected.epochs_run == 3
    timing = ("items_per_s", "cpu_percent", "memory_mib")  # the clock's, not the run's
    assert [_untimed(h, timing) for h in got.history] == \
        [_untimed(h, timing) for h in expected.history]
    assert got.best == expected.best
    want = _weights(model)
    for name, value in _weights(model2).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    # the run was a real one: the loss went down
    assert expected.history[-2]["loss"] < expected.history[0]["loss"]


def test_fit_async_yields_between_steps(tmp_path):
    """A task that counts while the fit runs gets control once per step (6 train + 2 valid
    batches per epoch), and the custom ``pause`` is awaited at each of them."""
    _, learner, train, valid = _setup(tmp_path)
    pauses = []

    async def pause():
        pauses.append(len(ticks))
        await asyncio.sleep(0)

    ticks = []

    async def ticker(done):
        while not done.is_set():
            ticks.append(1)
            await asyncio.sleep(0)

    async def main():
        done = asyncio.Event()
        counter = asyncio.create_task(ticker(done))
        result = await learner.fit_async(train, valid, epochs=2, pause=pause)
        done.set()
        await counter
        return result

    result = asyncio.run(main())
    assert result.epochs_run == 2
    assert len(pauses) == 2 * (6 + 2)
    assert pauses == sorted(pauses) and len(set(pauses)) == len(pauses)  # ticks in between


def test_request_stop_interrupts_like_ctrl_c(tmp_path):
    _, learner, train, valid = _setup(tmp_path)
    steps = []

    async def pause():
        steps.append(1)
        if len(steps) == 3:
            learner.request_stop()
        await asyncio.sleep(0)

    result = asyncio.run(learner.fit_async(train, valid, epochs=2, pause=pause))
    assert result.interrupted and result.epochs_run == 1
    assert (tmp_path / "checkpoints" / "interrupted.ckpt").exists()
    learner.request_stop()  # no fit running: nothing to stop, and no error


def test_fit_async_never_reads_synchronously(tmp_path, monkeypatch):
    # a browser without JSPI has no synchronous read of a WebGPU tensor: here no tensor of
    # the model's backend may be read synchronously, checkpoints included (the batches come
    # from the loader's host tensors)
    model, learner, train, valid = _setup(tmp_path / "run")
    originals = {name: getattr(ember.Tensor, name) for name in ("to_data", "tolist", "numpy",
                                                                "item")}

    def refusing(name):
        def read(self, *args, **kwargs):
            if self.backend is learner.backend:
                raise AssertionError(f"a synchronous {name}() inside fit_async")
            return originals[name](self, *args, **kwargs)
        return read

    async def to_data_async(self):
        return originals["to_data"](self)

    monkeypatch.setattr(ember.Tensor, "to_data_async", to_data_async)
    for name in originals:
        monkeypatch.setattr(ember.Tensor, name, refusing(name))
    result = asyncio.run(learner.fit_async(train, valid, epochs=2))
    monkeypatch.undo()
    assert result.epochs_run == 2
    saved = ember.load(learner.checkpoints / "epoch-2.ckpt")
    for name, value in model.state_dict().items():  # the checkpoint holds the trained weights
        np.testing.assert_array_equal(saved["model"][name].numpy(), value.numpy(), err_msg=name)
