"""ember.quantize.distill: int8 fine-tuning by distillation from the float model on unlabelled
inputs — its error against a numpy float64 reference of the float model, its records, its
chains and its argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.quantize import QuantConv2d, QuantLinear, distill


def _outlier_mlp():
    """An MLP and inputs whose first feature is 400 in one row of 16: the per-tensor input
    range of the first layer covers the outliers, so PTQ's int8 codes of the ordinary
    values are coarse."""
    ember.seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 4))
    rng = np.random.default_rng(0)
    train = rng.normal(size=(256, 8)).astype(np.float32)
    train[::16, 0] = 400.0
    held = rng.normal(size=(256, 8)).astype(np.float32)
    return model, train, held


def _float64(model, x):
    h = x.astype(np.float64)
    for m in model:
        if isinstance(m, nn.Linear):
            h = h @ m.weight.numpy().astype(np.float64).T + m.bias.numpy().astype(np.float64)
        else:
            h = np.maximum(h, 0.0)
    return h


def _rms(q, x, ref):
    return float(np.sqrt(np.mean((q(ember.tensor(x)).numpy().astype(np.float64) - ref) ** 2)))


@pytest.mark.parametrize("loss,learn", [("mse", False), ("kl", True)])
def test_distill_lowers_the_int8_error_on_held_out_inputs(loss, learn):
    model, train, held = _outlier_mlp()
    ref = _float64(model, held)
    ptq = _rms(ember.quantize(model, train, "int8"), held, ref)
    q = distill(model, train, "int8", steps=100, batch=32, lr=1e-3, loss=loss,
                learn_ranges=learn, progress=False)
    assert _rms(q, held, ref) < 0.85 * ptq
    assert model.training  # the float model is left in its own mode


def test_distilled_model_is_chained_and_its_record_loads(tmp_path):
    model, train, held = _outlier_mlp()
    q = distill(model, train, steps=5, batch=16, progress=False)
    assert [type(m).__name__ for m in q] == ["QuantLinear", "FoldedActivation", "QuantLinear",
                                             "FoldedActivation", "QuantLinear"]
    assert q[0](ember.tensor(held[:2])).dtype.name == "uint8"  # codes for the next layer
    assert q.scheme == ember.quantize.Scheme.named("int8-u8")
    ember.quantize.save(q, tmp_path / "q")
    fresh = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 4))
    twin = ember.quantize.load(fresh, tmp_path / "q")
    assert twin(ember.tensor(held)).tolist() == q(ember.tensor(held)).tolist()


def test_distill_crops_images_of_any_size_for_a_conv_model():
    ember.seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8 * 36, 5)).eval()
    rng = np.random.default_rng(1)
    photos = [rng.uniform(-1, 1, (3, 20, 30)).astype(np.float32),
              rng.uniform(-1, 1, (3, 16, 12)).astype(np.float32)]
    q = distill(model, photos, "int8", size=6, steps=4, batch=4, mixup=0.4, progress=False)
    assert isinstance(q[0], QuantConv2d) and isinstance(q[-1], QuantLinear)
    x = ember.tensor(rng.uniform(-1, 1, (3, 3, 6, 6)).astype(np.float32))
    assert q(x).shape == (3, 5)
    assert float((q(x) - model(x)).abs().max()) < 0.5


@pytest.mark.parametrize("kwargs,match", [
    ({"scheme": "int4"}, "weight-only"),
    ({"steps": 0}, "steps must be a positive int"),
    ({"batch": 2.5}, "batch must be a positive int"),
    ({"lr": 0.0}, "must be > 0"),
    ({"temperature": -1.0}, "temperature=-1.0"),
    ({"loss": "ce"}, "loss must be one of"),
    ({"crop_scale": (0.5, 1.5)}, "crop_scale"),
    ({"images": []}, "images is empty"),
    ({"images": [np.zeros((3, 4, 4)), np.zeros((1, 4, 4))]}, "rank and channel count"),
    ({"images": [np.zeros((3, 4, 4)), np.zeros((3, 5, 4))]}, "give size="),
    ({"images": [...]}, "images must be numbers"),
])
def test_bad_arguments_are_refused_with_the_valid_choices(kwargs, match):
    model = nn.Sequential(nn.Linear(4, 2))
    args = {"images": np.zeros((8, 4), dtype=np.float32), "progress": False, **kwargs}
    with pytest.raises(ValueError, match=match):
        distill(model, **args)
