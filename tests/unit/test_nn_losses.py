"""ember.nn losses against torch.nn.functional: values and input gradients (float64)."""

from __future__ import annotations

import ember
import numpy as np
import pytest
from _nn_ref import AD, to_ember, torch
from ember import nn
from ember.nn import loss as L

TF = torch.nn.functional
rng = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def check(t_fn, e_fn, inputs, grad_args=(0,), rtol=1e-7, atol=1e-10):
    """``inputs`` are numpy arrays (ints stay untracked); compare value and gradients."""
    t_in, e_in = [], []
    for i, a in enumerate(inputs):
        a = np.asarray(a)
        track = i in grad_args and a.dtype.kind == "f"
        t_in.append(torch.tensor(a, requires_grad=track))
        e = to_ember(a)
        e_in.append(e.require_grad() if track else e)
    t_out, e_out = t_fn(*t_in), e_fn(*e_in)
    np.testing.assert_allclose(e_out.numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol)
    seed = rng.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(seed)).sum().backward()
    grads = (e_out * to_ember(seed)).sum().backward()
    for t, e in zip(t_in, e_in):
        if t.requires_grad:
            np.testing.assert_allclose(grads.get(e).numpy(), t.grad.numpy(), rtol=rtol,
                                       atol=atol)


def logits(*shape):
    return rng.standard_normal(shape) * 2


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_indices(reduction, weighted, smoothing):
    x = logits(6, 4)
    y = np.array([0, 3, 1, -100, 2, 3])
    w = rng.uniform(0.5, 2, 4)
    kw = {"reduction": reduction, "label_smoothing": smoothing, "ignore_index": -100}
    check(lambda a, b: TF.cross_entropy(a, b, weight=torch.tensor(w) if weighted else None, **kw),
          lambda a, b: L.cross_entropy(a, b, weight=to_ember(w) if weighted else None, **kw),
          [x, y])


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_spatial_and_probabilities(smoothing):
    x, y = logits(2, 3, 4, 5), rng.integers(0, 3, (2, 4, 5))
    check(lambda a, b: TF.cross_entropy(a, b, label_smoothing=smoothing),
          lambda a, b: L.cross_entropy(a, b, label_smoothing=smoothing), [x, y])
    p = rng.uniform(size=(5, 3))
    p /= p.sum(1, keepdims=True)
    w = rng.uniform(0.5, 2, 3)
    for reduction in REDUCTIONS:
        check(lambda a, b, r=reduction: TF.cross_entropy(a, b, torch.tensor(w), reduction=r,
                                                         label_smoothing=smoothing),
              lambda a, b, r=reduction: L.cross_entropy(a, b, to_ember(w), reduction=r,
                                                        label_smoothing=smoothing),
              [logits(5, 3), p], grad_args=(0, 1))


def test_cross_entropy_unbatched_and_module():
    check(lambda a, b: TF.cross_entropy(a, b), lambda a, b: L.cross_entropy(a, b),
          [logits(4), np.array(2)])
    w = rng.uniform(0.5, 2, 3)
    mod = nn.CrossEntropyLoss(weight=to_ember(w, "numpy"), label_smoothing=0.1)
    mod.to(AD, dtype=ember.float64)
    check(lambda a, b: torch.nn.CrossEntropyLoss(torch.tensor(w), label_smoothing=0.1)(a, b),
          mod, [logits(4, 3), np.array([0, 2, 1, 1])])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    x = np.log(rng.uniform(0.05, 1, (5, 3)))
    y = np.array([2, 0, 1, 1, 0])
    w = rng.uniform(0.5, 2, 3)
    check(lambda a, b: TF.nll_loss(a, b, torch.tensor(w), ignore_index=1, reduction=reduction),
          lambda a, b: L.nll_loss(a, b, to_ember(w), ignore_index=1, reduction=reduction),
          [x, y])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p, t, w = rng.uniform(0.01, 0.99, (4, 3)), rng.uniform(size=(4, 3)), rng.uniform(size=3)
    check(lambda a, b: TF.binary_cross_entropy(a, b, torch.tensor(w), reduction=reduction),
          lambda a, b: L.binary_cross_entropy(a, b, to_ember(w), reduction=reduction), [p, t])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits(reduction, pos_weight):
    x, t = logits(4, 3) * 10, (rng.uniform(size=(4, 3)) > 0.5).astype(np.float64)
    pw = rng.uniform(0.5, 3, 3)
    check(lambda a, b: TF.binary_cross_entropy_with_logits(
              a, b, reduction=reduction, pos_weight=torch.tensor(pw) if pos_weight else None),
          lambda a, b: L.binary_cross_entropy_with_logits(
              a, b, reduction=reduction, pos_weight=to_ember(pw) if pos_weight else None),
          [x, t], grad_args=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}),
                                     ("huber_loss", {"delta": 0.7}),
                                     ("smooth_l1_loss", {"beta": 0.5}),
                                     ("smooth_l1_loss", {"beta": 0.0})])
def test_regression_losses(reduction, name, kw):
    x, t = logits(3, 4), logits(3, 4)
    check(lambda a, b: getattr(TF, name)(a, b, reduction=reduction, **kw),
          lambda a, b: getattr(L, name)(a, b, reduction=reduction, **kw), [x, t],
          grad_args=(0, 1))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np.log(rng.dirichlet(np.ones(4), 3))
    t = rng.dirichlet(np.ones(4), 3)
    t[0, 1] = 0.0
    if log_target:
        t = np.log(t + 1e-3)
    check(lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target),
          lambda a, b: L.kl_div(a, b, reduction=reduction, log_target=log_target), [x, t],
          grad_args=(0, 1) if log_target else (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(reduction):
    a, b, y = logits(5, 3), logits(5, 3), np.array([1, -1, 1, -1, -1])
    check(lambda p, q, r: TF.cosine_embedding_loss(p, q, r, margin=0.1, reduction=reduction),
          lambda p, q, r: L.cosine_embedding_loss(p, q, r, margin=0.1, reduction=reduction),
          [a, b, y], grad_args=(0, 1))


def test_module_forms():
    x, t = logits(3, 4), logits(3, 4)
    pairs = [(torch.nn.MSELoss(), nn.MSELoss()), (torch.nn.L1Loss(reduction="sum"),
                                                  nn.L1Loss(reduction="sum")),
             (torch.nn.HuberLoss(delta=0.5), nn.HuberLoss(delta=0.5)),
             (torch.nn.SmoothL1Loss(beta=2.0), nn.SmoothL1Loss(beta=2.0))]
    for tm, em in pairs:
        check(tm, em, [x, t])
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss(reduction='sum')"


def test_errors_name_the_op():
    with pytest.raises(ValueError, match="mse_loss.*shape"):
        L.mse_loss(ember.zeros(2, 3), ember.zeros(3, 2))
    with pytest.raises(ValueError, match="reduction"):
        L.l1_loss(ember.zeros(2), ember.zeros(2), reduction="avg")
    with pytest.raises(TypeError, match="class indices"):
        L.nll_loss(ember.zeros(2, 3), ember.zeros(2))
