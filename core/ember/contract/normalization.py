"""Normalisation: layer norm and (inference-form) batch norm on float tensors.

Their gradients come from the primitives of the default bodies (Autodiff runs them); a
backend's faster override is used when no gradient is recorded.
"""

from __future__ import annotations

from . import infer
from .prims import like
from .registry import Kind, declare
from .windows import along, trailing


layer_norm = declare(
    "layer_norm", Kind.MODULE, "x, normalized_ndim, weight, bias, eps", infer.same,
    tensors="x, weight, bias",
)
batch_norm = declare(
    "batch_norm", Kind.MODULE, "x, mean, var, weight, bias, eps", infer.same,
    tensors="x, mean, var, weight, bias",
)


@layer_norm.implements
def layer_norm(self, x, normalized_ndim: int, weight, bias, eps: float):
    """Normalise over the last ``normalized_ndim`` dims (biased variance); ``weight`` and
    ``bias`` have those dims' shape, or are None."""
    shape = tuple(self.shape(x))
    dims = tuple(range(len(shape) - normalized_ndim, len(shape)))
    mean = self.expand(self.float_mean(x, dims), shape)
    var = self.float_var(x, dims, 0)
    inv = self.float_rsqrt(self.float_add(var, like(self, var, eps)))
    y = self.float_mul(self.float_sub(x, mean), self.expand(inv, shape))
    if weight is not None:
        y = self.float_mul(y, trailing(self, weight, shape))
    if bias is not None:
        y = self.float_add(y, trailing(self, bias, shape))
    return y


@batch_norm.implements
def batch_norm(self, x, mean, var, weight, bias, eps: float):
    """Inference-form batch norm over dim 1 with given (C,) statistics."""
    shape, dtype = tuple(self.shape(x)), self.dtype(x)
    inv = self.float_rsqrt(self.float_add(var, like(self, var, eps)))
    y = self.float_sub(x, along(self, mean, shape, 1, dtype))
    y = self.float_mul(y, along(self, inv, shape, 1, dtype))
    if weight is not None:
        y = self.float_mul(y, along(self, weight, shape, 1, dtype))
    if bias is not None:
        y = self.float_add(y, along(self, bias, shape, 1, dtype))
    return y
