"""Quantization-aware training (ember.quantize.prepare_qat / convert_qat): the fake-quant
values and straight-through gradients against numpy float64, the converted int8 model against
the fake-quant model it came from, the moving-average input ranges, records and the MCU
export of a converted model, and a short fine-tune that wins back what aggressive PTQ lost
(held-out digits) on numpy and wasm; training steps and conversion on wgpu (lavapipe) too."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.autodiff import Autodiff
from ember.errors import EmberError
from ember.quantize import QATConv2d, QATLinear, QuantConv2d, QuantLinear, Scheme
from ember.quantize import convert_qat, prepare_qat
from ember.quantize.fake_quant import fake_quantize, fake_quantize_weight

rng = np.random.default_rng(170)
AD = "autodiff-numpy"


def _codes(v, lo, hi):
    """The contract's rounding (half away from zero) and clamp, in float64."""
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), lo, hi)


def _backend(name):
    """An Autodiff backend over ``name``, or a skip when ``name`` can't run here."""
    if name == "wasm":
        pytest.importorskip("wasmtime")
    if name == "wgpu":
        pytest.importorskip("wgpu")
        try:
            ember.get_backend("wgpu")
        except (EmberError, ImportError, RuntimeError) as e:  # no adapter (no lavapipe)
            pytest.skip(f"no wgpu adapter: {e}")
    return Autodiff(ember.get_backend(name))


# ---------------------------------------------------------------------- fake quantization
@pytest.mark.parametrize("lo, hi", [(-127, 127), (0, 255)])
def test_fake_quantize_and_its_straight_through_gradient(lo, hi):
    scale = 0.05
    # inside, outside, the clamp ends and rounding ties on both sides
    x = np.concatenate([rng.normal(0, 4, 500), [hi * scale, lo * scale, 8.0, -8.0,
                                                 0.025, -0.025, 0.075, 20.0, -20.0]])
    x = x.astype(np.float32)
    upstream = rng.normal(0, 1, x.shape).astype(np.float32)
    xt = ember.tensor(x, backend=AD).require_grad()
    st = ember.tensor([scale], backend=AD)
    y = fake_quantize(xt, st, lo, hi)
    grads = (y * ember.tensor(upstream, backend=AD)).sum().backward()

    v = x.astype(np.float64) / np.float32(scale).astype(np.float64)
    want = _codes(v, lo, hi) * np.float32(scale)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=0)
    inside = (v >= lo) & (v <= hi)
    assert 0 < inside.sum() < x.size  # both sides exercised
    np.testing.assert_array_equal(grads.get(xt).numpy(), np.where(inside, upstream, 0))


def test_fake_quantized_weight_is_the_per_channel_int8_weight():
    w = rng.normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32)
    w[2] = 0  # an all-zero channel: scale 1, codes 0
    wt = ember.tensor(w, backend=AD).require_grad()
    y = fake_quantize_weight(wt)
    flat = w.reshape(6, -1).astype(np.float64)
    amax = np.abs(flat).max(axis=1)
    scale = np.where(amax > 0, amax / 127, 1.0).astype(np.float32).astype(np.float64)
    want = (_codes(flat / scale[:, None], -127, 127) * scale[:, None]).reshape(w.shape)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-9)
    grads = y.sum().backward()  # every weight is inside its channel's range
    np.testing.assert_array_equal(grads.get(wt).numpy(), np.ones_like(w))


def test_fake_quantize_without_gradients_is_plain_rounding():
    x = ember.tensor([0.124, 0.126, -10.0])
    assert fake_quantize(x, ember.tensor([0.25]), -4, 4).tolist() == [0.0, 0.25, -1.0]


# ---------------------------------------------------------------------- prepare / convert
def _cnn():
    ember.seed(4)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), nn.ReLU6(),
        nn.Conv2d(8, 12, 1), nn.ReLU(), nn.Flatten(), nn.Linear(12 * 5 * 5, 5),
    )
    bn = model[1]
    bn.running_mean = ember.tensor(rng.normal(0, 0.3, 8).astype(np.float32))
    bn.running_var = ember.tensor(rng.uniform(0.5, 2, 8).astype(np.float32))
    return model.eval()


