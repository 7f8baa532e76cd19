"""Layers, split by concept; everything is re-exported from ``ember.nn``."""

from .activation import (
    ELU,
    GELU,
    HardSwish,
    Hardswish,
    LeakyReLU,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .attention import MultiHeadAttention, MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .dropout import Dropout
from .embedding import Embedding
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .norm import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
    RMSNorm,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .positional import PositionalEncoding, RotaryEncoding
from .recurrent import GRU, LSTM
from .transformer import (
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsample import Upsample

__all__ = [
    "ELU",
    "GELU",
    "GRU",
    "LSTM",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Bilinear",
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GroupNorm",
    "HardSwish",
    "Hardswish",
    "Identity",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MaxPool1d",
    "MaxPool2d",
    "Mish",
    "ModuleDict",
    "ModuleList",
    "MultiHeadAttention",
    "MultiheadAttention",
    "PReLU",
    "PositionalEncoding",
    "RMSNorm",
    "ReLU",
    "ReLU6",
    "RotaryEncoding",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
    "Upsample",
]
