"""Optimizers against PyTorch's trajectories on the same model, weights and data."""

from __future__ import annotations

import ember
import numpy as np
import pytest
from ember import nn, optim

torch = pytest.importorskip("torch")

AD = "autodiff-numpy"
F64 = ember.float64


def _weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=(6, 4)) * 0.5,
        rng.normal(size=6) * 0.1,
        rng.normal(size=(3, 6)) * 0.5,
        rng.normal(size=3) * 0.1,
    ]


def _data(scale: float = 1.0):
    rng = np.random.default_rng(1)
    return rng.normal(size=(8, 4)), rng.normal(size=(8, 3)) * scale


def ember_model(backend: str = AD) -> nn.Module:
    model = nn.Sequential(
        nn.Linear(4, 6, dtype=F64, backend=backend),
        nn.Tanh(),
        nn.Linear(6, 3, dtype=F64, backend=backend),
    )
    for p, w in zip(model.parameters(), _weights()):
        p.assign(ember.tensor(w, backend=backend))
    return model


def torch_model() -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    model = model.double()
    with torch.no_grad():
        for p, w in zip(model.parameters(), _weights()):
            p.copy_(torch.from_numpy(w))
    return model


def ember_groups(model, spec):
    if spec is None:
        return model.parameters()
    first, last = model[0], model[2]
    return [{"params": first.parameters(), **spec[0]}, {"params": last.parameters(), **spec[1]}]


def torch_groups(model, spec):
    if spec is None:
        return model.parameters()
    return [
        {"params": model[0].parameters(), **spec[0]},
        {"params": model[2].parameters(), **spec[1]},
    ]


def run_ember(make_opt, steps=25, scale=1.0, groups=None, fused=True, **clip):
    model = ember_model()
    opt = make_opt(ember_groups(model, groups), **clip)
    opt.fused = fused  # False: the portable Tensor-level update() even on numpy
    x, y = _data(scale)
    x, y = ember.tensor(x, backend=AD), ember.tensor(y, backend=AD)
    trajectory = []
    for _ in range(steps):
        loss = ((model(x) - y) ** 2).mean()
        opt.step(loss.backward())
        trajectory.append(np.concatenate([p.numpy().ravel() for p in model.parameters()]))
    return np.array(trajectory)


def run_torch(
    make_opt, steps=25, scale=1.0, groups=None, clip_norm=None, clip_value=None, update=None
):
    model = torch_model()
    opt = make_opt(torch_groups(model, groups)) if make_opt else None
    x, y = (torch.from_numpy(a) for a in _data(scale))
    trajectory = []
    for _ in range(steps):
        model.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        if clip_value is not None:
            torch.nn.utils.clip_grad_value_(model.parameters(), clip_value)
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        if opt is not None:
            opt.step()
        else:
            update(list(model.parameters()))
        trajectory.append(np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]))
    return np.array(trajectory)


CASES = [
    ("sgd", optim.SGD, torch.optim.SGD, {"lr": 0.1}),
    ("sgd-momentum", optim.SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9}),
    (
        "sgd-dampening-wd",
        optim.SGD,
        torch.optim.SGD,
        {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01},
    ),
    (
        "sgd-nesterov-wd",
        optim.SGD,
        torch.optim.SGD,
        {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-2},
    ),
    ("sgd-maximize", optim.SGD, torch.optim.SGD, {"lr": 0.01, "momentum": 0.5, "maximize": True}),
    ("adam", optim.Adam, torch.optim.Adam, {"lr": 0.01}),
    (
        "adam-wd-betas",
        optim.Adam,
        torch.optim.Adam,
        {"lr": 0.02, "betas": (0.8, 0.95), "eps": 1e-6, "weight_decay": 0.1},
    ),
    ("adam-amsgrad", optim.Adam, torch.optim.Adam, {"lr": 0.05, "amsgrad": True}),
    ("adamw", optim.AdamW, torch.optim.AdamW, {"lr": 0.01}),
    (
        "adamw-wd-amsgrad",
        optim.AdamW,
        torch.optim.AdamW,
        {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True},
    ),
    ("rmsprop", optim.RMSProp, torch.optim.RMSprop, {"lr": 0.01}),
    (
        "rmsprop-centered-momentum-wd",
        optim.RMSProp,
        torch.optim.RMSprop,
        {"lr": 0.005, "alpha": 0.9, "centered": True, "momentum": 0.8, "weight_decay": 0.01},
    ),
    ("adagrad", optim.AdaGrad, torch.optim.Adagrad, {"lr": 0.1}),
    (
        "adagrad-decay-init-wd",
        optim.Adagrad,
        torch.optim.Adagrad,
        {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.1, "weight_decay": 0.02},
    ),
]


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "portable"])
@pytest.mark.parametrize("name,ours,theirs,kw", CASES, ids=[c[0] for c in CASES])
def test_matches_torch_trajectory(name, ours, theirs, kw, fused):
    got = run_ember(lambda p: ours(p, **kw), fused=fused)
    want = run_torch(lambda p: theirs(p, **kw))
    assert np.abs(want[-1] - want[0]).max() > 1e-3  # the parameters really moved
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize(
    "name,ours,theirs,kw",
    [CASES[2], CASES[6], CASES[11], CASES[13]],
    ids=["sgd", "adam", "rmsprop", "adagrad"],
)
def test_param_groups_match_torch(name, ours, theirs, kw):
    spec = ({"lr": kw["lr"] * 3}, {"lr": kw["lr"] / 2, "weight_decay": 0.05})
    got = run_ember(lambda p: ours(p, **kw), groups=spec)
    want = run_torch(lambda p: theirs(p, **kw), groups=spec)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
    # the groups really differ from one shared setting
    plain = run_torch(lambda p: theirs(p, **kw))
    assert np.abs(plain - want).max() > 1e-4


