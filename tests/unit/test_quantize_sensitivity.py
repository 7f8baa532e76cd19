"""ember.quantize.sensitivity: the layer whose int8 input is built to lose most (one input
channel a thousand times the others) ranks first, keeping it float brings the quantized
model back, and the float model is left as it was."""

from __future__ import annotations

import numpy as np

import ember
from ember import nn
from ember.quantize import Scheme, sensitivity


def _model_with_an_outlier_channel():
    ember.seed(7)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 4)).eval()
    # channel 0 of layer 0's output x1000, layer 2's column 0 /1000: the same function, but
    # layer 2's per-tensor input range is all outlier
    w0, b0, w2 = model[0].weight.numpy(), model[0].bias.numpy(), model[2].weight.numpy()
    w0[0] *= 1000
    b0[0] *= 1000
    w2[:, 0] /= 1000
    model[0].weight = nn.Parameter(ember.tensor(w0))
    model[0].bias = nn.Parameter(ember.tensor(b0))
    model[2].weight = nn.Parameter(ember.tensor(w2))
    return model


def test_the_outlier_layer_ranks_first_and_keeping_it_float_helps():
    model = _model_with_an_outlier_channel()
    x = ember.randn(256, 8, generator=ember.Generator(1))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    ranking = sensitivity(model, x, "int8")
    assert [p for p, _ in ranking][0] == "2" and sorted(p for p, _ in ranking) == ["0", "2", "4"]
    assert all(e >= 0 for _, e in ranking) and ranking[0][1] > 10 * ranking[1][1]
    for k, v in model.state_dict().items():  # the float model is untouched
        np.testing.assert_array_equal(v.numpy(), before[k])

    want = model(x).numpy()
    errs = {}
    for keep in ((), ("2",)):
        q = ember.quantize(model, x, Scheme(keep_float=keep))
        errs[keep] = float(np.mean((q(x).numpy() - want) ** 2))
    assert type(ember.quantize(model, x, Scheme(keep_float=("2",)))[2]) is nn.Linear
    assert errs[("2",)] < errs[()] / 10
