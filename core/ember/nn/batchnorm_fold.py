"""Fold each BatchNorm that follows a Conv2d (BatchNorm2d) or a Linear (BatchNorm1d) in a
Sequential into that layer, for inference (public as ``ember.nn.utils.fold_batchnorms``; the
arithmetic is :mod:`ember.contract.batchnorm_fold`)."""

from __future__ import annotations

from ..contract.batchnorm_fold import batchnorm_affine, fold_affine_into
from ..ops.creation import zeros
from ..ops.conversion import tensor
from .layers.container import Sequential
from .layers.conv import Conv2d
from .layers.linear import Identity, Linear
from .layers.norm import BatchNorm1d, BatchNorm2d
from .module import Module
from .parameter import Parameter

# the norm that reads a layer's output channels on dim 1
_NORM_AFTER = ((Conv2d, BatchNorm2d), (Linear, BatchNorm1d))


def _numpy(t):
    return None if t is None else t.numpy()


def fold_batchnorms(model: Module, values: bool = True) -> Module:
    """``model`` with each BatchNorm2d after a Conv2d and each BatchNorm1d after a Linear, in a
    Sequential, folded into that layer (in place, for inference): the norm's running
    statistics go into the layer's weight and bias and the norm becomes Identity, one pass
    over the activations instead of four, as onnxruntime's fusion does. The running
    statistics are used whatever the train/eval mode. ``values=False``: the structure only
    (each folded layer gets a zero bias if it had none; no numpy), for loading a record of a
    folded model into.

    >>> import ember
    >>> from ember import nn
    >>> net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).eval()
    >>> net[1].running_var = ember.tensor([4.0, 0.25])
    >>> x = ember.ones(1, 1, 4, 4)
    >>> before = net(x)
    >>> after = nn.utils.fold_batchnorms(net)(x)
    >>> type(net[1]).__name__, bool(((before - after).abs().max() < 1e-5).item())
    ('Identity', True)
    """
    for seq in [m for m in model.modules() if isinstance(m, Sequential)]:
        children = list(seq.named_children())
        for (_, layer), (name, bn) in zip(children, children[1:]):
            if not (any(isinstance(layer, lt) and isinstance(bn, nt) for lt, nt in _NORM_AFTER)
                    and bn.running_mean is not None
                    and layer.weight.shape[0] == bn.num_features):
                continue
            setattr(seq, name, Identity())
            w = layer.weight
            if not values:
                if layer.bias is None:
                    layer.bias = Parameter(zeros(w.shape[0], dtype=w.dtype, backend=w.backend))
                continue
            weight = w.numpy()
            scale, shift = batchnorm_affine(bn.running_mean.numpy(), bn.running_var.numpy(),
                                            bn.eps, _numpy(bn.weight), _numpy(bn.bias))
            folded, bias = fold_affine_into(weight, _numpy(layer.bias), scale, shift)
            w.assign(tensor(folded.astype(weight.dtype), dtype=w.dtype, backend=w.backend))
            bias = tensor(bias.astype(weight.dtype), dtype=w.dtype, backend=w.backend)
            if layer.bias is None:
                layer.bias = Parameter(bias)
            else:
                layer.bias.assign(bias)
    return model
