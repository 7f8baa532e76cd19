"""The MNIST demo's model: a small CNN that every Ember target can run.

Input: (N, 1, 28, 28) float images scaled to [0, 1] then normalised with MNIST's mean/std.
Only layers the browser, GPU and microcontroller runtimes all support: Conv2d, ReLU,
MaxPool2d, Flatten, Linear.

>>> import ember
>>> model = mnist_cnn()
>>> model(ember.zeros(2, 1, 28, 28)).shape
(2, 10)
"""

from __future__ import annotations

from .. import nn

MEAN, STD = 0.1307, 0.3081  # MNIST pixel statistics, applied after scaling to [0, 1]


def mnist_cnn(channels: tuple[int, int] = (16, 32), hidden: int = 64) -> nn.Sequential:
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 7 * 7, hidden), nn.ReLU(), nn.Linear(hidden, 10),
    )


def preprocess(images_uint8):
    """(N, 784) uint8 tensor → (N, 1, 28, 28) normalised float tensor, on its backend."""
    x = images_uint8.reshape(-1, 1, 28, 28).float() / 255.0
    return (x - MEAN) / STD
