"""``ember.nn.functional``: the neural-network functions, with PyTorch's names and arguments.

Each function checks its arguments (errors name the op and the shapes) and calls one backend
op (``conv``, ``max_pool``, ``softmax``, ...), whose default body is built from primitives, so
every backend and ``Autodiff(...)`` support them.

>>> import ember
>>> from ember.nn import functional as F
>>> x = ember.ones(1, 3, 8, 8)
>>> y = F.relu(F.conv2d(x, ember.ones(4, 3, 3, 3), padding=1))
>>> F.max_pool2d(y, 2).shape
(1, 4, 4, 4)
"""

from .functional_act import (
    elu,
    gelu,
    hard_sigmoid,
    hard_swish,
    hardsigmoid,
    hardswish,
    leaky_relu,
    log_softmax,
    mish,
    relu,
    relu6,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from .functional_conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d
from .functional_norm import batch_norm, dropout, layer_norm, linear, one_hot, pad
from .functional_pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    interpolate,
    max_pool1d,
    max_pool2d,
)

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "dropout",
    "elu",
    "gelu",
    "hard_sigmoid",
    "hard_swish",
    "hardsigmoid",
    "hardswish",
    "interpolate",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "mish",
    "one_hot",
    "pad",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]