def test_clip_grad_norm_matches_torch():
    got = run_ember(
        lambda p, **c: optim.SGD(p, lr=0.1, momentum=0.9, **c), scale=20.0, grad_clip_norm=0.5
    )
    want = run_torch(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), scale=20.0, clip_norm=0.5)
    unclipped = run_torch(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), scale=20.0)
    assert np.abs(unclipped - want).max() > 1e-2  # clipping was active
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_clip_grad_value_matches_torch():
    got = run_ember(lambda p, **c: optim.Adam(p, lr=0.01, **c), scale=20.0, grad_clip_value=0.3)
    want = run_torch(lambda p: torch.optim.Adam(p, lr=0.01), scale=20.0, clip_value=0.3)
    # SGD would show clipping better than Adam (scale-invariant); check with SGD as well.
    got_sgd = run_ember(lambda p, **c: optim.SGD(p, lr=0.1, **c), scale=20.0, grad_clip_value=0.3)
    want_sgd = run_torch(lambda p: torch.optim.SGD(p, lr=0.1), scale=20.0, clip_value=0.3)
    unclipped = run_torch(lambda p: torch.optim.SGD(p, lr=0.1), scale=20.0)
    assert np.abs(unclipped - want_sgd).max() > 1e-2
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(got_sgd, want_sgd, rtol=1e-9, atol=1e-11)


def test_clip_functions_alone():
    g = [ember.tensor([3.0, 4.0], dtype=F64), ember.tensor([[12.0]], dtype=F64)]
    clipped = optim.clip_grad_norm(g, 1.0)
    scale = 1.0 / (13.0 + 1e-6)
    np.testing.assert_allclose(clipped[0].numpy(), [3 * scale, 4 * scale], rtol=1e-12)
    assert optim.clip_grad_norm(g, 100.0)[1].tolist() == [[12.0]]
    inf = optim.clip_grad_norm(g, 6.0, norm_type=float("inf"))
    np.testing.assert_allclose(inf[1].numpy(), [[6.0 * 12 / (12 + 1e-6)]], rtol=1e-12)
    assert optim.clip_grad_value(g, 3.5)[0].tolist() == [3.0, 3.5]


def _torch_lion(lr, betas, wd):
    state: dict[int, torch.Tensor] = {}

    def update(params):
        # Lion (Chen et al. 2023, Algorithm 2), applied to PyTorch's gradients.
        with torch.no_grad():
            for i, p in enumerate(params):
                m = state.get(i, torch.zeros_like(p))
                direction = torch.sign(betas[0] * m + (1 - betas[0]) * p.grad)
                p.mul_(1 - lr * wd).add_(direction, alpha=-lr)
                state[i] = betas[1] * m + (1 - betas[1]) * p.grad

    return update


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_lion_matches_reference(wd):
    got = run_ember(lambda p: optim.Lion(p, lr=3e-3, betas=(0.9, 0.99), weight_decay=wd))
    want = run_torch(None, update=_torch_lion(3e-3, (0.9, 0.99), wd))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_float32_model_keeps_dtype_and_tracks_torch():
    model = nn.Linear(4, 3, backend=AD)
    tmodel = torch.nn.Linear(4, 3)
    with torch.no_grad():
        tmodel.weight.copy_(torch.from_numpy(model.weight.numpy()))
        tmodel.bias.copy_(torch.from_numpy(model.bias.numpy()))
    opt, topt = (
        optim.AdamW(model.parameters(), lr=0.01),
        torch.optim.AdamW(tmodel.parameters(), lr=0.01),
    )
    x = np.random.default_rng(3).normal(size=(5, 4)).astype(np.float32)
    for _ in range(20):
        opt.step((model(ember.tensor(x, backend=AD)) ** 2).sum().backward())
        topt.zero_grad()
        (tmodel(torch.from_numpy(x)) ** 2).sum().backward()
        topt.step()
    assert model.weight.dtype == ember.float32
    np.testing.assert_allclose(
        model.weight.numpy(), tmodel.weight.detach().numpy(), rtol=1e-4, atol=1e-5
    )


