"""The Learner: resume equals an uninterrupted run, Ctrl-C leaves a loadable checkpoint,
corrupt checkpoints fail clearly, early stopping, accumulation, logs, plots, dashboard."""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember import nn
from ember.dataset import DataLoader, InMemoryDataset
from ember.errors import RecordError
from ember.optim import SGD, Adam
from ember.optim.lr_scheduler import StepLR
from ember.train import Learner, PlainRenderer, load_checkpoint
from ember.train.metrics import F1, Accuracy, ConfusionMatrix, Loss, Precision, Recall, StepOutput


def _data(n=96, seed=0):
    r = random.Random(seed)
    items = []
    for _ in range(n):
        x = [r.uniform(-1, 1) for _ in range(4)]
        items.append((x, int(x[0] * x[1] > 0) + (x[2] > 0.5)))
    return InMemoryDataset(items)


def _setup(folder, seed=0, dropout=True, **learner_kwargs):
    ember.seed(seed)
    with ember.use_backend("autodiff-numpy"):
        layers = [nn.Linear(4, 16), nn.ReLU()]
        layers += [nn.Dropout(0.2)] if dropout else []
        model = nn.Sequential(*layers, nn.Linear(16, 3))
    opt = Adam(model.parameters(), lr=0.02)
    sched = StepLR(opt, step_size=2, gamma=0.5)
    train = DataLoader(_data(), batch_size=16, shuffle=True, seed=seed)
    valid = DataLoader(_data(32, seed=1), batch_size=32)
    learner = Learner(model, opt, nn.loss.cross_entropy, folder=folder, num_classes=3,
                      scheduler=sched, renderer=PlainRenderer(stream=open(os.devnull, "w")),
                      **learner_kwargs)
    return model, learner, train, valid


def _weights(model):
    return {k: v.numpy() for k, v in model.state_dict().items()}


def test_resume_equals_uninterrupted_run(tmp_path):
    model, learner, train, valid = _setup(tmp_path / "full")
    full = learner.fit(train, valid, epochs=4)
    expected = _weights(model)

    model2, learner2, train2, valid2 = _setup(tmp_path / "split")
    first = learner2.fit(train2, valid2, epochs=4, max_steps=9)  # stops inside epoch 2
    assert first.epochs_run == 2 and (tmp_path / "split/checkpoints/max-steps.ckpt").exists()
    # a fresh process would build everything again from scratch, with another seed even
    model3, learner3, train3, valid3 = _setup(tmp_path / "split", seed=123)
    resumed = learner3.fit(train3, valid3, epochs=4, resume=True)
    got = _weights(model3)
    assert resumed.epochs_run == 4
    for k in expected:
        np.testing.assert_array_equal(got[k], expected[k], err_msg=k)
    assert [h["loss"] for h in resumed.history] == pytest.approx([h["loss"] for h in full.history])
    records = [json.loads(line) for line in open(tmp_path / "split/metrics.jsonl")]
    assert [(r["epoch"], r["split"]) for r in records] == [
        (e, s) for e in range(1, 5) for s in ("train", "valid")
    ]


def test_resume_mid_accumulation_equals_uninterrupted_run(tmp_path):
    model, learner, train, valid = _setup(tmp_path / "full", accumulate=4)
    learner.fit(train, valid, epochs=3)
    expected = _weights(model)

    _, learner2, train2, valid2 = _setup(tmp_path / "split", accumulate=4)
    learner2.fit(train2, valid2, epochs=3, max_steps=9)  # epoch 2, batch 3 of 4 summed
    saved = load_checkpoint(tmp_path / "split/checkpoints/max-steps.ckpt")["accumulated"]
    assert saved["batches"] == 3 and saved["accumulate"] == 4
    assert sorted(saved["grads"]) == sorted(n for n, _ in learner2.model.named_parameters())
    model3, learner3, train3, valid3 = _setup(tmp_path / "split", seed=123, accumulate=4)
    learner3.fit(train3, valid3, epochs=3, resume=True)
    got = _weights(model3)
    for k in expected:
        np.testing.assert_array_equal(got[k], expected[k], err_msg=k)

    _, learner4, train4, valid4 = _setup(tmp_path / "split2", accumulate=4)
    learner4.fit(train4, valid4, epochs=3, max_steps=9)
    _, learner5, train5, valid5 = _setup(tmp_path / "split2", accumulate=2)
    with pytest.raises(RecordError, match="resume with accumulate=4"):
        learner5.fit(train5, valid5, epochs=3, resume=True)


def test_checkpoints_keep_last_and_best(tmp_path):
    _, learner, train, valid = _setup(tmp_path, keep_last=2, monitor="accuracy")
    result = learner.fit(train, valid, epochs=4)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["best.ckpt", "epoch-3.ckpt", "epoch-4.ckpt"]
    best_epoch = result.best["accuracy"][1]
    assert load_checkpoint(tmp_path / "checkpoints/best.ckpt")["epoch"] == best_epoch
    assert (tmp_path / "curves.png").stat().st_size > 1000
    assert (tmp_path / "metrics.csv").read_text().startswith("epoch,split,metric,value")


