"""LR schedulers against PyTorch's lr trajectories (Noam against its formula)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from ember import nn, optim
from ember.optim import lr_scheduler as S

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler

LRS = (0.1, 0.03)  # two param groups with their own learning rates


def _ember_opt():
    a, b = nn.Linear(2, 2), nn.Linear(2, 1)
    return optim.SGD(
        [{"params": a.parameters(), "lr": LRS[0]}, {"params": b.parameters(), "lr": LRS[1]}], lr=1.0
    )


def _torch_opt():
    a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    return torch.optim.SGD(
        [{"params": a.parameters(), "lr": LRS[0]}, {"params": b.parameters(), "lr": LRS[1]}], lr=1.0
    )


def trajectory(opt, sched, steps: int) -> np.ndarray:
    out = []
    for _ in range(steps):
        out.append(list(sched.get_last_lr()) + [g["lr"] for g in opt.param_groups])
        sched.step()
    return np.array(out)


def torch_trajectory(make, steps):
    opt = _torch_opt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "step() before optimizer.step()"
        return trajectory(opt, make(opt, TS), steps)


def ember_trajectory(make, steps):
    opt = _ember_opt()
    return trajectory(opt, make(opt, S), steps)


def _sequential(o, m):
    return m.SequentialLR(
        o,
        [
            m.LinearLR(o, start_factor=0.1, total_iters=5),
            m.CosineAnnealingLR(o, T_max=20, eta_min=1e-3),
        ],
        milestones=[5],
    )


def _three_stage(o, m):
    return m.SequentialLR(
        o,
        [
            m.ConstantLR(o, factor=0.5, total_iters=10),
            m.ExponentialLR(o, gamma=0.9),
            m.CosineAnnealingWarmRestarts(o, T_0=4),
        ],
        milestones=[3, 12],
    )


CASES = {
    "constant": lambda o, m: m.ConstantLR(o, factor=0.25, total_iters=7),
    "constant-default": lambda o, m: m.ConstantLR(o),
    "lambda": lambda o, m: m.LambdaLR(o, lambda t: 1 / (1 + t)),
    "lambda-per-group": lambda o, m: m.LambdaLR(o, [lambda t: 0.9**t, lambda t: t % 3 + 1]),
    "step": lambda o, m: m.StepLR(o, step_size=7, gamma=0.5),
    "multistep": lambda o, m: m.MultiStepLR(o, milestones=[4, 9, 20], gamma=0.3),
    "exponential": lambda o, m: m.ExponentialLR(o, gamma=0.93),
    "linear-warmup": lambda o, m: m.LinearLR(o, start_factor=0.05, total_iters=10),
    "linear-decay": lambda o, m: m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=15),
    "cosine": lambda o, m: m.CosineAnnealingLR(o, T_max=12, eta_min=0.001),
    "cosine-restarts": lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=6, eta_min=0.01),
    "cosine-restarts-mult": lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "warmup-then-cosine": _sequential,
    "three-stage": _three_stage,
    "chained": lambda o, m: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=3), m.ExponentialLR(o, gamma=0.9)]
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    steps = 40
    want = torch_trajectory(CASES[name], steps)
    got = ember_trajectory(CASES[name], steps)
    assert np.ptp(want[:, 0]) > 0  # the schedule really changes the lr
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)


def test_warmup_cosine_helper_matches_torch_sequential():
    def theirs(o, m):
        return m.SequentialLR(
            o,
            [m.LinearLR(o, start_factor=1e-3, total_iters=8), m.CosineAnnealingLR(o, T_max=22)],
            milestones=[8],
        )

    want = torch_trajectory(theirs, 35)
    got = ember_trajectory(lambda o, m: S.warmup_cosine(o, warmup_steps=8, total_steps=30), 35)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("d_model,warmup", [(512, 4000), (64, 10)])
def test_noam_formula(d_model, warmup):
    opt = optim.Adam(nn.Linear(2, 1).parameters(), lr=2.0)
    sched = S.NoamLR(opt, d_model=d_model, warmup_steps=warmup)
    got = []
    for _ in range(3 * warmup):
        got.append(opt.param_groups[0]["lr"])
        sched.step()
    s = np.arange(1, 3 * warmup + 1, dtype=np.float64)
    want = 2.0 * d_model**-0.5 * np.minimum(s**-0.5, s * warmup**-1.5)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert int(np.argmax(got)) == warmup - 1  # peak at the end of warm-up


@pytest.mark.parametrize(
    "name",
    ["cosine", "cosine-restarts-mult", "warmup-then-cosine", "three-stage", "multistep", "lambda"],
)
def test_state_dict_resume(name):
    make = CASES[name]
    full = ember_trajectory(make, 30)
    opt = _ember_opt()
    sched = make(opt, S)
    first = trajectory(opt, sched, 13)
    state = sched.state_dict()
    opt_state = opt.state_dict()
    opt2 = _ember_opt()
    sched2 = make(opt2, S)
    sched2.load_state_dict(state)
    opt2.load_state_dict(opt_state)
    rest = trajectory(opt2, sched2, 17)
    np.testing.assert_allclose(np.vstack([first, rest]), full, rtol=1e-12)


def test_resume_with_last_epoch():
    opt = _ember_opt()
    S.StepLR(opt, step_size=3)  # sets initial_lr
    resumed = S.StepLR(opt, step_size=3, last_epoch=6)  # constructor steps to epoch 7
    assert resumed.get_last_lr() == pytest.approx([LRS[0] * 0.01, LRS[1] * 0.01])
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_ember_opt(), step_size=3, last_epoch=4)


def test_bad_arguments():
    opt = _ember_opt()
    with pytest.raises(ValueError, match="T_max"):
        S.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(ValueError, match="milestones"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[])
    with pytest.raises(ValueError, match="one per param group"):
        S.LambdaLR(opt, [lambda t: 1.0])
    with pytest.raises(ValueError, match="warmup_steps < total_steps"):
        S.warmup_cosine(opt, 10, 5)
    with pytest.raises(TypeError, match="Optimizer"):
        S.StepLR(object(), 2)
    other = _ember_opt()
    with pytest.raises(ValueError, match="different optimizer"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(other, 2)], milestones=[3])


def test_scheduler_drives_training_lr():
    opt = _ember_opt()
    sched = S.CosineAnnealingLR(opt, T_max=4)
    for _ in range(2):
        sched.step()
    assert opt.lr == pytest.approx(LRS[0] * (1 + math.cos(math.pi / 2)) / 2)
