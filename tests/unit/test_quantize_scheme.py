"""``ember.quantize.Scheme``: a Representation and a Calibration, each validated when made
(typed errors naming what would be valid), the presets as named values, the deprecated flat
keywords, and records written before the split (flat metadata, with or without ``chain``)
loading into the same model, which exports to the same ``.emb`` bytes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.errors import SchemeError
from ember.io import read_metadata
from ember.io import save as save_record
from ember.quantize import PRESETS, Calibration, FoldedActivation, Representation, Scheme
from ember.quantize import scheme as schemes

#: what Scheme.to_dict() wrote before the split, for the "int8" and "int4" presets
OLD_INT8 = {"weights": "int8", "activations": True, "block": None, "observer": "minmax",
            "percentile": 99.99, "min_params": 1024, "unsigned": False,
            "bias_correction": False, "keep_float": [], "range_search": False,
            "rounding": "nearest", "chain": True, "scale_search": False,
            "int8_short_rows": False, "int8_share": 0.0}
OLD_INT4 = {**OLD_INT8, "weights": "int4", "activations": False, "block": 64,
            "scale_search": True, "int8_short_rows": True, "int8_share": 0.01}


@pytest.mark.parametrize(("make", "match"), [
    (lambda: Representation(weights="int2"), "weights must be one of 'int8', 'int4'"),
    (lambda: Representation(granularity="tensor"), "granularity must be one of 'channel'"),
    (lambda: Representation(granularity="block"), "block must be an int >= 2"),
    (lambda: Representation(block=32, activations=None), "needs granularity='block'"),
    (lambda: Representation(activations="int4"), "activations must be one of"),
    (lambda: Representation("int4"), "need weights='int8' with granularity='channel'"),
    (lambda: Representation(symmetric=False), "zero points are not implemented"),
    (lambda: Representation(scale_dtype="float16"), "scale_dtype must be one of 'float32'"),
    (lambda: Representation(chain=1), "chain must be a bool"),
    (lambda: Calibration(observer="entropy"), "observer must be one of 'minmax'"),
    (lambda: Calibration(rounding="stochastic"), "rounding must be one of 'nearest', 'gptq'"),
    (lambda: Calibration(percentile=0), r"percentile must be in \(0, 100\]"),
    (lambda: Calibration(int8_share=-0.1), r"int8_share must be in \[0, 1\)"),
    (lambda: Calibration(min_params=1.5), "min_params must be an int"),
    (lambda: Calibration(keep_float=(3,)), "keep_float must hold layer paths"),
    (lambda: Scheme(calibration=Calibration(scale_search=True)), "weight-only"),
    (lambda: Scheme("int8"), "takes a Representation and a Calibration"),
    (lambda: Scheme.named("int3"), "presets: int8, int8-u8, int8-weights, int4, int4-gptq"),
])
def test_invalid_fields_are_typed_errors_naming_what_is_valid(make, match):
    with pytest.raises(SchemeError, match=match):
        make()


def test_presets_are_named_values():
    assert PRESETS == {"int8": schemes.INT8, "int8-u8": schemes.INT8_U8,
                       "int8-weights": schemes.INT8_WEIGHTS, "int4": schemes.INT4,
                       "int4-gptq": schemes.INT4_GPTQ}
    assert schemes.INT4.representation == Representation("int4", "block", 64, activations=None)
    assert schemes.INT4_GPTQ.calibration.rounding == "gptq"
    assert schemes.INT8_U8.representation.activations == "uint8"
    assert Scheme.named("int8-weights").representation.activations is None


def test_to_dict_round_trips():
    for scheme in PRESETS.values():
        assert Scheme.named(scheme.to_dict()) == scheme
        assert Scheme.from_record(scheme.to_dict()) == scheme


def test_the_flat_keywords_still_work_deprecated():
    with pytest.warns(DeprecationWarning, match="flat keywords"):
        s = Scheme(weights="int4", activations=False, block=32)
    assert s == Scheme(Representation("int4", "block", 32, activations=None))
    assert (s.weights, s.activations, s.block, s.bits, s.observer) == ("int4", False, 32, 4,
                                                                       "minmax")
    with pytest.warns(DeprecationWarning):
        u = Scheme(unsigned=True, observer="mse", keep_float=["stem"])
    assert u.representation.activations == "uint8" and u.unsigned
    assert u.calibration == Calibration(observer="mse", keep_float=("stem",))
    with pytest.warns(DeprecationWarning):  # the old idiom: a preset's fields, one changed
        k = Scheme(**{**schemes.INT8_U8.to_dict(), "keep_float": ("conv",)})
    assert k.representation == schemes.INT8_U8.representation
    assert k.calibration.keep_float == ("conv",) and k.calibration.rounding == "gptq"
    with pytest.raises(SchemeError, match="unknown field"), pytest.warns(DeprecationWarning):
        Scheme(bits=4)
    with pytest.raises(AttributeError):
        _ = s.bogus


def _cnn():
    ember.seed(4)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 1),
                         nn.ReLU(), nn.Flatten(), nn.Linear(8 * 36, 5))


@pytest.mark.parametrize("old", ["chained", "before chains"])
def test_old_int8_records_load_and_export_the_same(tmp_path, old):
    from ember.export import export

    x = ember.tensor(np.random.default_rng(5).normal(0, 1, (16, 3, 6, 6)).astype(np.float32))
    fields = dict(OLD_INT8)
    if old == "before chains":
        del fields["chain"]
    q = ember.quantize(_cnn(), x, Scheme(Representation(chain=old == "chained")))
    save_record(q, tmp_path / "old", metadata={ember.quantize.META_KEY: fields})
    ember.quantize.save(q, tmp_path / "new")
    assert "representation" in read_metadata(tmp_path / "new")["user"][
        ember.quantize.META_KEY]
    twin = ember.quantize.load(_cnn(), tmp_path / "old")
    assert twin.scheme == Scheme(Representation(chain=old == "chained"))
    assert any(isinstance(m, FoldedActivation) for m in twin.modules()) == (old == "chained")
    assert twin(x).tolist() == q(x).tolist()
    export(q, tmp_path / "q.emb", (3, 6, 6))
    export(twin, tmp_path / "twin.emb", (3, 6, 6))
    assert (tmp_path / "twin.emb").read_bytes() == (tmp_path / "q.emb").read_bytes()


def test_old_int4_records_load(tmp_path):
    ember.seed(2)
    model = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    q = ember.quantize(model, scheme="int4")
    save_record(q, tmp_path / "old", metadata={ember.quantize.META_KEY: OLD_INT4})
    twin = ember.quantize.load(model, tmp_path / "old")
    assert twin.scheme == schemes.INT4
    x = ember.randn(2, 256)
    assert twin(x).tolist() == q(x).tolist()
