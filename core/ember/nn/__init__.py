"""Neural-network building blocks: modules and layers, the losses' module forms,
``ember.nn.functional`` (the functions, losses included), ``ember.nn.init`` (initialisers) and
``ember.nn.utils`` (gradient clipping, parameter vectors, BatchNorm folding)."""

from . import functional, init, layers, loss, utils
from .config import Config
from .layers import *  # noqa: F403 - every layer: layers.__all__
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

# the submodules functional, init, loss and utils are public too (ember.nn.functional...)
__all__ = [
    *layers.__all__,
    "BCELoss",
    "BCEWithLogitsLoss",
    "Config",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "Module",
    "NLLLoss",
    "Parameter",
    "SmoothL1Loss",
]