def _train_steps(qat, x, steps=3, lr=0.02):
    opt = optim.SGD(qat.parameters(), lr=lr)
    target = ember.tensor(rng.normal(0, 1, (x.shape[0], 5)).astype(np.float32),
                          backend=x.backend)
    for _ in range(steps):
        opt.step(((qat(x) - target) ** 2).mean().backward())


def test_prepare_folds_batchnorm_and_starts_from_the_ptq_model():
    model, x = _cnn(), ember.tensor(rng.normal(0, 1, (16, 3, 10, 10)).astype(np.float32))
    qat = prepare_qat(model, x)
    assert [type(m).__name__ for m in qat] == [
        "QATConv2d", "Identity", "ReLU", "QATConv2d", "ReLU6", "QATConv2d", "ReLU", "Flatten",
        "QATLinear"]
    assert qat.training and type(model[0]) is nn.Conv2d  # the float model is left as it was
    ptq = ember.quantize(model, x)
    # before any training the fake-quant model and PTQ have the same ranges and outputs
    for a, b in zip(qat, ptq):
        if isinstance(a, (QATConv2d, QATLinear)):
            assert a.input_scale().tolist() == b.input_scale.tolist()
    np.testing.assert_allclose(qat.eval()(x).numpy(), ptq(x).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["numpy", "python", "wasm", "wgpu"])
def test_converted_model_computes_what_the_fake_quant_model_computes(name):
    b = _backend(name)
    model = _cnn().to(b)
    x = ember.tensor(rng.normal(0, 1, (4, 3, 10, 10)).astype(np.float32), backend=b)
    qat = prepare_qat(model, x)
    _train_steps(qat, x)  # weights and ranges move away from PTQ's
    q = convert_qat(qat)
    assert [type(m) for m in q if "Quant" in type(m).__name__] == [
        QuantConv2d, QuantConv2d, QuantConv2d, QuantLinear]
    for a, c in zip(qat, q):
        if isinstance(c, (QuantConv2d, QuantLinear)):
            assert c.input_scale.tolist() == a.input_scale().tolist()
            assert c.weight.dtype == ember.int8
    assert qat.training  # convert_qat copies: the QAT model can keep training
    with ember.no_grad():
        want = qat.eval()(x).numpy()
        got = q(x).numpy()
    # the same codes: only the float order of the products and sums differs
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_unsigned_inputs_as_ptq_picks_them():
    model = _cnn().to(AD)
    x = ember.tensor(rng.normal(0, 1, (4, 3, 10, 10)).astype(np.float32), backend=AD)
    scheme = Scheme(unsigned=True)
    qat = prepare_qat(model, x, scheme)
    ptq = ember.quantize(model, x, scheme)
    flags = [m.unsigned for m in qat if isinstance(m, (QATConv2d, QATLinear))]
    assert flags == [m.unsigned for m in ptq if isinstance(m, (QuantConv2d, QuantLinear))]
    assert flags == [False, True, True, True]  # the image may be negative; after ReLUs not
    _train_steps(qat, x)
    q = convert_qat(qat)
    assert [m.unsigned for m in q if isinstance(m, (QuantConv2d, QuantLinear))] == flags
    with ember.no_grad():
        want = qat.eval()(x).numpy()
        got = q(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_input_range_follows_a_moving_average_while_training():
    lin = nn.Linear(3, 2).to(AD)
    qat = prepare_qat(nn.Sequential(lin), momentum=0.25)  # no calibration
    layer = qat[0]
    assert layer.input_amax.tolist() == [0.0]
    first = ember.tensor([[0.5, -2.0, 1.0]], backend=AD)
    qat(first)
    assert layer.input_amax.tolist() == [2.0]  # the first batch sets the range
    qat(ember.tensor([[4.0, 0.0, 0.0]], backend=AD))
    assert layer.input_amax.tolist() == pytest.approx([0.75 * 2.0 + 0.25 * 4.0])
    qat.eval()(ember.tensor([[40.0, 0.0, 0.0]], backend=AD))
    assert layer.input_amax.tolist() == pytest.approx([2.5])  # eval: fixed
    frozen = prepare_qat(nn.Sequential(lin), first, momentum=0)
    frozen(ember.tensor([[9.0, 0.0, 0.0]], backend=AD))
    assert frozen[0].input_amax.tolist() == [2.0]  # momentum 0: the calibrated range


def test_converted_model_saves_loads_and_exports_unchanged(tmp_path):
    from ember.export import export, load, run_reference

    model, x = _cnn(), ember.tensor(rng.normal(0, 1, (6, 3, 10, 10)).astype(np.float32))
    qat = prepare_qat(model.to(AD), x.to(AD))
    _train_steps(qat, x.to(AD))
    q = convert_qat(qat).to("numpy")
    ember.quantize.save(q, tmp_path / "qat8")
    twin = ember.quantize.load(_cnn(), tmp_path / "qat8")  # the float architecture
    assert twin(x).tolist() == q(x).tolist()
    export(q, tmp_path / "q.emb", (3, 10, 10))
    program = load(tmp_path / "q.emb")
    assert program.layers[0].w_q.tolist() == q[0].weight.numpy().tolist()
    np.testing.assert_allclose(run_reference(program, x.numpy()), q(x).numpy(), atol=1e-4)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="weight-only"):
        prepare_qat(nn.Linear(2, 2), None, "int4")
    with pytest.raises(ValueError, match="momentum"):
        prepare_qat(nn.Linear(2, 2), momentum=1.5)
    with pytest.raises(ValueError, match="not a prepare_qat"):
        convert_qat(nn.Sequential(nn.Linear(2, 2)))
    assert prepare_qat(nn.Sequential(nn.Linear(2, 2)), None, Scheme()).scheme == Scheme()


