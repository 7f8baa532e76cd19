"""What ``ember.quantize`` does to a model: :class:`Scheme` and the named presets.

>>> from ember.quantize import Scheme
>>> Scheme.named("int4")
Scheme(weights='int4', activations=False, block=64, observer='minmax', percentile=99.99, min_params=1024, unsigned=False, bias_correction=False, keep_float=(), range_search=False, rounding='nearest', chain=True, scale_search=True, int8_short_rows=True, int8_share=0.01)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

OBSERVERS = ("minmax", "percentile", "mse")
ROUNDINGS = ("nearest", "gptq")


@dataclass(frozen=True)
class Scheme:
    """A quantization scheme.

    ``weights``: ``"int8"`` or ``"int4"`` codes, symmetric (zero point 0). ``activations``:
    True quantizes each layer's input to int8 per tensor (scale from the ``observer`` on the
    calibration data) and runs integer kernels; False keeps float activations and stores the
    weights only (dequantized when the layer runs: smaller, not faster). ``block``: None is
    one scale per output channel; an int is one scale per ``block`` consecutive weights of a
    channel (weight-only). Layers with fewer than ``min_params`` weights stay float
    (weight-only schemes; they hardly count in the size). ``unsigned``: layers whose input
    was never negative in calibration (after ReLU/ReLU6) get unsigned codes 0..255, twice
    the resolution (the ``*_u8`` ops). ``bias_correction``: each layer's bias absorbs the
    mean difference of its output from the float model's, per channel, on the first
    calibration batch, layer after layer (empirical bias correction; Nagel et al., 2019).
    ``keep_float``: layers that stay float (mixed precision, for the layers int8 hurts most),
    by path (``"stem.conv"``), by a part holding them (``"stem"``) or by their own name
    (``"depthwise_conv"``: every layer of that name). ``range_search``: each layer's input
    range is the observer's candidate (largest, MSE, 99.99th/99.9th percentile) whose
    output is nearest the float layer's on the first calibration batch, layer after layer
    (the observer must keep samples: not ``"minmax"``). ``rounding``: ``"nearest"`` rounds
    each weight to its nearest code; ``"gptq"`` rounds the weights one input column after
    another, pushing each one's error onto the columns not yet rounded so the layer's output
    on the calibration data moves least (:mod:`ember.quantize.gptq`; needs calibration data,
    for weight-only schemes too). ``chain``: a quantized layer followed (in a Sequential) by
    at most a ReLU/ReLU6 and modules that keep codes (zero padding, max pooling, flatten), then
    by another quantized layer, writes int8 codes at that layer's input scale (the
    activation folded into its clamp): the activations stay int8 in memory between them,
    and the next layer doesn't quantize its input (records of older schemes, without the
    field, load unchained). ``scale_search`` (weight-only): each block's scale is the one
    that leaves the least squared rounding error in the block (1.00, 0.99, ..., 0.50 of max
    |w| / top; int4 also of -w_max / 8, which uses code -8: :func:`.weights.block_scales`)
    rather than max |w| / top itself: clipping the largest weight a little buys a finer step
    for all the others. ``int8_short_rows`` (int4
    schemes): layers whose rows (weights per output channel) are shorter than ``block`` get
    int8 codes with one scale per output channel (depthwise convolutions: 9 or 25 weights an
    output, whose errors don't average out); ``int8_share``: so do the smallest of the other
    layers, as many as hold at most this share of their weights (int4 for the largest
    layers: the small ones hardly count in the size and lose the most to 4 bits).

    >>> s = Scheme(weights="int4", activations=False, block=32)
    >>> s.bits, s.to_dict()["block"], Scheme.named("int8").activations
    (4, 32, True)
    >>> Scheme.named({"weights": "int8", "activations": False}).bits
    8
    """

    weights: str = "int8"
    activations: bool = True
    block: int | None = None
    observer: str = "minmax"
    percentile: float = 99.99
    min_params: int = 1024
    unsigned: bool = False
    bias_correction: bool = False
    keep_float: tuple[str, ...] = ()
    range_search: bool = False
    rounding: str = "nearest"
    chain: bool = True
    scale_search: bool = False
    int8_short_rows: bool = False
    int8_share: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "keep_float", tuple(self.keep_float))  # a record's list
        if self.weights not in ("int8", "int4"):
            raise ValueError(f"Scheme: weights must be 'int8' or 'int4', got {self.weights!r}")
        if self.observer not in OBSERVERS:
            raise ValueError(f"Scheme: observer must be one of {OBSERVERS}, got "
                             f"{self.observer!r}")
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"Scheme: rounding must be one of {ROUNDINGS}, got "
                             f"{self.rounding!r}")
        if self.activations and (self.weights != "int8" or self.block is not None):
            raise ValueError("Scheme: int8 activations need int8 weights per channel "
                             "(block=None); int4 and blocks are weight-only")
        if self.activations and (self.scale_search or self.int8_short_rows or self.int8_share):
            raise ValueError("Scheme: scale_search, int8_short_rows and int8_share are for "
                             "weight-only schemes (activations=False)")
        if not 0 <= self.int8_share < 1:
            raise ValueError(f"Scheme: int8_share must be in [0, 1), got {self.int8_share}")
        if self.block is not None and self.block < 2:
            raise ValueError(f"Scheme: block must be None or >= 2, got {self.block}")
        if not 0 < self.percentile <= 100:
            raise ValueError(f"Scheme: percentile must be in (0, 100], got {self.percentile}")

    @property
    def bits(self) -> int:
        """Bits per weight code: 8 or 4."""
        return 8 if self.weights == "int8" else 4

    def to_dict(self) -> dict:
        """The fields as a dict (what ``quantize.save`` stores in the record's metadata)."""
        return asdict(self)

    @classmethod
    def named(cls, scheme: str | dict | Scheme) -> Scheme:
        """A Scheme from a preset name (:data:`PRESETS`), a dict of fields, or a Scheme."""
        if isinstance(scheme, Scheme):
            return scheme
        if isinstance(scheme, dict):
            return cls(**scheme)
        if scheme not in PRESETS:
            raise ValueError(f"unknown quantization scheme {scheme!r}; presets: "
                             f"{', '.join(PRESETS)} (or pass a Scheme)")
        return PRESETS[scheme]


PRESETS = {
    "int8": Scheme(),
    # unsigned codes after ReLU/ReLU6, MSE ranges, bias correction, GPTQ rounding:
    # EfficientNet-Lite0 keeps far more of its float32 predictions (benchmarks/RESULTS.md)
    "int8-u8": Scheme(observer="mse", unsigned=True, bias_correction=True, rounding="gptq"),
    "int8-weights": Scheme(activations=False, block=None),
    # int4 blocks of 64 (searched scales) for the large layers, int8 per channel for the
    # depthwise convs and the smallest layers holding 1 % of the rest: EfficientNet-Lite0
    # 6.5x smaller than float32, 93.5 % top-1 agreement with it on labelled ImageNet images
    # (int4 everywhere: 23 %; docs/guides/quantization.md, benchmarks/RESULTS.md)
    "int4": Scheme(weights="int4", activations=False, block=64, scale_search=True,
                   int8_short_rows=True, int8_share=0.01),
    # the same with GPTQ rounding (needs calibration data): closer still
    "int4-gptq": Scheme(weights="int4", activations=False, block=64, scale_search=True,
                        int8_short_rows=True, int8_share=0.01, rounding="gptq"),
}
"""The named schemes ``quantize(model, scheme=...)`` takes: ``"int8"``, ``"int8-u8"``,
``"int8-weights"``, ``"int4"`` and ``"int4-gptq"``."""
