"""The Module system, Parameter/optimizer contract, initialisers and configs."""

from __future__ import annotations

import math

import ember
import numpy as np
import pytest
from _nn_ref import AD, to_ember, torch
from ember import nn
from ember.errors import EmberError, ShapeError
from ember.nn import init
from ember.nn.config import (
    Config,
    LinearConfig,
    TransformerEncoderConfig,
    TransformerEncoderLayerConfig,
)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4), nn.Linear(4, 3)]  # a plain list becomes a ModuleList
        self.heads = {"a": nn.Linear(3, 2), "b": nn.Linear(3, 1)}
        self.scale = nn.Parameter(ember.ones(1))
        self.register_buffer("steps", ember.zeros(1))
        self.register_buffer("cache", ember.zeros(2), persistent=False)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).relu()
        return self.heads["a"](x) * self.scale


def test_discovery_and_names():
    m = Block()
    assert isinstance(m.layers, nn.ModuleList) and isinstance(m.heads, nn.ModuleDict)
    names = [n for n, _ in m.named_parameters()]
    # own parameters first, then children's (torch's order)
    assert names == ["scale", "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                     "heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert list(m.state_dict()) == ["scale", "steps"] + names[1:]
    assert "cache" not in m.state_dict()
    assert m.num_params() == 20 + 15 + 8 + 4 + 1
    assert [n for n, _ in m.named_modules()] == ["", "layers", "layers.0", "layers.1", "heads",
                                                "heads.a", "heads.b"]
    assert len(list(m.children())) == 2
    assert m(ember.zeros(2, 4)).shape == (2, 2)


def test_shared_parameter_counted_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2


def test_train_eval_propagate():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())


def test_assigning_tensor_to_parameter_raises():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="assign"):
        lin.weight = ember.zeros(2, 2)
    with pytest.raises(ShapeError):
        lin.weight.assign(ember.zeros(3, 2))


