"""Models with their own ``forward`` go to a board: ember.export lowers their traced program.

The expected logits are the model's own eager forward (ember's ops, not the lowering under
test); the pure tier of ember_micro runs the written file on CPython, and test_board.py's
fixtures run the same runtime on the real MicroPython."""

from __future__ import annotations

from array import array

import ember
import ember.nn.functional as F
import numpy as np
import pytest
from _models import seeded
from ember import nn
from ember.errors import UnsupportedOpError
from ember.export import export, load, lower, model_logits, run_reference


class MLP(nn.Module):
    """The getting-started page's model (docs/getting-started/first-model.md)."""

    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Block(nn.Module):
    """A residual block written out: BatchNorm, activation and the shortcut in forward."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return x + F.relu6(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.blocks = nn.Sequential(Block(4), Block(4))
        self.head = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x):
        y = F.hardswish(self.bn(self.stem(x)))
        y = F.avg_pool2d(self.blocks(y), 2)
        y = (y - 0.25) * 2.0  # a scalar affine folds like a bias
        return F.softmax(torch_like_flatten(y) @ self.head.weight.T + self.head.bias, dim=-1)


def torch_like_flatten(y):
    return y.reshape(y.shape[0], -1)


def _inputs(shape, n=4, seed=1):
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


def _pure(path, x):
    import ember_micro

    m = ember_micro.Model(str(path), "pure")
    return np.array([list(m.run(array("f", xi.ravel().tolist()))) for xi in x])


def test_the_getting_started_mlp_lowers_and_runs_on_the_pure_tier(tmp_path):
    ember.seed(0)
    model = MLP(4, 16, 3)
    assert [la.describe() for la in lower(model, (4,)).layers] == [
        "linear+relu (4, 1, 1)->(16, 1, 1)", "linear (16, 1, 1)->(3, 1, 1)"]
    x = _inputs((4,))
    export(model, tmp_path / "mlp.emb", (4,))
    np.testing.assert_allclose(_pure(tmp_path / "mlp.emb", x), model_logits(model, x),
                               rtol=1e-5, atol=1e-6)


def test_an_own_forward_with_shortcuts_batchnorm_and_matmul_matches_its_forward(tmp_path):
    model = seeded(Net())
    prog = lower(model, (1, 8, 8))
    kinds = [la.describe().split()[0] for la in prog.layers]
    # BatchNorm folds into the convs, activations fuse, the two shortcuts are save/add
    assert kinds == ["conv2d+hardswish", "save", "conv2d+relu6", "add", "save",
                     "conv2d+relu6", "add", "avgpool", "conv2d", "linear", "softmax"]
    x = _inputs((1, 8, 8))
    expect = model_logits(model, x)
    np.testing.assert_allclose(run_reference(prog, x), expect, rtol=1e-5, atol=1e-6)
    path = tmp_path / "net.emb"
    export(model, path, (1, 8, 8), int8=True, calibration=_inputs((1, 8, 8), 16, seed=3))
    np.testing.assert_allclose(_pure(path, x), run_reference(load(path), x), rtol=1e-4,
                               atol=2e-5)


def test_a_quantized_own_forward_keeps_its_codes():
    model = seeded(MLP(6, 8, 3))
    q = ember.quantize(model, ember.tensor(_inputs((6,), 32)), "int8")
    prog = lower(q, (6,))
    assert prog.quantized
    for layer, module in zip(prog.layers, (q.fc1, q.fc2)):
        np.testing.assert_array_equal(layer.w_q, module.weight.numpy())  # the codes, as they are
    x = _inputs((6,))
    np.testing.assert_allclose(run_reference(prog, x), model_logits(q, x), rtol=1e-4,
                               atol=1e-4)


class TwoBranches(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(1, 2, 3, padding=1), nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x):
        return self.a(x) + self.b(x)


class PositionBias(nn.Module):
    def forward(self, x):
        return x + ember.arange(16.0).reshape(1, 1, 4, 4)


class TwoOutputs(nn.Module):
    def forward(self, x):
        return x.relu(), x.sigmoid()


class ReadsAValue(nn.Module):
    def forward(self, x):
        return x * 2 if float(x.sum()) > 0 else x


@pytest.mark.parametrize("model, shape, message", [
    (TwoBranches(), (1, 4, 4), "which reads %0, a value the chain has moved past (a branch)"),
    (PositionBias(), (1, 4, 4), "which applies a constant that varies within a channel"),
    (nn.Sequential(nn.Linear(4, 4), nn.GELU()), (4,), "runs gelu, which has no micro layer"),
    (ReadsAValue(), (3,), "its forward can't be traced"),
    (TwoOutputs(), (3,), "its forward returns 2 tensors"),
])
def test_what_the_boards_cant_run_is_named(model, shape, message):
    with pytest.raises(UnsupportedOpError, match="Supported:") as e:
        lower(model, shape)
    assert message in str(e.value)


@pytest.mark.parametrize("tier", ["native", "pure"])
def test_an_own_forward_runs_on_the_real_micropython(micropython, tmp_path, tier):
    from ember.export import run_on_micropython

    model = seeded(Net())
    x = _inputs((1, 8, 8), 3)
    path = tmp_path / "net.emb"
    export(model, path, (1, 8, 8))
    run = run_on_micropython(path, x, tier=tier, logits=True, heapsize="256K")
    assert run.tier == tier
    np.testing.assert_allclose(run.logits, model_logits(model, x), rtol=1e-4, atol=1e-5)
