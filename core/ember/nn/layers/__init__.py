"""Layers, split by concept; everything is re-exported from ``ember.nn``."""

from .activation import (
    ELU, GELU, Hardswish, HardSwish, LeakyReLU, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid,
    SiLU, Softmax, Tanh,
)
from .attention import MultiHeadAttention, MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .dropout import Dropout
from .embedding import Embedding
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .norm import (
    BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm1d, InstanceNorm2d, LayerNorm, RMSNorm,
)
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d,
)
from .positional import PositionalEncoding, RotaryEncoding
from .recurrent import GRU, LSTM
from .transformer import (
    TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from .upsample import Upsample

__all__ = [
    "ELU", "GELU", "Hardswish", "HardSwish", "LeakyReLU", "LogSoftmax", "Mish", "PReLU", "ReLU",
    "ReLU6", "Sigmoid", "SiLU", "Softmax", "Tanh", "MultiHeadAttention", "MultiheadAttention",
    "ModuleDict", "ModuleList", "Sequential", "Conv1d", "Conv2d", "ConvTranspose1d",
    "ConvTranspose2d", "Dropout", "Embedding", "Bilinear", "Flatten", "Identity", "Linear",
    "Unflatten", "BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
    "LayerNorm", "RMSNorm", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d",
    "MaxPool1d", "MaxPool2d", "PositionalEncoding", "RotaryEncoding", "GRU", "LSTM",
    "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer", "Upsample",
]
