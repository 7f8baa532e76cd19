"""What ``ember.quantize`` does to a model: a :class:`Scheme` is a :class:`Representation`
(how the quantized values are stored: what the kernels and the exporters read) and a
:class:`Calibration` (how codes and scales are chosen from the float model and data: what
only quantization time sees), each validated when it is made; the presets are named schemes.

>>> from ember.quantize import Calibration, Representation, Scheme
>>> w4 = Scheme(Representation("int4", "block", 32, activations=None))
>>> w4.representation.bits, w4.calibration.rounding
(4, 'nearest')
>>> Scheme.named("int4") == INT4, INT4.representation.block, INT4.calibration.scale_search
(True, 64, True)
>>> Representation("int4")  # int8 activations need int8 weights per channel
Traceback (most recent call last):
...
ember.errors.SchemeError: Representation: activations='int8' (integer kernels) need weights='int8' with granularity='channel'; int4 and blocks are weight-only: pass activations=None
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field, fields, replace

from ..errors import SchemeError

WEIGHT_TYPES = ("int8", "int4")
ACTIVATION_TYPES = ("int8", "uint8", None)
GRANULARITIES = ("channel", "block")
SCALE_DTYPES = ("float32",)
OBSERVERS = ("minmax", "percentile", "mse")
ROUNDINGS = ("nearest", "gptq")


def _one_of(where: str, name: str, value, valid: tuple) -> None:
    if value not in valid:
        raise SchemeError(f"{where}: {name} must be one of "
                          f"{', '.join(map(repr, valid))}, got {value!r}")


def _is(where: str, name: str, value, kind: type) -> None:
    if type(value) is not kind and not (kind is float and type(value) is int):
        article = "an" if kind is int else "a"
        raise SchemeError(f"{where}: {name} must be {article} {kind.__name__}, got {value!r}")


@dataclass(frozen=True)
class Representation:
    """How a quantized model stores its values (after Burn's ``QuantScheme``): symmetric
    codes (zero point 0) with float scales.

    ``weights``: the weight codes, ``"int8"`` (-127..127) or ``"int4"`` (-8..7, two a byte).
    ``granularity``: one scale per output ``"channel"``, or per ``"block"`` of ``block``
    consecutive weights of a channel (weight-only). ``activations``: each quantized layer's
    input as ``"int8"`` codes (one scale per tensor; integer kernels), ``"uint8"`` (codes
    0..255, twice the resolution, for the layers whose input was never negative in
    calibration — after ReLU/ReLU6 —, int8 for the others), or None: float activations, the
    weights dequantized when the layer runs (smaller, not faster). ``chain`` (with
    activations): a quantized layer followed, in a Sequential, by at most a ReLU/ReLU6 and
    modules that keep codes (zero padding, max pooling, flatten), then by another quantized
    layer, writes codes at that layer's input scale (the activation folded into the clamp),
    so activations stay codes in memory between them. ``symmetric``: zero point 0, the only
    kind the kernels take. ``scale_dtype``: the scales' dtype.

    >>> Representation("int4", "block", 64, activations=None).bits
    4
    >>> Representation(granularity="block", block=1)
    Traceback (most recent call last):
    ...
    ember.errors.SchemeError: Representation: block must be an int >= 2 with granularity='block', got 1
    """

    weights: str = "int8"
    granularity: str = "channel"
    block: int | None = None
    activations: str | None = "int8"
    chain: bool = True
    symmetric: bool = True
    scale_dtype: str = "float32"

    def __post_init__(self):
        where = "Representation"
        _one_of(where, "weights", self.weights, WEIGHT_TYPES)
        _one_of(where, "granularity", self.granularity, GRANULARITIES)
        _one_of(where, "activations", self.activations, ACTIVATION_TYPES)
        _one_of(where, "scale_dtype", self.scale_dtype, SCALE_DTYPES)
        _is(where, "chain", self.chain, bool)
        if self.granularity == "block":
            if type(self.block) is not int or self.block < 2:
                raise SchemeError(f"{where}: block must be an int >= 2 with "
                                  f"granularity='block', got {self.block!r}")
        elif self.block is not None:
            raise SchemeError(f"{where}: block={self.block!r} needs granularity='block' "
                              "(granularity='channel' has one scale per output channel)")
        if self.symmetric is not True:
            raise SchemeError(f"{where}: symmetric must be True: the kernels take codes with "
                              "zero point 0 (zero points are not implemented)")
        if self.activations and (self.weights != "int8" or self.granularity != "channel"):
            raise SchemeError(f"{where}: activations={self.activations!r} (integer kernels) "
                              "need weights='int8' with granularity='channel'; int4 and "
                              "blocks are weight-only: pass activations=None")

    @property
    def bits(self) -> int:
        """Bits per weight code: 8 or 4."""
        return 8 if self.weights == "int8" else 4


@dataclass(frozen=True)
class Calibration:
    """How codes and scales are chosen from the float model and the calibration data.

    ``observer``: each quantized input's range from its calibration values, the largest
    (``"minmax"``), the ``percentile``-th percentile of their magnitudes, or the clip with
    the least squared error (``"mse"``). ``rounding``: ``"nearest"`` rounds each weight to
    its nearest code; ``"gptq"`` rounds one input column after another, pushing each one's
    error onto the columns not yet rounded so the layer's output on the calibration data
    moves least (:mod:`ember.quantize.gptq`; needs calibration data, weight-only too).
    ``bias_correction``: each layer's bias absorbs the mean difference of its output from the
    float model's, per channel, on the first calibration batch, layer after layer (Nagel et
    al., 2019). ``range_search``: each layer's input range is the observer's candidate
    (largest, MSE, 99.99th/99.9th percentile) whose output is nearest the float layer's on
    the first calibration batch. ``scale_search`` (weight-only): each block's scale is the
    one leaving the least squared rounding error in the block (:func:`.weights.block_scales`)
    rather than max |w| / top. ``int8_short_rows`` (int4): layers whose rows are shorter
    than the block (depthwise convolutions) get int8 codes per output channel;
    ``int8_share``: so do the smallest other layers holding at most this share of their
    weights. ``keep_float``: layers that stay float, by path (``"stem.conv"``), by a part
    holding them (``"stem"``) or by their own name (``"depthwise_conv"``). ``min_params``
    (weight-only): layers with fewer weights stay float.

    >>> Calibration(observer="mse", rounding="gptq").observer
    'mse'
    >>> Calibration(int8_share=1.0)
    Traceback (most recent call last):
    ...
    ember.errors.SchemeError: Calibration: int8_share must be in [0, 1), got 1.0
    """

    observer: str = "minmax"
    percentile: float = 99.99
    rounding: str = "nearest"
    bias_correction: bool = False
    range_search: bool = False
    scale_search: bool = False
    int8_short_rows: bool = False
    int8_share: float = 0.0
    keep_float: tuple[str, ...] = field(default=())
    min_params: int = 1024

    def __post_init__(self):
        where = "Calibration"
        object.__setattr__(self, "keep_float", tuple(self.keep_float))  # a record's list
        _one_of(where, "observer", self.observer, OBSERVERS)
        _one_of(where, "rounding", self.rounding, ROUNDINGS)
        for name in ("bias_correction", "range_search", "scale_search", "int8_short_rows"):
            _is(where, name, getattr(self, name), bool)
        _is(where, "percentile", self.percentile, float)
        _is(where, "int8_share", self.int8_share, float)
        _is(where, "min_params", self.min_params, int)
        if not 0 < self.percentile <= 100:
            raise SchemeError(f"{where}: percentile must be in (0, 100], got {self.percentile}")
        if not 0 <= self.int8_share < 1:
            raise SchemeError(f"{where}: int8_share must be in [0, 1), got {self.int8_share}")
        if any(not isinstance(k, str) for k in self.keep_float):
            raise SchemeError(f"{where}: keep_float must hold layer paths or names (str), got "
                              f"{self.keep_float!r}")


#: the flat keywords of the Scheme before the split (records still hold them)
_FLAT_REPR = ("weights", "block", "activations", "unsigned", "chain")
_FLAT = _FLAT_REPR + tuple(f.name for f in fields(Calibration))


@dataclass(frozen=True, init=False)
class Scheme:
    """A quantization scheme: ``representation`` and ``calibration`` (dicts of their fields
    are taken too, as records hold them).

    The flat keywords of earlier versions (``Scheme(weights="int4", activations=False,
    block=32)``, ``unsigned=True``, ``observer=...``) are deprecated but still taken, alone
    or over the given parts; so are their names as read-only attributes
    (``scheme.activations`` is a bool there).

    >>> s = Scheme(Representation(activations="uint8"), Calibration(observer="mse"))
    >>> s.representation.activations, s.to_dict()["calibration"]["observer"], s.bits
    ('uint8', 'mse', 8)
    >>> Scheme.named(s.to_dict()) == s
    True
    >>> Scheme.from_record({"weights": "int4", "activations": False, "block": 32}).bits
    4
    """

    representation: Representation
    calibration: Calibration

    def __init__(self, representation: Representation | dict | None = None,
                 calibration: Calibration | dict | None = None, **flat):
        rep = (Representation(**representation) if isinstance(representation, dict)
               else representation or Representation())
        cal = (Calibration(**calibration) if isinstance(calibration, dict)
               else calibration or Calibration())
        if not isinstance(rep, Representation) or not isinstance(cal, Calibration):
            raise SchemeError(f"Scheme: takes a Representation and a Calibration (or dicts of "
                              f"their fields), got {type(rep).__name__} and "
                              f"{type(cal).__name__}")
        if flat:
            warnings.warn("Scheme: flat keywords (weights=, activations=, observer=, ...) are "
                          "deprecated; pass Scheme(Representation(...), Calibration(...))",
                          DeprecationWarning, stacklevel=2)
            rep, cal = _over(rep, cal, flat)
        object.__setattr__(self, "representation", rep)
        object.__setattr__(self, "calibration", cal)
        if rep.activations and (cal.scale_search or cal.int8_short_rows or cal.int8_share):
            raise SchemeError("Scheme: scale_search, int8_short_rows and int8_share are for "
                              "weight-only schemes (Representation(activations=None))")

    @property
    def bits(self) -> int:
        """Bits per weight code: 8 or 4."""
        return self.representation.bits

    def to_dict(self) -> dict:
        """``{"representation": {...}, "calibration": {...}}``: what ``quantize.save``
        stores in the record's metadata."""
        return {"representation": asdict(self.representation),
                "calibration": asdict(self.calibration)}

    @classmethod
    def named(cls, scheme: str | dict | Scheme) -> Scheme:
        """A Scheme from a preset name (:data:`PRESETS`), a dict (:meth:`to_dict`'s, or the
        deprecated flat fields), or a Scheme."""
        if isinstance(scheme, Scheme):
            return scheme
        if isinstance(scheme, dict):
            return cls(**scheme)
        if scheme not in PRESETS:
            raise SchemeError(f"unknown quantization scheme {scheme!r}; presets: "
                              f"{', '.join(PRESETS)} (or pass a Scheme)")
        return PRESETS[scheme]

    @classmethod
    def from_record(cls, fields: dict) -> Scheme:
        """The scheme a record's metadata holds: :meth:`to_dict`'s form, or the flat fields
        records were written with before the split (those without ``chain`` predate chains:
        they were not chained)."""
        if "representation" in fields or "calibration" in fields:
            return cls(**fields)
        rep, cal = _over(Representation(), Calibration(), {"chain": False, **fields})
        return cls(rep, cal)

    def __getattr__(self, name: str):
        """The deprecated flat names, read-only."""
        if name not in _FLAT:
            raise AttributeError(f"'Scheme' object has no attribute {name!r}")
        rep = self.representation
        if name == "activations":
            return rep.activations is not None
        if name == "unsigned":
            return rep.activations == "uint8"
        return getattr(rep if name in _FLAT_REPR else self.calibration, name)


