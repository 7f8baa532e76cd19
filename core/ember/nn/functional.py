"""``ember.nn.functional``: the neural-network functions, with PyTorch's names and arguments
(the losses too: ``F.cross_entropy``, ``F.mse_loss``...).

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
from .functional_loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
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
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cosine_embedding_loss",
    "cross_entropy",
    "dropout",
    "elu",
    "gelu",
    "hard_sigmoid",
    "hard_swish",
    "hardsigmoid",
    "hardswish",
    "huber_loss",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "mish",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pad",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "tanh",
]
