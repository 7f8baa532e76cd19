"""GPTQ weight rounding (``Scheme(rounding="gptq")``): the patch Hessians against PyTorch's
``unfold``, the layer output error against nearest rounding on the same inputs, whole models
(int8 and weight-only int4) and their records."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import nn
from ember.quantize import Scheme
from ember.quantize.gptq import Hessian, gptq_codes
from ember.quantize.weights import per_block

rng = np.random.default_rng(41)


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, (1, 1), 1, 1), (2, (0, 1), 1, 1), (1, (2, 2), 2, 1), (2, (1, 1), 1, 6), (1, (1, 1), 1, 2),
])
def test_conv_hessian_is_the_patch_products_torch_unfold_gives(stride, padding, dilation, groups):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 6, 9, 8)).astype(np.float32)
    h = Hessian()
    h.add_conv(x, (3, 3), (stride, stride), (padding, padding), (dilation, dilation), groups)
    xp = np.pad(x, ((0, 0), (0, 0), padding, padding))
    cols = torch.nn.functional.unfold(torch.from_numpy(xp).double(), 3, dilation=dilation,
                                      stride=stride).numpy()  # (N, C*9, L), channel-major
    cg = 6 // groups
    for g in range(groups):
        rows = cols[:, g * cg * 9:(g + 1) * cg * 9].transpose(0, 2, 1).reshape(-1, cg * 9)
        want = rows.T @ rows / len(rows)
        np.testing.assert_allclose(h.matrix()[g], want, rtol=1e-9, atol=1e-9)


def _output_error(codes, scale, w, x):
    return float(np.sum(((codes * scale - w) @ x.T) ** 2))


@pytest.mark.parametrize("top,block,search", [(127, None, False), (7, None, False),
                                               (7, 16, False), (7, 16, True)])
def test_gptq_moves_the_output_less_than_nearest_rounding(top, block, search):
    x = rng.standard_normal((400, 48)) @ rng.standard_normal((48, 48))  # correlated inputs
    w = rng.standard_normal((12, 48))
    h = Hessian()
    h.add_rows(x)
    if block is None:
        scale = (np.abs(w).max(axis=1, keepdims=True) / top).astype(np.float32)
        codes, got_scale = gptq_codes(w, h.matrix(), scale, top)
        near = np.clip(np.sign(w / scale) * np.floor(np.abs(w / scale) + 0.5), -top, top)
        full = scale
        np.testing.assert_array_equal(got_scale, scale)
    else:
        codes, got_scale = gptq_codes(w, h.matrix(), None, top, block, search=search)
        near, near_scale = per_block(w, 4, block, search=search)
        full = np.repeat(got_scale, block, axis=1)
        assert got_scale.shape == near_scale.shape
        near = near * np.repeat(near_scale, block, axis=1) / full
    low = -8 if top == 7 else -top  # int4: the nibble's spare code too
    assert codes.dtype == np.int8 and low <= codes.min() and codes.max() <= top
    assert _output_error(codes, full, w, x) < 0.8 * _output_error(near, full, w, x)


def _model():
    ember.seed(5)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU6(),
        nn.Conv2d(16, 32, 1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 40), nn.ReLU(), nn.Linear(40, 6),
    )


def _inputs(n):
    base = rng.standard_normal((n, 3, 1, 1)) * 0.5
    return (base + 0.3 * rng.standard_normal((n, 3, 10, 10))).astype(np.float32)


@pytest.mark.parametrize("scheme", ["int8-weights", "int4"])
def test_gptq_models_follow_the_float_model_closer(scheme):
    """Weight-only: the weights' rounding is the whole error (with int8 activations the
    activation codes' error can dominate a model this small)."""
    model = _model().eval()
    calib, test = _inputs(64), _inputs(64)
    want = model(ember.tensor(test)).numpy()
    base = Scheme.named(scheme).to_dict()
    base["min_params"] = 100
    errs = {}
    for rounding in ("nearest", "gptq"):
        q = ember.quantize(model, calib, Scheme(**{**base, "rounding": rounding}))
        errs[rounding] = float(np.mean((q(ember.tensor(test)).numpy() - want) ** 2))
    assert errs["gptq"] < errs["nearest"], errs


@pytest.mark.parametrize("scheme", ["int8-u8", "int4"])
def test_gptq_record_round_trip(tmp_path, scheme):
    """Loading needs no calibration (the codes are the record's), weight-only ones too."""
    model = _model().eval()
    x = _inputs(16)
    fields = {**Scheme.named(scheme).to_dict(), "rounding": "gptq", "min_params": 100}
    q = ember.quantize(model, x, Scheme(**fields))
    path = os.fspath(tmp_path / "q")
    ember.quantize.save(q, path)
    twin = ember.quantize.load(_model(), path)
    assert twin.scheme.rounding == "gptq"
    assert twin(ember.tensor(x)).tolist() == q(ember.tensor(x)).tolist()


def test_gptq_needs_calibration_and_a_known_rounding():
    with pytest.raises(ValueError, match="gptq.*needs calibration"):
        ember.quantize(_model(), None, Scheme(weights="int4", activations=False, block=64,
                                              rounding="gptq"))
    with pytest.raises(ValueError, match="rounding must be one of"):
        Scheme(rounding="stochastic")
