"""Small models covering every exportable layer, with seeded weights and BatchNorm stats."""

from __future__ import annotations

import ember
import numpy as np
from ember import nn
from ember.export import Residual


def _set(param, values) -> None:
    param.assign(ember.tensor(np.asarray(values, dtype=np.float32)))


def seeded(model, seed: int = 0):
    """Deterministic weights, and non-trivial BatchNorm running stats (eval mode)."""
    rng = np.random.default_rng(seed)
    for _, p in model.named_parameters():
        _set(p, rng.normal(0, 0.5, p.shape))
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean = ember.tensor(rng.normal(0, 0.3, n).astype(np.float32))
            m.running_var = ember.tensor(rng.uniform(0.5, 2.0, n).astype(np.float32))
    return model.eval()


def zoo():
    """(model, input_shape): every supported layer kind at least once."""
    model = nn.Sequential(
        nn.Conv2d(2, 6, 3, stride=2, padding=1), nn.BatchNorm2d(6), nn.ReLU6(),
        Residual(nn.Sequential(nn.Conv2d(6, 6, 3, padding=1, groups=6), nn.Hardswish())),
        Residual(nn.Sequential(nn.Conv2d(6, 6, (3, 1), padding=(1, 0), groups=3), nn.ReLU(),
                               Residual(nn.Sequential(nn.Conv2d(6, 6, 1), nn.Tanh())))),
        nn.BatchNorm2d(6),
        nn.MaxPool2d(2),
        nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False), nn.Sigmoid(),
        nn.Conv2d(6, 8, 2, padding="valid", bias=False), nn.AvgPool2d(2, padding=1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.5),
        nn.Linear(8, 12), nn.BatchNorm1d(12), nn.Identity(), nn.HardSwish(),
        nn.Linear(12, 5), nn.Softmax(dim=1),
    )
    return seeded(model), (2, 13, 11)
