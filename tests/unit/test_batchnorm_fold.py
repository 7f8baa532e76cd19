"""The one BatchNorm fold: the arithmetic (``ember.contract.batchnorm_fold``) against the
norm written out in numpy float64, and ``ember.nn.utils.fold_batchnorms`` against PyTorch's
eval-mode Conv2d/Linear + BatchNorm."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.contract.batchnorm_fold import batchnorm_affine, fold_affine_into
from ember.errors import ShapeError

RNG = np.random.default_rng(0)


def _stats(c):
    return (RNG.normal(size=c), RNG.uniform(0.1, 3.0, size=c), RNG.normal(size=c),
            RNG.normal(size=c))


@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_affine_is_the_inference_norm(affine):
    mean, var, gamma, beta = _stats(5)
    if not affine:
        gamma, beta = np.ones(5), np.zeros(5)
    y = RNG.normal(size=(7, 5))
    want = (y - mean) / np.sqrt(var + 1e-3) * gamma + beta
    scale, shift = batchnorm_affine(mean, var, 1e-3, *((gamma, beta) if affine else ()))
    assert scale.dtype == shift.dtype == np.float64
    np.testing.assert_allclose(y * scale + shift, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("with_bias", [True, False])
def test_folded_linear_is_the_linear_then_the_affine(with_bias):
    w, x = RNG.normal(size=(4, 3)), RNG.normal(size=(6, 3))
    b = RNG.normal(size=4) if with_bias else None
    scale, shift = RNG.normal(size=4), RNG.normal(size=4)
    want = (x @ w.T + (b if with_bias else 0.0)) * scale + shift
    w2, b2 = fold_affine_into(w.astype(np.float32), b, scale, shift)
    assert w2.dtype == b2.dtype == np.float64
    np.testing.assert_allclose(x @ w2.T + b2, want, rtol=1e-6, atol=1e-6)


def test_vectors_of_the_wrong_length_are_refused_by_name():
    with pytest.raises(ShapeError, match="running var has shape \\(2,\\); expected a vector "
                                         "of 3"):
        batchnorm_affine(np.zeros(3), np.ones(2), 1e-5)
    with pytest.raises(ShapeError, match="scale has shape \\(3,\\); expected a vector of 4"):
        fold_affine_into(np.ones((4, 2)), None, np.ones(3), np.zeros(3))


def _torch_pair(torch, kind, bias, bn_affine):
    """A PyTorch layer + BatchNorm (random running statistics, eval) and ember's copy."""
    torch.manual_seed(0)
    if kind == "conv":
        layers = (torch.nn.Conv2d(3, 4, 3, padding=1, bias=bias),
                  torch.nn.BatchNorm2d(4, eps=1e-3, affine=bn_affine))
        mine = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=bias),
                             nn.BatchNorm2d(4, eps=1e-3, affine=bn_affine))
        x = np.random.default_rng(1).normal(size=(2, 3, 5, 5)).astype(np.float32)
    else:
        layers = (torch.nn.Linear(3, 4, bias=bias),
                  torch.nn.BatchNorm1d(4, eps=1e-3, affine=bn_affine))
        mine = nn.Sequential(nn.Linear(3, 4, bias=bias),
                             nn.BatchNorm1d(4, eps=1e-3, affine=bn_affine))
        x = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    ref = torch.nn.Sequential(*layers)
    with torch.no_grad():
        bn = ref[1]
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.2, 3.0)
        if bn_affine:
            bn.weight.normal_()
            bn.bias.normal_()
    ref.eval()
    state = {k: ember.tensor(v.numpy()) for k, v in ref.state_dict().items()}
    mine.load_state_dict(state)
    return ref, mine.eval(), x


@pytest.mark.parametrize("kind", ["conv", "linear"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("bn_affine", [True, False])
def test_fold_batchnorms_matches_torch(kind, bias, bn_affine):
    torch = pytest.importorskip("torch")
    ref, mine, x = _torch_pair(torch, kind, bias, bn_affine)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    assert nn.utils.fold_batchnorms(mine) is mine
    assert [type(m).__name__ for m in mine] == [type(mine[0]).__name__, "Identity"]
    assert mine[0].bias is not None
    np.testing.assert_allclose(mine(ember.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_the_structure_only_fold_adds_a_zero_bias_and_keeps_the_weight():
    net = nn.Sequential(nn.Linear(3, 4, bias=False), nn.BatchNorm1d(4))
    before = net[0].weight.numpy().copy()
    nn.utils.fold_batchnorms(net, values=False)
    assert type(net[1]).__name__ == "Identity"
    assert net[0].bias.tolist() == [0.0] * 4
    np.testing.assert_array_equal(net[0].weight.numpy(), before)


def test_a_norm_that_reads_other_channels_is_left_alone():
    # BatchNorm2d after a Linear normalizes dim 1 of a 4-D input, not the Linear's features
    net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm2d(4), nn.Conv2d(4, 4, 1),
                        nn.BatchNorm2d(3, affine=False))
    nn.utils.fold_batchnorms(net)
    assert [type(m).__name__ for m in net] == ["Linear", "BatchNorm2d", "Conv2d", "BatchNorm2d"]
