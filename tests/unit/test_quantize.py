"""ember.quantize: post-training quantization of whole models (BatchNorm folding, observers,
the int8 and weight-only schemes), the quantized layers against float64 references computed
from their own codes, the same model on numpy / python / wasm, records (ember.save/load),
the MCU export without re-quantizing (and on the MicroPython unix port), jit, and errors.
The op-level cases on every backend are in tests/conformance/catalog/quantized.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import nn
from ember.errors import DTypeError, RecordError, ShapeError
from ember.quantize import (
    Observer,
    QuantConv2d,
    QuantLinear,
    Scheme,
    WeightOnlyConv2d,
    WeightOnlyLinear,
)
from ember.quantize.functional import qconv2d, qlinear
from ember.quantize.weights import pack_int4, per_block, unpack_int4

rng = np.random.default_rng(17)


def _cnn():
    ember.seed(3)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU6(),
        nn.Conv2d(8, 16, 1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5),
    )
    # non-trivial BatchNorm statistics, as after training
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean = ember.tensor(rng.normal(0, 0.3, c).astype(np.float32))
            m.running_var = ember.tensor(rng.uniform(0.5, 2, c).astype(np.float32))
            m.weight = nn.Parameter(ember.tensor(rng.uniform(0.5, 1.5, c).astype(np.float32)))
    return model.eval()


def _x(n=16):
    return ember.tensor(rng.normal(0, 1, (n, 3, 10, 10)).astype(np.float32))


def _codes(x, s):
    v = np.asarray(x, np.float64) / s
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -127, 127)


# ---------------------------------------------------------------------- quantize()
def test_quantize_folds_batchnorm_and_swaps_the_layers():
    model, x = _cnn(), _x()
    q = ember.quantize(model, x)
    kinds = [type(m).__name__ for m in q]
    # chained: the first two convs end in codes, their activations folded into the clamp
    assert kinds == ["QuantConv2d", "Identity", "FoldedActivation", "QuantConv2d", "Identity",
                     "FoldedActivation", "QuantConv2d", "ReLU", "AdaptiveAvgPool2d", "Flatten",
                     "QuantLinear"]
    assert type(model[0]).__name__ == "Conv2d"  # the float model is left as it was
    yf, yq = model(x).numpy(), q(x).numpy()
    # int8 error: a few quantization steps of the logits' range
    assert np.abs(yq - yf).max() < 0.03 * np.abs(yf).max()
    assert (yq.argmax(1) == yf.argmax(1)).mean() >= 0.9


def test_quant_conv_is_the_float64_product_of_its_codes():
    model, x = _cnn(), _x(4)
    q = ember.quantize(model, x, Scheme(chain=False))  # float out: the layer alone
    layer = q[0]
    w = layer.weight.numpy().astype(np.float64)
    s_in = float(layer.input_scale.numpy()[0])
    xq = np.pad(_codes(x.numpy(), s_in), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xq, (3, 3), axis=(2, 3))
    acc = np.einsum("ncyxij,ocij->noyx", win, w)  # exact integers in float64
    scale = s_in * layer.weight_scale.numpy().astype(np.float64)
    want = acc * scale.reshape(1, -1, 1, 1) + layer.bias.numpy().reshape(1, -1, 1, 1)
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["python", "wasm"])
def test_the_quantized_model_agrees_across_backends(backend):
    if backend == "wasm":
        pytest.importorskip("wasmtime")
    model, x = _cnn(), _x(2)
    q = ember.quantize(model, x)
    want = q(x).numpy()
    got = q.to(backend)(x.to(backend)).numpy()
    # the same integer codes everywhere: only the float rescale may round differently
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_weight_only_schemes_shrink_and_bound_the_error():
    ember.seed(5)
    model = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Conv2d(1, 1, 1), nn.Linear(128, 8))
    f32 = ember.quantize.size_bytes(model)
    q4 = ember.quantize(model, scheme="int4")
    assert isinstance(q4[0], WeightOnlyLinear) and isinstance(q4[3], WeightOnlyLinear)
    assert type(q4[2]).__name__ == "Conv2d"  # below min_params: stays float
    assert f32 / ember.quantize.size_bytes(q4) > 6
    w = model[0].weight.numpy().astype(np.float64)
    scale = np.abs(np.repeat(q4[0].weight_scale.numpy(), 64, axis=1)[:, :256])
    err = np.abs(q4[0].dequantized().numpy() - w)
    # half a step, or (a weight the searched scale clips) its distance to code 7 or -8
    assert (err <= np.maximum(scale / 2, np.abs(w) - 7 * scale) * (1 + 1e-5) + 1e-7).all()
    q8 = ember.quantize(model, scheme="int8-weights")
    assert 3.5 < f32 / ember.quantize.size_bytes(q8) < 4.1
    x = ember.randn(3, 256)
    head = nn.Sequential(model[0], model[1])
    np.testing.assert_allclose(nn.Sequential(q8[0], q8[1])(x).numpy(), head(x).numpy(),
                               atol=0.02)


def test_weight_only_conv_dequantizes_per_block():
    conv = nn.Conv2d(4, 6, 3, padding=1, groups=2)
    q = WeightOnlyConv2d.from_float(conv, 4, 8)
    codes, scale = per_block(conv.weight.numpy(), 4, 8)
    want = (codes.astype(np.float64) * np.repeat(scale, 8, axis=1)[:, :18]).reshape(6, 2, 3, 3)
    np.testing.assert_allclose(q.dequantized().numpy(), want, rtol=1e-6)
    x = ember.randn(1, 4, 5, 5)
    ref = ember.nn.functional.conv2d(x, ember.tensor(want.astype(np.float32)), conv.bias,
                                     padding=1, groups=2)
    np.testing.assert_allclose(q(x).numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_int4_packing_round_trips_every_code():
    codes = np.arange(-7, 8, dtype=np.int8)
    packed = pack_int4(codes)
    assert packed.dtype == np.uint8 and packed.size == 8
    assert unpack_int4(packed, 15).tolist() == codes.tolist()


# ---------------------------------------------------------------------- observers
def test_observers_minmax_percentile_mse():
    data = rng.laplace(0, 1, 100_000).astype(np.float32)  # heavy tails
    amax = {}
    for kind in ("minmax", "percentile", "mse"):
        obs = Observer(kind, percentile=99.9)
        for part in np.split(data, 4):
            obs.observe(part)
        amax[kind] = obs.amax()
    a = np.abs(data).astype(np.float64)
    assert amax["minmax"] == a.max()
    assert amax["percentile"] == pytest.approx(np.percentile(a, 99.9), rel=1e-3)

    def mse(c):  # the error of a symmetric int8 grid clipped at c, computed here
        s = c / 127
        return np.mean((np.clip(np.round(a / s), 0, 127) * s - a) ** 2)

    assert amax["mse"] < amax["minmax"]
    assert mse(amax["mse"]) < mse(amax["minmax"]) and mse(amax["mse"]) <= mse(amax["percentile"])


def test_percentile_scheme_gives_a_finer_input_scale():
    model, x = _cnn(), _x()
    xs = x.numpy().copy()
    xs[0, 0, 0, 0] = 40.0
    x = ember.tensor(xs)
    wide = ember.quantize(model, x)
    fine = ember.quantize(model, x, Scheme(observer="percentile", percentile=99.0))
    assert float(fine[0].input_scale.numpy()[0]) < float(wide[0].input_scale.numpy()[0]) / 4


# ---------------------------------------------------------------------- records
def test_save_and_load_keep_codes_scales_and_zero_points(tmp_path):
    model, x = _cnn(), _x(4)
    q = ember.quantize(model, x)
    path = tmp_path / "q8"
    ember.quantize.save(q, path)
    meta = ember.io.read_metadata(path)
    assert meta["user"][ember.quantize.META_KEY]["representation"]["weights"] == "int8"
    for key in ("0.weight", "0.weight_scale", "0.weight_zero_point", "0.input_scale",
                "0.input_zero_point", "10.weight"):
        assert key in meta["keys"]
    twin = ember.quantize.load(_cnn(), path)
    assert twin(x).tolist() == q(x).tolist()
    assert twin[0].weight.dtype == ember.int8
    # a plain ember.load into the structure (calibration=None: placeholders) does the same
    skeleton = ember.quantize(_cnn(), None, "int8")
    ember.load(skeleton, path)
    assert skeleton(x).tolist() == q(x).tolist()


def test_unsigned_codes_and_bias_correction_survive_a_record(tmp_path):
    model, x = _cnn(), _x(16)
    plain = ember.quantize(model, x)
    q = ember.quantize(model, x, Scheme(unsigned=True, bias_correction=True))
    # the depthwise conv (after ReLU) and the 1x1 conv (after ReLU6) see no negative input,
    # the Linear neither (after ReLU and pooling); the first conv does
    assert [m.unsigned for m in q if hasattr(m, "input_unsigned")] == [False, True, True, True]
    assert float(q[3].input_scale.numpy()[0]) < float(plain[3].input_scale.numpy()[0]) / 1.9
    yf = model(x).numpy()
    err = [np.abs(m(x).numpy() - yf).mean() for m in (plain, q)]
    assert err[1] < err[0]
    ember.quantize.save(q, tmp_path / "u8")
    twin = ember.quantize.load(_cnn(), tmp_path / "u8")
    assert twin(x).tolist() == q(x).tolist()
    # a plain ember.load into a skeleton of the same structure reads the flags too
    skeleton = ember.quantize(_cnn(), None, "int8")
    ember.load(skeleton, tmp_path / "u8")
    assert skeleton(x).tolist() == q(x).tolist()


def test_range_search_picks_an_observer_candidate_per_layer():
    model, x = _cnn(), _x(16)
    base = Scheme(observer="mse", unsigned=True)
    q = ember.quantize(model, x, Scheme(**{**base.to_dict(), "range_search": True}))
    plain = ember.quantize(model, x, base)
    # the first layer sees the input itself: its candidates are the observer's on x
    obs = Observer("mse")
    obs.observe(x.numpy())
    scale = float(q[0].input_scale.numpy()[0])
    assert min(abs(scale - c / 127) for c in obs.candidates(127)) < 1e-6 * scale
    yf = model(x).numpy()
    assert np.abs(q(x).numpy() - yf).mean() <= np.abs(plain(x).numpy() - yf).mean() * 1.05


def test_unsigned_layer_is_the_float64_product_of_its_codes():
    model, x = _cnn(), _x(4)
    q = ember.quantize(model, x, Scheme(unsigned=True, chain=False))  # float in: quantized here
    layer, h = q[6], q[:6](x)
    s_in = float(layer.input_scale.numpy()[0])
    codes = np.clip(np.floor(h.numpy().astype(np.float64) / s_in + 0.5), 0, 255)
    assert codes.max() > 127  # the unsigned range is used
    acc = np.einsum("ncyx,oc->noyx", codes, layer.weight.numpy()[:, :, 0, 0].astype(np.float64))
    scale = s_in * layer.weight_scale.numpy().astype(np.float64)
    want = acc * scale.reshape(1, -1, 1, 1) + layer.bias.numpy().reshape(1, -1, 1, 1)
    for backend in ("numpy", "python", "wasm"):
        got = layer.to(backend)(h.to(backend)).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=backend)


def test_int4_record_is_smaller_and_loads(tmp_path):
    ember.seed(2)
    model = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    q = ember.quantize(model, scheme="int4")
    ember.save(model, tmp_path / "f32")
    ember.quantize.save(q, tmp_path / "q4")
    ratio = os.path.getsize(tmp_path / "f32") / os.path.getsize(tmp_path / "q4")
    assert ratio > 6.5
    twin = ember.quantize.load(model, tmp_path / "q4")
    x = ember.randn(2, 512)
    assert twin(x).tolist() == q(x).tolist()


def test_load_refuses_a_record_without_a_scheme(tmp_path):
    ember.save(nn.Linear(2, 2), tmp_path / "plain")
    with pytest.raises(RecordError, match="no quantization scheme"):
        ember.quantize.load(nn.Linear(2, 2), tmp_path / "plain")


# ---------------------------------------------------------------------- export (MCU)
def test_export_writes_the_codes_as_they_are(tmp_path):
    from ember.export import export, load, run_reference

    model, x = _cnn(), _x(8)
    q = ember.quantize(model, x)
    report = export(q, tmp_path / "q.emb", (3, 10, 10))  # no calibration: not re-quantized
    assert report.int8
    program = load(tmp_path / "q.emb")
    first = program.layers[0]
    assert first.w_q.tolist() == q[0].weight.numpy().tolist()
    assert first.in_scale == pytest.approx(float(q[0].input_scale.numpy()[0]), rel=1e-6)
    np.testing.assert_allclose(run_reference(program, x.numpy()), q(x).numpy(), atol=1e-4)


def test_export_of_unsigned_layers_keeps_their_range(tmp_path):
    """The boards quantize to +-127 only: an unsigned layer exports with the same range at
    twice the step (input scale x 255/127), its codes and biases as they are."""
    from ember.export import export, load, run_reference

    model, x = _cnn(), _x(8)
    q = ember.quantize(model, x, "int8-u8")
    export(q, tmp_path / "u8.emb", (3, 10, 10))
    program = load(tmp_path / "u8.emb")
    layer = q[3]
    assert layer.unsigned
    scale = float(layer.input_scale.numpy()[0])
    assert program.layers[1].in_scale == pytest.approx(scale * 255 / 127, rel=1e-6)
    got, yq, yf = run_reference(program, x.numpy()), q(x).numpy(), model(x).numpy()
    # a coarser input step on the board: near the int8 model, as near the float one
    assert np.abs(got - yq).max() < 0.05 * np.abs(yf).max()


def test_exported_quantized_model_runs_on_micropython(tmp_path):
    from ember.export import find_micropython, run_on_micropython

    try:
        find_micropython()
    except FileNotFoundError:
        pytest.skip("no MicroPython (embedded/build_micropython.sh builds it)")
    model, x = _cnn(), _x(6)
    q = ember.quantize(model, x)
    run = run_on_micropython(q, x.numpy(), input_shape=(3, 10, 10), logits=True)
    np.testing.assert_allclose(np.asarray(run.logits).reshape(6, -1), q(x).numpy(), atol=2e-3)


# ---------------------------------------------------------------------- jit, errors
@pytest.mark.parametrize("scheme", ["int8", "int8-u8"])
def test_a_quantized_model_jits(scheme):
    model, x = _cnn(), _x(2)
    q = ember.quantize(model, x, scheme)
    fast = ember.jit(q)
    want = q(x).numpy()
    for _ in range(2):
        np.testing.assert_allclose(fast(x).numpy(), want, rtol=1e-6, atol=1e-6)


def test_errors_name_the_problem():
    x = ember.randn(2, 4)
    w8 = ember.tensor(rng.integers(-5, 5, (3, 4)), dtype=ember.int8)
    one, s = ember.ones(3), ember.tensor([0.1])
    with pytest.raises(DTypeError, match="int8 codes"):
        qlinear(x, w8.float(), one, None, s)
    with pytest.raises(ShapeError, match="don't fit"):
        qlinear(ember.randn(2, 5), w8, one, None, s)
    with pytest.raises(ShapeError, match="w_scale"):
        qlinear(x, w8, ember.ones(2), None, s)
    with pytest.raises(ShapeError, match="in_scale"):
        qlinear(x, w8, one, None, ember.ones(2))
    wc = ember.tensor(rng.integers(-5, 5, (3, 2, 3, 3)), dtype=ember.int8)
    with pytest.raises(ShapeError, match="groups=1"):
        qconv2d(ember.randn(1, 4, 5, 5), wc, one, None, s, (1, 1), ((0, 0), (0, 0)),
                (1, 1), 1)
    with pytest.raises(ShapeError, match="smaller than the kernel"):
        qconv2d(ember.randn(1, 2, 2, 2), wc, one, None, s, (1, 1), ((0, 0), (0, 0)),
                (1, 1), 1)
    with pytest.raises(ValueError, match="presets: int8, int8-u8, int8-weights, int4"):
        ember.quantize(nn.Linear(2, 2), None, "int3")
    with pytest.raises(ValueError, match="weight-only"):
        Scheme(weights="int4", activations=True)
    with pytest.raises(ValueError, match="observer"):
        Scheme(observer="entropy")


def test_layers_from_float_keep_geometry():
    conv = nn.Conv2d(4, 4, 5, stride=2, padding=2, groups=4)
    q = QuantConv2d.from_float(conv, amax=2.0)
    assert q.padding == ((2, 2), (2, 2)) and q.groups == 4 and q.stride == (2, 2)
    same = QuantConv2d.from_float(nn.Conv2d(2, 2, 4, padding="same"), amax=1.0)
    assert same.padding == ((1, 2), (1, 2))  # PyTorch puts the odd one after
    lin = QuantLinear.from_float(nn.Linear(3, 2, bias=False), amax=0.0)
    assert lin.bias.tolist() == [0.0, 0.0] and lin.input_scale.tolist() == [1.0]


def test_bias_correction_targets_the_first_batch_when_calibration_spans_several():
    """_refine corrects on the first calibration batch (64 inputs): the float means it aims
    at must come from that batch too, not from every batch (whose own difference would
    land in each bias)."""
    ember.seed(11)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).eval()
    first = rng.standard_normal((64, 6)).astype(np.float32)
    rest = (rng.standard_normal((128, 6)) + 3.0).astype(np.float32)  # another distribution
    q = ember.quantize(model, np.concatenate([first, rest]), Scheme(bias_correction=True))
    x = ember.tensor(first)
    got, want = q(x).numpy().mean(axis=0), model(x).numpy().mean(axis=0)
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_empty_calibration_is_refused():
    with pytest.raises(ValueError, match="calibration data is empty"):
        ember.quantize(nn.Sequential(nn.Linear(4, 2)), np.zeros((0, 4), np.float32))