def test_unused_and_frozen_parameters_stay_put():
    a, b = nn.Linear(2, 2, backend=AD), nn.Linear(2, 2, backend=AD)
    b.freeze()
    before_a, before_b = a.weight.tolist(), b.weight.tolist()
    unused = nn.Linear(2, 2, backend=AD)
    before_unused = unused.weight.tolist()
    opt = optim.SGD(list(a.parameters()) + list(unused.parameters()), lr=0.5)
    x = ember.tensor([[1.0, -1.0]], backend=AD)
    opt.step(b(a(x)).sum().backward())
    assert a.weight.tolist() != before_a
    assert b.weight.tolist() == before_b
    assert unused.weight.tolist() == before_unused


def test_lr_change_takes_effect():
    model = ember_model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    opt.param_groups[0]["lr"] = 0.0
    before = model[0].weight.tolist()
    x = ember.tensor(_data()[0], backend=AD)
    opt.step(model(x).sum().backward())
    assert model[0].weight.tolist() == before
    assert opt.lr == 0.0


def test_add_param_group_and_repr():
    model = ember_model()
    opt = optim.Adam(model[0].parameters(), lr=0.1)
    opt.add_param_group({"params": model[2].parameters(), "lr": 0.5})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    assert "group 1: 2 params" in repr(opt)
    with pytest.raises(ValueError, match="more than one group"):
        opt.add_param_group({"params": model[2].parameters()})


def test_bad_arguments():
    model = ember_model()
    with pytest.raises(TypeError, match=r"unknown options \['momentun'\]"):
        optim.SGD(model.parameters(), lr=0.1, momentun=0.9)
    with pytest.raises(ValueError, match="no parameters"):
        optim.Adam([], lr=0.1)
    with pytest.raises(ValueError, match="invalid learning rate"):
        optim.Adam(model.parameters(), lr=-1.0)
    with pytest.raises(TypeError, match="nn.Parameter"):
        optim.SGD([ember.zeros(2)], lr=0.1)
    with pytest.raises(ember.EmberError, match=r"no parameter has a .grad; call loss.backward\(\)"):
        optim.SGD(model.parameters(), lr=0.1).step()
    with pytest.raises(TypeError, match=r"expected the Gradients from loss.backward\(\)"):
        optim.SGD(model.parameters(), lr=0.1).step([])


@pytest.mark.parametrize(
    "make",
    [lambda p: optim.Adam(p, lr=0.02, amsgrad=True), lambda p: optim.SGD(p, lr=0.05, momentum=0.9)],
    ids=["adam", "sgd"],
)
def test_state_dict_resume_matches_uninterrupted_run(make):
    full = run_ember(make, steps=20)
    model = ember_model()
    opt = make(model.parameters())
    x, y = (ember.tensor(a, backend=AD) for a in _data())
    for _ in range(10):
        opt.step(((model(x) - y) ** 2).mean().backward())
    saved, weights = opt.state_dict(), model.state_dict()
    weights = {k: ember.tensor(v.numpy().copy(), backend=AD) for k, v in weights.items()}
    frozen = {k: v.numpy().copy() for k, v in saved["state"][0].items() if hasattr(v, "numpy")}
    opt.step(((model(x) - y) ** 2).mean().backward())  # must not move the snapshot
    for k, v in frozen.items():
        np.testing.assert_array_equal(saved["state"][0][k].numpy(), v)
    model2 = ember_model()
    model2.load_state_dict(weights)
    opt2 = make(model2.parameters())
    opt2.load_state_dict(saved)
    for _ in range(10):
        opt2.step(((model2(x) - y) ** 2).mean().backward())
    last = np.concatenate([p.numpy().ravel() for p in model2.parameters()])
    np.testing.assert_allclose(last, full[-1], rtol=1e-12, atol=1e-14)


def test_load_state_dict_rejects_other_layout():
    model = ember_model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    other = optim.SGD(model[0].parameters(), lr=0.1)
    with pytest.raises(ember.EmberError, match=r"\[2\] parameters per group.*\[4\]"):
        opt.load_state_dict(other.state_dict())


def test_adam_amsgrad_state_names():
    model = ember_model()
    opt = optim.Adam(model.parameters(), lr=0.02, amsgrad=True)
    opt.step(model(ember.tensor(_data()[0], backend=AD)).sum().backward())
    assert sorted(opt.state_dict()["state"][0]) == [
        "exp_avg",
        "exp_avg_sq",
        "max_exp_avg_sq",
        "step",
    ]