def test_corrupt_checkpoint_is_a_clear_error_and_model_unchanged(tmp_path):
    model, learner, train, valid = _setup(tmp_path)
    learner.fit(train, valid, epochs=1)
    ckpt = tmp_path / "checkpoints/epoch-1.ckpt"
    ckpt.write_bytes(ckpt.read_bytes()[:200])
    before = _weights(model)
    with pytest.raises(RecordError, match="truncated|corrupt"):
        learner.fit(train, valid, epochs=2, resume=True)
    after = _weights(model)
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_early_stopping(tmp_path):
    _, learner, train, valid = _setup(tmp_path, patience=1, monitor="loss")
    learner.scheduler = None
    learner.optimizer.param_groups[0]["lr"] = 0.0  # nothing improves after epoch 1
    result = learner.fit(train, valid, epochs=6)
    assert result.stopped_early and result.epochs_run == 2


def test_gradient_accumulation_matches_a_big_batch(tmp_path):
    def run(batch, accumulate):
        ember.seed(0)
        with ember.use_backend("autodiff-numpy"):
            model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = SGD(model.parameters(), lr=0.1)
        loader = DataLoader(_data(64), batch_size=batch)
        learner = Learner(model, opt, nn.loss.cross_entropy, folder=tmp_path / f"a{accumulate}",
                          num_classes=3, accumulate=accumulate, metrics=[Loss()],
                          renderer=PlainRenderer(stream=open(os.devnull, "w")))
        learner.fit(loader, epochs=1)
        return _weights(model)

    big, accumulated = run(32, 1), run(16, 2)
    for k in big:
        np.testing.assert_allclose(accumulated[k], big[k], rtol=1e-5, atol=1e-6)


def test_classification_metrics_against_a_reference():
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((50, 4))
    targets = rng.integers(0, 4, 50)
    step = StepOutput(loss=1.0, batch_size=50, predictions=scores.tolist(),
                      targets=targets.tolist())
    pred = scores.argmax(1)
    matrix = np.zeros((4, 4), int)
    np.add.at(matrix, (targets, pred), 1)
    tp = np.diag(matrix)
    precision = np.where(matrix.sum(0) > 0, tp / np.maximum(matrix.sum(0), 1), 0)
    recall = np.where(matrix.sum(1) > 0, tp / np.maximum(matrix.sum(1), 1), 0)
    both = precision + recall
    f1 = np.where(both > 0, 2 * precision * recall / np.maximum(both, 1e-12), 0)
    for metric, expected in [
        (Accuracy(), (pred == targets).mean()), (Precision(4), precision.mean()),
        (Recall(4), recall.mean()), (F1(4), f1.mean()),
    ]:
        metric.update(step)
        assert metric.compute() == pytest.approx(expected)
    confusion = ConfusionMatrix(4)
    confusion.update(step)
    assert confusion.compute() == matrix.tolist()


def test_dashboard_shows_progress_and_metrics(tmp_path):
    rich_console = pytest.importorskip("rich.console")
    from ember.train import DashboardRenderer

    console = rich_console.Console(record=True, width=120, force_terminal=True)
    _, learner, train, valid = _setup(tmp_path)
    learner.renderer = DashboardRenderer(console=console)
    learner.fit(train, valid, epochs=2)
    text = console.export_text()
    (tmp_path / "dashboard.txt").write_text(text)
    assert "epochs" in text and "2/2" in text
    for word in ("loss", "accuracy", "best (epoch)", "train", "valid"):
        assert word in text


SCRIPT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from test_train import _setup
    folder = sys.argv[1]
    model, learner, train, valid = _setup(folder)
    slow = learner.prepare
    def prepare(batch):
        time.sleep(0.05)  # slow steps so the signal lands mid-epoch
        return slow(batch)
    learner.prepare = prepare
    print("started", flush=True)
    result = learner.fit(train, valid, epochs=30, resume="--resume" in sys.argv)
    print("done", result.epochs_run, result.interrupted, flush=True)
