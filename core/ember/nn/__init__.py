"""Neural-network building blocks; ``ember.nn.functional`` holds the functions."""

from . import functional, init, loss, utils
from .config import Config
from .layers import *
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, Parameter
