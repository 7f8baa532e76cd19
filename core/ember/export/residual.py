"""``Residual(body)``: ``x + body(x)``, the residual block the exporter understands."""

from __future__ import annotations

from ..nn.module import Module


class Residual(Module):
    """Adds a block's input to its output (a ResNet/MobileNet skip connection).

    >>> import ember
    >>> from ember import nn
    >>> block = Residual(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    >>> block(ember.zeros(2, 4)).shape
    (2, 4)
    """

    def __init__(self, body: Module):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)