def _over(rep: Representation, cal: Calibration, flat: dict):
    """``rep`` and ``cal`` with the deprecated flat fields in ``flat`` applied."""
    unknown = sorted(set(flat) - set(_FLAT))
    if unknown:
        raise SchemeError(f"Scheme: unknown field(s) {', '.join(unknown)}; valid: "
                          "representation, calibration, or the flat fields "
                          f"{', '.join(_FLAT)}")
    block = flat.get("block", rep.block)
    on = flat.get("activations", rep.activations is not None)
    unsigned = flat.get("unsigned", rep.activations == "uint8")
    rep = replace(rep, weights=flat.get("weights", rep.weights), block=block,
                  granularity="channel" if block is None else "block",
                  activations=("uint8" if unsigned else "int8") if on else None,
                  chain=flat.get("chain", rep.chain))
    return rep, replace(cal, **{k: v for k, v in flat.items() if k not in _FLAT_REPR})


WEIGHT_ONLY = Representation(activations=None)

INT8 = Scheme()
"""int8 weights per channel, int8 activations calibrated per tensor: integer kernels."""
INT8_U8 = Scheme(Representation(activations="uint8"),
                 Calibration(observer="mse", bias_correction=True, rounding="gptq"))
"""``INT8`` with unsigned codes after ReLU/ReLU6, MSE ranges, bias correction and GPTQ
rounding (needs calibration data; docs/guides/quantization.md has its accuracy)."""
INT8_WEIGHTS = Scheme(WEIGHT_ONLY)
"""Weight-only int8 per channel."""
INT4 = Scheme(Representation("int4", "block", 64, activations=None),
              Calibration(scale_search=True, int8_short_rows=True, int8_share=0.01))
"""Weight-only int4 in blocks of 64 with searched scales for the large layers; int8 per
channel for depthwise convolutions and the smallest layers holding 1 % of the weights."""
INT4_GPTQ = Scheme(INT4.representation, replace(INT4.calibration, rounding="gptq"))
"""``INT4`` with GPTQ rounding (needs calibration data)."""

PRESETS = {"int8": INT8, "int8-u8": INT8_U8, "int8-weights": INT8_WEIGHTS, "int4": INT4,
           "int4-gptq": INT4_GPTQ}
"""The named schemes ``quantize(model, scheme=...)`` takes: ``"int8"``, ``"int8-u8"``,
``"int8-weights"``, ``"int4"`` and ``"int4-gptq"``."""