# ---------------------------------------------------------------------- QAT wins back accuracy
OUTLIER = 150.0  # the hidden unit scaled up, as a single large channel of a real network


@pytest.fixture(scope="module")
def digits():
    """sklearn's 8x8 digits (1,797), a float MLP trained on 1,200 of them, and the same MLP
    with one hidden unit scaled ×150 in and ×1/150 out: the float function is unchanged
    (ReLU is positively homogeneous), but that unit's range makes the hidden layer's
    per-tensor int8 step 150× coarser, so PTQ loses several points."""
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train, test = order[:1200], order[1200:]
    ember.seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).to(AD)
    _fit(model, x[train], y[train], epochs=8, lr=1e-2)
    model = model.to("numpy")
    w0, b0, w1 = model[0].weight.numpy(), model[0].bias.numpy(), model[2].weight.numpy()
    w0[0] *= OUTLIER
    b0[0] *= OUTLIER
    w1[:, 0] /= OUTLIER
    for p, v in ((model[0].weight, w0), (model[0].bias, b0), (model[2].weight, w1)):
        p.assign(ember.tensor(v))
    return model.eval(), x[train], y[train], x[test], y[test]


def _fit(model, x, y, epochs, lr):
    b = next(model.parameters()).backend
    opt = optim.Adam(model.parameters(), lr=lr)
    model.train()
    order = np.random.default_rng(1)
    for _ in range(epochs):
        perm = order.permutation(len(x))
        for start in range(0, len(x), 32):
            i = perm[start:start + 32]
            logits = model(ember.tensor(x[i], backend=b))
            opt.step(nn.loss.cross_entropy(logits, ember.tensor(y[i], backend=b)).backward())


def _accuracy(model, x, y):
    b = next(iter(model.state_dict().values())).backend
    with ember.no_grad():
        return float((model.eval()(ember.tensor(x, backend=b)).numpy().argmax(1) == y).mean())


@pytest.mark.parametrize("name", ["numpy", "wasm"])  # wgpu trains in the conversion test
def test_two_epochs_of_qat_win_back_what_ptq_lost(digits, name):
    model, x_train, y_train, x_test, y_test = digits
    b = _backend(name)
    f32 = _accuracy(model, x_test, y_test)
    calibration = ember.tensor(x_train[:256])
    ptq = _accuracy(ember.quantize(model, calibration), x_test, y_test)
    assert ptq < f32 - 0.04  # the premise: PTQ loses several points here
    qat = prepare_qat(model, calibration).to(b)  # the fixture's model stays on numpy
    _fit(qat, x_train, y_train, epochs=2, lr=3e-3)
    q = convert_qat(qat)
    accuracy = _accuracy(q, x_test, y_test)
    assert accuracy >= ptq + 0.03, (f32, ptq, accuracy)
    assert _accuracy(qat, x_test, y_test) == pytest.approx(accuracy, abs=2 / len(y_test))
