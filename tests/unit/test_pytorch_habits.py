"""A PyTorch user's training loop runs as written, with PyTorch's numbers: ``x.to("cpu")``,
``TensorDataset`` + ``DataLoader``, ``F.cross_entropy``, ``optimizer.zero_grad();
loss.backward(); optimizer.step()``, ``for p in model.parameters(): if p.grad is not None``,
``nn.utils.clip_grad_norm_``. Gradients, clipped norms and weights are checked against
PyTorch CPU at every step on a small model; each PyTorch habit Ember lacks raises an error
that names the Ember way."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.dataset import DataLoader, TensorDataset
from ember.errors import DeviceError, EmberError
from ember.jit import JitError
from ember.nn import functional as F

torch = pytest.importorskip("torch")

AD = "autodiff-numpy"


def _models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    em = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em.to(AD)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((48, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)  # classes 0, 1, 2
    return x, y


def _close(e, t, what):
    np.testing.assert_allclose(e.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=what)


def test_pytorch_training_loop_matches_torch_and_learns():
    tm, model = _models()
    x, y = _data()
    topt = torch.optim.SGD(tm.parameters(), lr=0.5, momentum=0.9)
    optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    loader = DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=16)
    assert all(p.grad is None for p in model.parameters())  # nothing before backward
    epoch_losses, clipped = [], 0
    for _ in range(8):
        total = 0.0
        for i, (xb, yb) in enumerate(loader):
            xb, yb = xb.to("cpu"), yb.to("cpu")
            assert xb.backend.name == "numpy"  # "cpu" is the host backend the batch is on
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb.to(AD)), yb.to(AD))
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)

            topt.zero_grad()
            tloss = torch.nn.functional.cross_entropy(
                tm(torch.from_numpy(x[16 * i : 16 * i + 16])),
                torch.from_numpy(y[16 * i : 16 * i + 16]),
            )
            tloss.backward()
            tnorm = torch.nn.utils.clip_grad_norm_(tm.parameters(), max_norm=1.0)
            _close(loss, tloss, "loss")
            _close(norm, tnorm, "the norm clip_grad_norm_ returns")
            clipped += tnorm.item() > 1.0
            seen = 0
            for (name, p), tp in zip(model.named_parameters(), tm.parameters()):
                if p.grad is not None:
                    assert p.grad.backend is p.backend and not p.grad.is_require_grad()
                    _close(p.grad, tp.grad, f"{name}.grad after clipping")
                    seen += 1
            assert seen == 4
            optimizer.step()
            topt.step()
            total += loss.item()
        epoch_losses.append(total / len(loader))
    for (name, p), tp in zip(model.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-3, atol=1e-4,
                                   err_msg=name)
    assert clipped > 0  # the clip did scale some steps
    assert epoch_losses[-1] < 0.5 * epoch_losses[0], epoch_losses
    optimizer.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_grad_accumulates_until_cleared_and_survives_the_step():
    tm, model = _models()
    x, y = (torch.from_numpy(a) for a in _data())
    for _ in range(2):  # two backward calls, no zero_grad between: the sum
        torch.nn.functional.cross_entropy(tm(x), y).backward()
        F.cross_entropy(model(ember.tensor(x.numpy(), backend=AD)),
                        ember.tensor(y.numpy(), backend=AD)).backward()
    for p, tp in zip(model.parameters(), tm.parameters()):
        _close(p.grad, tp.grad, "accumulated grad")
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    before = [p.grad.numpy() for p in model.parameters()]
    optimizer.step()
    for p, g in zip(model.parameters(), before):  # PyTorch keeps .grad across step()
        np.testing.assert_array_equal(p.grad.numpy(), g)
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_burn_gradients_beside_the_attribute():
    """``grads = loss.backward()`` still returns the explicit gradients (on the inner backend),
    and ``opt.step(grads)`` consumes them, ``.grad`` included."""
    _, model = _models()
    x, y = (ember.tensor(a, backend=AD) for a in _data())
    grads = F.cross_entropy(model(x), y).backward()
    w = model[0].weight
    assert grads.get(w).backend.name == "numpy"
    np.testing.assert_array_equal(grads.get(w).numpy(), w.grad.numpy())
    optim.SGD(model.parameters(), lr=0.1).step(grads)
    assert all(p.grad is None for p in model.parameters())


def test_manual_sgd_update_in_place():
    tm, model = _models()
    x, y = _data()
    torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    F.cross_entropy(model(ember.tensor(x, backend=AD)), ember.tensor(y, backend=AD)).backward()
    with torch.no_grad():
        for tp in tm.parameters():
            tp -= 0.1 * tp.grad
    with ember.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    for p, tp in zip(model.parameters(), tm.parameters()):
        _close(p, tp, "p -= lr * p.grad")


def test_utils_vector_round_trip_and_clip_value():
    tm, model = _models()
    vec = nn.utils.parameters_to_vector(model.parameters())
    tvec = torch.nn.utils.parameters_to_vector(tm.parameters())
    _close(vec, tvec, "parameters_to_vector")
    nn.utils.vector_to_parameters(vec * 2, model.parameters())
    torch.nn.utils.vector_to_parameters(tvec * 2, tm.parameters())
    for p, tp in zip(model.parameters(), tm.parameters()):
        _close(p, tp, "vector_to_parameters")
    with pytest.raises(ember.ShapeError, match="the vector has 3 elements, the parameters 131"):
        nn.utils.vector_to_parameters(ember.zeros(3), model.parameters())
    x, y = _data()
    F.cross_entropy(model(ember.tensor(x, backend=AD)), ember.tensor(y, backend=AD)).backward()
    torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    nn.utils.clip_grad_value_(model.parameters(), 0.05)
    torch.nn.utils.clip_grad_value_(tm.parameters(), 0.05)
    for p, tp in zip(model.parameters(), tm.parameters()):
        _close(p.grad, tp.grad, "clip_grad_value_")


def test_losses_in_functional_are_the_loss_module_functions():
    for name in ("cross_entropy", "mse_loss", "nll_loss", "l1_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "kl_div",
                 "cosine_embedding_loss"):
        assert getattr(F, name) is getattr(nn.loss, name), name
        assert name in F.__all__


def test_to_device_strings_and_dtypes():
    x = ember.tensor([1.0, 2.0])
    assert x.to("cpu") is x and x.to("cpu:0") is x and x.to(device="cpu") is x
    assert x.to("cpu", ember.float16).dtype == ember.float16
    assert x.to("float64").dtype == ember.float64 and x.to(ember.int32).dtype == ember.int32
    assert x.to("python").to("cpu").backend.name == "python"  # already on the host: kept
    assert x.cpu() is x
    tracked = ember.tensor([1.0], backend=AD)
    assert tracked.to("cpu") is tracked
    model = nn.Linear(2, 1).to("cpu")
    assert model.weight.backend.name == "numpy"
    with pytest.raises(DeviceError, match=r"'tpu' is no device.*devices: cpu, cuda, gpu, webgpu"
                       r".*backends: .*numpy.*dtypes: .*float32"):
        x.to("tpu")
    with pytest.raises(DeviceError, match="'cuda:1' is no device"):
        x.to("cuda:1")
    with pytest.raises(DeviceError, match="Linear.to: 'mps' is no device"):
        nn.Linear(2, 1).to("mps")


def test_to_cuda_is_the_wgpu_backend():
    try:
        ember.get_backend("wgpu")
    except Exception as e:  # no wgpu-py or no adapter here
        pytest.skip(f"wgpu backend unavailable: {e}")
    x = ember.tensor([1.0, 2.0])
    for device in ("cuda", "gpu", "webgpu", "cuda:0"):
        assert x.to(device).backend.name == "wgpu"
    assert x.cuda().to("cuda").backend.name == "wgpu"
    assert x.cuda().to("cpu").tolist() == [1.0, 2.0]
    model = nn.Linear(2, 1).to(AD).to("cuda")  # gradients stay recorded on the GPU
    assert model.weight.backend.name == "autodiff-wgpu"
    model(ember.ones(1, 2, backend="autodiff-wgpu")).sum().backward()
    assert model.bias.grad.tolist() == [1.0]


def test_requires_grad_habits():
    w = ember.tensor([1.0, 2.0], backend=AD)
    assert w.requires_grad is False
    w.requires_grad = True
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]
    w.grad = None
    assert w.grad is None
    layer = nn.Linear(2, 1)
    assert layer.weight.requires_grad_(False).requires_grad is False
    with pytest.raises(EmberError, match="autodiff-numpy"):
        ember.tensor([1.0]).requires_grad_()


def test_unsupported_habits_name_the_ember_way():
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(AttributeError, match=r"no in-place add_\(\).*t = t.add\(...\)"):
        x.add_(1)
    with pytest.raises(AttributeError, match=r"zero_.*ember.zeros_like\(t\)"):
        x.zero_()
    with pytest.raises(AttributeError, match=r"'data'.*t.detach\(\)"):
        x.data  # noqa: B018
    with pytest.raises(AttributeError, match=r"retain_grad.*t.require_grad\(\)"):
        x.retain_grad()
    plain = nn.Linear(2, 1)  # on numpy: records nothing
    with pytest.raises(EmberError, match=r"records no gradients.*autodiff-numpy"):
        plain(ember.ones(1, 2)).sum().backward()
    _, model = _models()
    opt = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(EmberError, match=r"no parameter has a .grad; call loss.backward\(\)"):
        opt.step()
    F.cross_entropy(model(ember.ones(2, 4, backend=AD)), ember.tensor([0, 1], backend=AD)).backward()
    opt.zero_grad()
    with pytest.raises(EmberError, match=r"zero_grad\(\) before backward, not between"):
        opt.step()
    with pytest.raises(ember.ShapeError, match=r"grad: assigned a gradient of shape \(3,\)"):
        model[0].bias.grad = ember.zeros(3, backend=AD)


def test_jitted_pytorch_step_matches_eager_and_refuses_outside_gradients():
    x, y = (ember.tensor(a, backend=AD) for a in _data())

    def run(jitted: bool, zero_inside: bool = True):
        _, model = _models()
        opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)

        def step(xb, yb):
            if zero_inside:
                opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        fn = ember.jit(step) if jitted else step
        losses = [fn(x, y).item() for _ in range(5)]
        return losses, [p.numpy() for p in model.parameters()], model

    eager_losses, eager_weights, _ = run(False)
    jit_losses, jit_weights, model = run(True)
    np.testing.assert_allclose(jit_losses, eager_losses, rtol=1e-5)
    for a, b in zip(jit_weights, eager_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in model.parameters())  # a replay computes no .grad here
    with pytest.raises(JitError, match=r"\.grad holds gradients from outside.*zero_grad\(\)"):
        run(True, zero_inside=False)


def test_jitted_gradients_of_a_persistent_leaf_without_reading_grad():
    """A traced function that returns Burn's gradients of a leaf whose ``.grad`` holds earlier
    ones runs (it never reads ``.grad``); ``.grad`` is None after a replay, never stale."""
    w = ember.tensor([1.0, 2.0], backend=AD).require_grad()
    f = ember.jit(lambda x: (w * x).sum().backward().get(w))
    for k in range(1, 4):
        assert f(ember.tensor([float(k), 1.0], backend=AD)).tolist() == [float(k), 1.0]
    assert w.grad is None