""")


def test_sigint_leaves_a_loadable_checkpoint_and_resumes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(tests=os.path.dirname(__file__)))
    folder = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(script), str(folder)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "started"
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "done" in out and out.strip().endswith("True")
    state = load_checkpoint(folder / "checkpoints/interrupted.ckpt")
    assert state["step"] > 0 and "model" in state
    again = subprocess.run([sys.executable, str(script), str(folder), "--resume"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "done 30 False" in again.stdout
    assert not (folder / "checkpoints/interrupted.ckpt").exists()


def test_jitted_learner_trains_as_the_eager_one(tmp_path):
    """jit=True captures the step (Dropout and a per-epoch scheduler included) and the
    validation forward; weights and history match the eager run."""
    model, learner, train, valid = _setup(tmp_path / "eager", jit=False)
    eager = learner.fit(train, valid, epochs=4)
    expected = _weights(model)
    model2, learner2, train2, valid2 = _setup(tmp_path / "jit", jit=True)
    jitted = learner2.fit(train2, valid2, epochs=4)
    assert not learner.jit and learner2.jit
    assert learner2._train_step.stats()["replays"] > 0
    # one validation batch an epoch: eager, traced, then replayed (reading updated weights)
    assert learner2._forward.stats()["replays"] == 2
    got = _weights(model2)
    for k in expected:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert [h["loss"] for h in jitted.history] == pytest.approx(
        [h["loss"] for h in eager.history], rel=1e-5)


def test_learner_jits_by_default_only_where_it_pays(tmp_path):
    _, learner, _, _ = _setup(tmp_path)
    assert learner.jit is False  # numpy: the kernels dominate


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_read_per_step_gives_the_separate_reads(dtype):
    from ember.train.learner import _read_step

    rng = np.random.default_rng(0)
    out = ember.tensor(rng.standard_normal((3, 4)), dtype=dtype)
    y = ember.tensor([2, 0, 3])
    loss = (out * out).mean()
    got = _read_step(loss, out, y)
    assert got == (loss.item(), out.tolist(), [2, 0, 3])
    assert _read_step(loss, None, None) == (loss.item(), None, None)


class _Lines(PlainRenderer):
    """A PlainRenderer that keeps its lines."""

    def __init__(self):
        import io

        super().__init__(stream=io.StringIO())

    @property
    def text(self):
        return self.stream.getvalue()


def test_max_steps_is_reported_as_what_it_is(tmp_path):
    _, learner, train, valid = _setup(tmp_path)
    learner.renderer = _Lines()
    result = learner.fit(train, valid, epochs=4, max_steps=9)  # 6 steps an epoch: epoch 2
    assert result.max_steps_reached and not result.interrupted and result.epochs_run == 2
    assert sorted(p.name for p in learner.checkpoints.iterdir()) == \
        ["best.ckpt", "epoch-1.ckpt", "max-steps.ckpt"]
    assert "stopped: max_steps=9 steps done at epoch 2, step 3 of 6" in learner.renderer.text
    assert "interrupt" not in learner.renderer.text
    assert result.summary["max_steps_reached"] is True
    resumed = learner.fit(train, valid, epochs=4, resume=True)
    assert not resumed.max_steps_reached and resumed.epochs_run == 4
    assert not (learner.checkpoints / "max-steps.ckpt").exists()


def test_max_steps_at_an_epoch_end_takes_no_extra_step(tmp_path):
    _, learner, train, valid = _setup(tmp_path)
    learner.renderer = _Lines()
    result = learner.fit(train, valid, epochs=3, max_steps=12)  # exactly two epochs
    assert result.max_steps_reached and result.epochs_run == 2
    assert learner.optimizer.steps == 12
    assert "max_steps=12 steps done at the end of epoch 2" in learner.renderer.text
    # a budget that ends with the last epoch is a complete run
    _, learner, train, valid = _setup(tmp_path / "exact")
    assert not learner.fit(train, valid, epochs=2, max_steps=12).max_steps_reached


def test_logged_lr_is_the_one_the_steps_used(tmp_path):
    """A cosine schedule stepped per batch reaches 0 after the last step; the last epoch logs
    the rate its last step used, as PyTorch's scheduler gives it (not the annealed 0)."""
    torch = pytest.importorskip("torch")
    from ember.optim.lr_scheduler import CosineAnnealingLR

    epochs, steps = 3, 6
    ember.seed(0)
    with ember.use_backend("autodiff-numpy"):
        model = nn.Sequential(nn.Linear(4, 3))
    opt = SGD(model.parameters(), lr=2e-3)  # the MNIST demo's rate
    learner = Learner(model, opt, nn.loss.cross_entropy, folder=tmp_path, num_classes=3,
                      scheduler=CosineAnnealingLR(opt, T_max=epochs * steps),
                      scheduler_step="step", renderer=_Lines())
    result = learner.fit(DataLoader(_data(), batch_size=16), epochs=epochs)

    ref_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2e-3)
    ref = torch.optim.lr_scheduler.CosineAnnealingLR(ref_opt, T_max=epochs * steps)
    used = []
    for _ in range(epochs * steps):
        used.append(ref_opt.param_groups[0]["lr"])
        ref_opt.step()
        ref.step()
    assert ref_opt.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)  # annealed
    logged = [h["lr"] for h in result.history]
    assert logged == pytest.approx([used[steps - 1], used[2 * steps - 1], used[-1]], rel=1e-9)
    assert f"lr={logged[-1]:.2e}" in learner.renderer.text  # 1.52e-05, not 0.0000
    assert "lr=0.0000" not in learner.renderer.text
