"""Chained int8 models (``Scheme(chain=True)``, the default): a quantized layer followed by at
most a ReLU/ReLU6 and code-keeping modules, then by another quantized layer, writes codes at
that layer's input scale. Checked against the same model unchained (float out, activation in
float, the next layer quantizing its own input) and against float64 references from the
codes; records and the MCU export."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.quantize import FoldedActivation, QuantConv2d, Scheme

rng = np.random.default_rng(5)


def _blocks():
    """An EfficientNet-Lite-like stack: stem, a plain block, a residual block, a strided
    block with SAME padding, a head and a classifier (BatchNorms with statistics)."""
    from ember.demos.efficientnet import _conv_bn, mbconv

    ember.seed(4)
    model = nn.Sequential(OrderedDict([
        ("stem", nn.Sequential(OrderedDict(_conv_bn(3, 8, 3, 2)))),
        ("blocks", nn.Sequential(mbconv(8, 16, 3, 1, 1), mbconv(16, 16, 3, 1, 4),
                                 mbconv(16, 12, 5, 2, 4))),
        ("head", nn.Sequential(OrderedDict(_conv_bn(12, 32, 1)))),
        ("pool", nn.AdaptiveAvgPool2d(1)), ("flatten", nn.Flatten()),
        ("classifier", nn.Linear(32, 10)),
    ]))
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean = ember.tensor(rng.normal(0, 0.3, c).astype(np.float32))
            m.running_var = ember.tensor(rng.uniform(0.5, 2, c).astype(np.float32))
    return model.eval()


def _x(n=8):
    return ember.tensor(rng.uniform(-1, 1, (n, 3, 16, 16)).astype(np.float32))


def _both(scheme):
    model, x = _blocks(), _x()
    s = Scheme.named(scheme)
    return model, x, (ember.quantize(model, x, s),
                      ember.quantize(model, x, Scheme(**{**s.to_dict(), "chain": False})))


def _chained(q):
    return [path for path, m in q.named_modules() if getattr(m, "output_range", None) is not None]


@pytest.mark.parametrize("scheme", ["int8", "int8-u8"])
def test_chains_run_where_the_structure_allows_and_agree_with_the_unchained_model(scheme):
    model, x, (chained, plain) = _both(scheme)
    # stem -> block 0's depthwise (ReLU6 folded), expand -> depthwise (with the strided
    # block's SAME padding between), depthwise -> project, block 2's project -> the head
    # (no activation: signed codes); not block 0's project -> block 1, a Residual (its input
    # is read twice), nor block 1's project (the add follows) or the head (pooling follows)
    assert _chained(chained) == [
        "stem.conv", "blocks.0.depthwise_conv", "blocks.1.body.expand_conv",
        "blocks.1.body.depthwise_conv", "blocks.2.expand_conv", "blocks.2.depthwise_conv",
        "blocks.2.project_conv"]
    assert _chained(plain) == []
    assert chained.blocks[2].project_conv.output_range.tolist() == [-127, 127]
    folded = [p for p, m in chained.named_modules() if isinstance(m, FoldedActivation)]
    assert folded == ["stem.act", "blocks.0.depthwise_act", "blocks.1.body.expand_act",
                      "blocks.1.body.depthwise_act", "blocks.2.expand_act",
                      "blocks.2.depthwise_act"]
    a, b = chained(x).numpy(), plain(x).numpy()
    # the same codes reach every layer, but for one code at an exact rounding tie
    assert np.abs(a - b).max() <= 0.02 * np.abs(b).max()
    assert (a.argmax(1) == b.argmax(1)).all()


def test_a_chained_layer_writes_the_codes_the_next_layer_would_have_made():
    model, x, (chained, plain) = _both("int8-u8")
    stem_c, stem_p = chained.stem, plain.stem
    codes = stem_c(x)
    assert codes.dtype == ember.uint8
    # unchained: float out, ReLU6 in float, then the depthwise conv quantizes it itself
    consumer = plain.blocks[0].depthwise_conv
    s = np.float64(consumer.input_scale.numpy()[0])
    v = stem_p(x).numpy().astype(np.float64) / s
    want = np.clip(np.floor(v + 0.5), 0, 255)
    got = codes.numpy().astype(np.float64)
    assert got.max() == np.clip(np.floor(6 / s + 0.5), 0, 255)  # ReLU6's top, folded
    near_tie = np.abs(v - np.floor(v) - 0.5) < 1e-3
    assert np.abs(got - want).max() <= 1 and (got == want)[~near_tie].all()


def test_the_requantized_codes_are_the_float64_contract():
    _, x, (chained, _) = _both("int8")
    layer = chained.stem.conv
    assert isinstance(layer, QuantConv2d)
    xq = np.pad(np.clip(np.floor(np.abs(x.numpy() / layer.input_scale.numpy()[0]) + 0.5)
                        * np.sign(x.numpy()), -127, 127), ((0, 0), (0, 0), (0, 1), (0, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xq, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    acc = np.einsum("ncyxij,ocij->noyx", win, layer.weight.numpy().astype(np.float64))
    out = np.float64(layer.output_scale.numpy()[0])
    m = np.float64(layer.input_scale.numpy()[0]) * layer.weight_scale.numpy() / out
    v = acc * m.reshape(1, -1, 1, 1) + (layer.bias.numpy() / out).reshape(1, -1, 1, 1)
    lo, hi = layer.output_range.tolist()
    want = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), lo, hi)
    got = layer(chained.stem.pad(x)).numpy().astype(np.float64)
    assert (lo, hi) == (0, min(127, int(6 / out + 0.5)))  # signed codes, ReLU6 folded
    assert np.abs(got - want).max() <= 1
    assert (got == want).mean() > 0.999


@pytest.mark.parametrize("backend", ["python", "wasm"])
def test_chained_model_runs_the_same_on_other_backends(backend):
    if backend == "wasm":
        pytest.importorskip("ember.backends.wasm")
        from ember.backends import available
        if "wasm" not in available():
            pytest.skip("the wasm kernels are not built (make wasm)")
    model, x, (chained, _) = _both("int8-u8")
    x_small = x[:2]
    want = chained(x_small).numpy()
    got = chained.to(backend)(ember.tensor(x_small.numpy(), backend=backend)).numpy()
    assert np.abs(got - want).max() <= 0.02 * np.abs(want).max()


def test_chained_records_load_and_older_records_load_unchained(tmp_path):
    model, x, (chained, plain) = _both("int8-u8")
    ember.quantize.save(chained, tmp_path / "c")
    twin = ember.quantize.load(_blocks(), tmp_path / "c")
    assert _chained(twin) == _chained(chained)
    assert twin(x).tolist() == chained(x).tolist()
    # a record written before chains existed: the flat fields of the Scheme of then (read
    # through its deprecated flat names), without "chain"
    fields = {name: getattr(plain.scheme, name) for name in (
        "weights", "activations", "block", "unsigned", "observer", "percentile", "min_params",
        "bias_correction", "keep_float", "range_search", "rounding", "scale_search",
        "int8_short_rows", "int8_share")}
    ember.save(plain, tmp_path / "old", metadata={ember.quantize.META_KEY: fields})
    old = ember.quantize.load(_blocks(), tmp_path / "old")
    assert _chained(old) == [] and old.scheme.chain is False
    assert old(x).tolist() == plain(x).tolist()


def test_the_mcu_export_of_a_chained_model_is_the_unchained_one(tmp_path):
    from ember.export import export

    model, x, (chained, plain) = _both("int8-u8")
    export(chained, tmp_path / "c.emb", (3, 16, 16))
    export(plain, tmp_path / "p.emb", (3, 16, 16))
    # the boards requantize themselves: the activations are written, the chain is not
    assert (tmp_path / "c.emb").read_bytes() == (tmp_path / "p.emb").read_bytes()


@pytest.mark.parametrize("backend", ["numpy", "wgpu"])
def test_a_chained_model_jits(backend):
    from ember.backends import available

    if backend not in available():
        pytest.skip(f"{backend} is not available here")
    _, x, (chained, _) = _both("int8-u8")
    q = chained.to(backend)
    xb = ember.tensor(x.numpy(), backend=backend)
    fast = ember.jit(q)
    with ember.no_grad():
        want = q(xb).numpy()
        assert np.array_equal(fast(xb).numpy(), want)  # traced
        assert np.array_equal(fast(xb).numpy(), want)  # replayed
        # replayed on new inputs: every quantized op was recorded, none baked in as a
        # constant of the traced input
        for scale in (0.5, 2.0, -1.0):
            other = xb * scale
            assert np.array_equal(fast(other).numpy(), q(other).numpy())
