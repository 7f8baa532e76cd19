"""Typed layer configs (Burn's ``LinearConfig::new(..).init(device)``) that save as JSON.

A config holds a layer's hyper-parameters; ``init(backend=..., dtype=...)`` builds the layer.
``Config.from_json`` restores any registered config type from its ``"type"`` field.

>>> from ember.nn.config import LinearConfig, Config
>>> cfg = LinearConfig(784, 128)
>>> text = cfg.to_json()
>>> Config.from_json(text) == cfg
True
>>> cfg.init().weight.shape
(128, 784)
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

_REGISTRY: dict[str, type[Config]] = {}


@dataclass
class Config:
    """Base of every config: JSON round trip and ``init``.

    >>> from ember.nn.config import Config, LayerNormConfig
    >>> cfg = LayerNormConfig(8)
    >>> cfg.to_dict()["type"], Config.from_dict(cfg.to_dict()) == cfg
    ('LayerNormConfig', True)
    >>> Config.from_json(cfg.to_json()) == cfg, type(cfg.init()).__name__
    (True, 'LayerNorm')
    """

    _module: ClassVar[str] = ""  # "module:Class" of the layer this config builds

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict, with the config's class name under ``"type"`` (nested configs too)."""
        out = {"type": type(self).__name__}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if isinstance(value, Config) else value
        return out

    def to_json(self, path: str | os.PathLike | None = None, indent: int = 2) -> str:
        """The config as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        """The config a :meth:`to_dict` dict describes (its ``"type"`` picks the class)."""
        data = dict(data)
        name = data.pop("type", cls.__name__)
        klass = _REGISTRY.get(name)
        if klass is None or (cls is not Config and not issubclass(klass, cls)):
            raise ValueError(f"{cls.__name__}.from_dict: unknown config type {name!r}")
        names = {f.name for f in dataclasses.fields(klass)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{name}: unknown fields {sorted(unknown)}; valid: {sorted(names)}")
        for key, value in data.items():
            if isinstance(value, dict) and "type" in value and value["type"] in _REGISTRY:
                data[key] = Config.from_dict(value)
            elif isinstance(value, list):
                data[key] = tuple(value)  # JSON has no tuples; configs use them for sizes
        return klass(**data)

    @classmethod
    def from_json(cls, text_or_path: str | os.PathLike) -> Config:
        """Parse JSON text, or read it from a file path."""
        text = str(text_or_path)
        if not text.lstrip().startswith("{"):
            with open(text_or_path, encoding="utf-8") as fh:
                text = fh.read()
        return cls.from_dict(json.loads(text))

    def _kwargs(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def init(self, backend=None, dtype=None):
        """Build the layer (its parameters on ``backend``, in ``dtype``)."""
        module, _, name = self._module.partition(":")
        layer = getattr(importlib.import_module(module), name)
        return layer(**self._kwargs(), backend=backend, dtype=dtype)


_L = "ember.nn.layers."


@dataclass
class LinearConfig(Config):
    d_in: int
    d_out: int
    bias: bool = True
    _module: ClassVar[str] = _L + "linear:Linear"

    def _kwargs(self):
        return {"in_features": self.d_in, "out_features": self.d_out, "bias": self.bias}


@dataclass
class BilinearConfig(Config):
    in1_features: int
    in2_features: int
    out_features: int
    bias: bool = True
    _module: ClassVar[str] = _L + "linear:Bilinear"


@dataclass
class EmbeddingConfig(Config):
    num_embeddings: int
    embedding_dim: int
    padding_idx: int | None = None
    _module: ClassVar[str] = _L + "embedding:Embedding"


@dataclass
class Conv2dConfig(Config):
    in_channels: int
    out_channels: int
    kernel_size: int | tuple = 3
    stride: int | tuple = 1
    padding: int | tuple | str = 0
    dilation: int | tuple = 1
    groups: int = 1
    bias: bool = True
    _module: ClassVar[str] = _L + "conv:Conv2d"


@dataclass
class Conv1dConfig(Conv2dConfig):
    _module: ClassVar[str] = _L + "conv:Conv1d"


@dataclass
class ConvTranspose2dConfig(Config):
    in_channels: int
    out_channels: int
    kernel_size: int | tuple = 3
    stride: int | tuple = 1
    padding: int | tuple = 0
    output_padding: int | tuple = 0
    groups: int = 1
    bias: bool = True
    dilation: int | tuple = 1
    _module: ClassVar[str] = _L + "conv:ConvTranspose2d"


@dataclass
class ConvTranspose1dConfig(ConvTranspose2dConfig):
    _module: ClassVar[str] = _L + "conv:ConvTranspose1d"


@dataclass
class BatchNormConfig(Config):
    num_features: int
    eps: float = 1e-5
    momentum: float | None = 0.1
    affine: bool = True
    track_running_stats: bool = True
    dims: int = 2  # spatial dims + 2: 2 → BatchNorm1d for (N, C) / (N, C, L), 4 → BatchNorm2d

    def _kwargs(self):
        kw = super()._kwargs()
        kw.pop("dims")
        return kw

    def init(self, backend=None, dtype=None):
        from .layers.norm import BatchNorm1d, BatchNorm2d

        layer = BatchNorm2d if self.dims == 4 else BatchNorm1d
        return layer(**self._kwargs(), backend=backend, dtype=dtype)


@dataclass
class LayerNormConfig(Config):
    normalized_shape: int | tuple
    eps: float = 1e-5
    elementwise_affine: bool = True
    bias: bool = True
    _module: ClassVar[str] = _L + "norm:LayerNorm"


@dataclass
class GroupNormConfig(Config):
    num_groups: int
    num_channels: int
    eps: float = 1e-5
    affine: bool = True
    _module: ClassVar[str] = _L + "norm:GroupNorm"


@dataclass
class RMSNormConfig(Config):
    normalized_shape: int | tuple
    eps: float | None = None
    elementwise_affine: bool = True
    _module: ClassVar[str] = _L + "norm:RMSNorm"


@dataclass
class DropoutConfig(Config):
    p: float = 0.5

    def init(self, backend=None, dtype=None):
        from .layers.dropout import Dropout

        return Dropout(self.p)


@dataclass
class MultiHeadAttentionConfig(Config):
    embed_dim: int
    num_heads: int
    dropout: float = 0.0
    bias: bool = True
    batch_first: bool = True
    _module: ClassVar[str] = _L + "attention:MultiheadAttention"


@dataclass
class TransformerEncoderLayerConfig(Config):
    d_model: int
    nhead: int
    dim_feedforward: int = 2048
    dropout: float = 0.1
    activation: str = "relu"
    layer_norm_eps: float = 1e-5
    batch_first: bool = True
    norm_first: bool = False
    bias: bool = True
    _module: ClassVar[str] = _L + "transformer:TransformerEncoderLayer"


@dataclass
class TransformerDecoderLayerConfig(TransformerEncoderLayerConfig):
    _module: ClassVar[str] = _L + "transformer:TransformerDecoderLayer"


@dataclass
class TransformerEncoderConfig(Config):
    layer: TransformerEncoderLayerConfig = field(
        default_factory=lambda: TransformerEncoderLayerConfig(512, 8))
    num_layers: int = 6
    final_norm: bool = False

    def init(self, backend=None, dtype=None):
        from .layers.norm import LayerNorm
        from .layers.transformer import TransformerEncoder

        norm = LayerNorm(self.layer.d_model, self.layer.layer_norm_eps, backend=backend,
                         dtype=dtype) if self.final_norm else None
        return TransformerEncoder(self.layer.init(backend, dtype), self.num_layers, norm)


@dataclass
class PositionalEncodingConfig(Config):
    d_model: int
    dropout: float = 0.0
    max_len: int = 5000
    batch_first: bool = True
    _module: ClassVar[str] = _L + "positional:PositionalEncoding"


@dataclass
class LSTMConfig(Config):
    input_size: int
    hidden_size: int
    num_layers: int = 1
    bias: bool = True
    batch_first: bool = False
    dropout: float = 0.0
    bidirectional: bool = False
    _module: ClassVar[str] = _L + "recurrent:LSTM"


@dataclass
class GRUConfig(LSTMConfig):
    _module: ClassVar[str] = _L + "recurrent:GRU"
