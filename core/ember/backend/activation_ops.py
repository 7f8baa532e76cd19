"""Activation ops (float tensors). All composites; backends override for speed."""

from __future__ import annotations


class ActivationOps:
    def relu(self, x):
        raise NotImplementedError  # filled in by the nn.functional work