def test_optimizer_contract_sgd_on_autodiff():
    """What an optimizer does: grads.get(p) on the inner backend, p.assign(new)."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    em = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    em.load_state_dict({k: to_ember(v, "numpy") for k, v in tm.state_dict().items()})
    em.to(AD)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((8, 1)).astype(np.float32)
    opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.mse_loss(tm(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step()
        loss = nn.loss.mse_loss(em(to_ember(x)), to_ember(y))
        grads = loss.backward()
        for p in em.parameters():
            g = grads.get(p)
            assert g.backend.name == "numpy"
            p.assign(p.inner() - 0.1 * g)
            assert p.is_require_grad() and p.backend.name == AD
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(dict(em.named_parameters())[name].numpy(),
                                   p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_freeze_unfreeze():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)).to(AD)
    m[0].freeze()
    assert [n for n, _ in m.named_parameters()] == ["1.weight", "1.bias"]
    assert not m[0].weight.is_require_grad()
    assert m.num_params() == 13 and m.num_params(trainable_only=True) == 4
    grads = m(ember.ones(1, 2, backend=AD)).sum().backward()
    assert grads.get(m[0].weight) is None
    assert grads.get(m[1].weight) is not None
    m.unfreeze()
    assert len(list(m.parameters())) == 4 and m[0].weight.is_require_grad()
    m.requires_grad_(False)
    assert list(m.parameters()) == []
    assert "0.weight" in m.state_dict()


def test_to_moves_parameters_and_buffers():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    m.to("python", dtype=ember.float64)
    for t in list(m.parameters()) + list(m.buffers()):
        assert t.backend.name == "python"
    assert m[0].weight.dtype == ember.float64 and m[1].running_mean.dtype == ember.float64
    assert m[1].num_batches_tracked.dtype == ember.int64
    out = m(ember.ones(3, 2, backend="python", dtype=ember.float64))
    assert out.backend.name == "python"
    m.to(AD)
    assert m[0].weight.is_require_grad()


def test_state_dict_round_trip_into_torch():
    em = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))
    em(ember.ones(2, 1, 4, 4))  # moves the running stats
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                             torch.nn.Flatten(), torch.nn.Linear(8, 3))
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    tm.eval(), em.eval()
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(em(ember.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_load_state_dict_strict():
    m = nn.Linear(2, 2)
    state = m.state_dict()
    with pytest.raises(EmberError, match="missing keys"):
        m.load_state_dict({"weight": state["weight"]})
    with pytest.raises(EmberError, match="unexpected"):
        m.load_state_dict({**state, "extra": ember.zeros(1)})
    missing, unexpected = m.load_state_dict({"weight": ember.zeros(2, 2), "x": ember.ones(1)},
                                            strict=False)
    assert missing == ["bias"] and unexpected == ["x"]
    assert m.weight.numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(ShapeError, match="weight"):
        m.load_state_dict({"weight": ember.zeros(3, 2), "bias": ember.zeros(2)})


def test_forward_hooks_apply_and_call():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seen = []
    handle = m[0].register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    m(ember.zeros(4, 2))
    handle.remove()
    m(ember.zeros(4, 2))
    assert seen == [(4, 3)]
    order = []
    m.apply(lambda mod: order.append(type(mod).__name__))
    assert order == ["Linear", "ReLU", "Sequential"]
    m.apply(lambda mod: init.zeros_(mod.weight) if isinstance(mod, nn.Linear) else None)
    assert m[0].weight.numpy().sum() == 0


def test_repr_matches_torch():
    em = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                       nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 10), nn.Dropout(0.2))
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                             torch.nn.Linear(16, 10), torch.nn.Dropout(0.2))
    assert repr(em) == repr(tm)


def test_summary():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))
    text = m.summary((5, 1, 4, 4))
    assert "0 (Conv2d)" in text and "(5, 2, 2, 2)" in text and "(5, 3)" in text
    assert "Total params: 47" in text
    assert "3 (Linear)" in m.summary()


def test_clone_is_independent():
    from ember.nn.module import clone_module

    a = nn.Linear(2, 2)
    b = clone_module(a)
    init.zeros_(b.weight)
    assert a.weight.numpy().any() and not b.weight.numpy().any()
    assert b.weight.backend is a.weight.backend


@pytest.mark.parametrize("backend", ["numpy", "wgpu", AD])
def test_deepcopy_runs_on_the_same_backend_and_is_independent(backend):
    # copy.deepcopy of a model (an EMA or teacher copy, as PyTorch users make them): the
    # copy's tensors keep the original's backend object, so the two mix with no backend
    # mismatch; its parameters are new, and weights tied in the original stay tied
    import copy

    from ember.backends import available

    if backend not in available():
        pytest.skip(f"{backend} is not available here")
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3),
                      nn.Linear(3, 3)).to(backend)
    tied = nn.Sequential(m, nn.Linear(3, 3).to(backend))
    tied[1].weight = m[4].weight
    c = copy.deepcopy(tied)
    x = ember.randn(2, 1, 6, 6, backend=backend)
    np.testing.assert_array_equal(c(x).numpy(), tied(x).numpy())
    assert c[0][0].weight.backend is m[0].weight.backend
    assert isinstance(c[0][3].weight, nn.Parameter) and c[0][3].weight.requires_grad
    assert c[1].weight is c[0][4].weight and c[1].weight is not m[4].weight
    assert float((c(x) - tied(x)).abs().sum()) == 0.0  # the two mix in one expression
    c[0][3].weight.assign(c[0][3].weight * 0)
    assert not np.array_equal(c(x).numpy(), tied(x).numpy())


def test_python_backend_forward():
    em = nn.Sequential(nn.Linear(3, 2), nn.Sigmoid()).to("python")
    x = [[0.5, -1.0, 2.0]]
    w, b = em[0].weight.numpy(), em[0].bias.numpy()
    expected = 1 / (1 + np.exp(-(np.array(x) @ w.T + b)))
    np.testing.assert_allclose(em(ember.tensor(x, backend="python")).numpy(), expected,
                               rtol=1e-5)


# ---------------------------------------------------------------------------- init
@pytest.mark.parametrize("name,param", [("linear", None), ("tanh", None), ("relu", None),
                                        ("leaky_relu", 0.2), ("selu", None), ("sigmoid", None)])
def test_calculate_gain(name, param):
    assert math.isclose(init.calculate_gain(name, param),
                        torch.nn.init.calculate_gain(name, param), rel_tol=1e-12)


def test_default_linear_init_bounds():
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)  # kaiming_uniform(a=sqrt(5)) gives the same bound
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound


@pytest.mark.parametrize("fn,expected_std", [
    (lambda t, g: init.kaiming_normal_(t, mode="fan_in", nonlinearity="relu", generator=g),
     math.sqrt(2 / 200)),
    (lambda t, g: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu", generator=g),
     math.sqrt(2 / 300)),
    (lambda t, g: init.xavier_normal_(t, generator=g), math.sqrt(2 / 500)),
    (lambda t, g: init.xavier_uniform_(t, gain=2.0, generator=g), 2 * math.sqrt(2 / 500)),
    (lambda t, g: init.normal_(t, 1.0, 0.5, generator=g), 0.5),
    (lambda t, g: init.uniform_(t, -3, 3, generator=g), math.sqrt(3)),
])
def test_init_statistics(fn, expected_std):
    p = nn.Parameter(ember.zeros(300, 200))
    fn(p, ember.Generator(7))
    assert abs(p.numpy().std() - expected_std) < 0.03 * expected_std


def test_init_seeded_and_constant():
    a = init.normal_(nn.Parameter(ember.zeros(4, 4)), generator=ember.Generator(3)).numpy()
    b = init.normal_(nn.Parameter(ember.zeros(4, 4)), generator=ember.Generator(3)).numpy()
    assert (a == b).all()
    ember.seed(5)
    c = nn.Linear(3, 3).weight.numpy()
    ember.seed(5)
    assert (nn.Linear(3, 3).weight.numpy() == c).all()
    assert (init.constant_(nn.Parameter(ember.zeros(2)), 0.3).numpy() == np.float32(0.3)).all()
    plain = init.ones_(ember.zeros(2, 2))  # a plain tensor gets a new filled one back
    assert plain.numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal(shape):
    p = nn.Parameter(ember.zeros(*shape, dtype=ember.float64))
    init.orthogonal_(p, gain=2.0)
    w = p.numpy().reshape(shape[0], -1)
    small = w @ w.T if shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-10)


# ---------------------------------------------------------------------------- config
def test_config_json_round_trip(tmp_path):
    cfg = LinearConfig(784, 128, bias=False)
    assert Config.from_json(cfg.to_json()) == cfg
    path = tmp_path / "cfg.json"
    cfg.to_json(path)
    assert LinearConfig.from_json(path) == cfg
    lin = cfg.init(backend="python", dtype=ember.float64)
    assert lin.weight.shape == (128, 784) and lin.bias is None
    assert lin.weight.backend.name == "python" and lin.weight.dtype == ember.float64


def test_nested_config_round_trip():
    cfg = TransformerEncoderConfig(TransformerEncoderLayerConfig(8, 2, dim_feedforward=16), 2,
                                   final_norm=True)
    back = Config.from_json(cfg.to_json())
    assert back == cfg
    enc = back.init()
    assert len(enc.layers) == 2 and enc.norm is not None
    assert enc(ember.zeros(1, 3, 8)).shape == (1, 3, 8)


def test_config_rejects_unknown_fields():
    with pytest.raises(ValueError, match="unknown fields"):
        Config.from_dict({"type": "LinearConfig", "d_in": 1, "d_out": 2, "bogus": 1})
