"""Weight-only int4 (the ``"int4"`` preset): the per-block scale search against a brute-force
numpy search of each block, GPTQ's searched scales against nearest rounding's where GPTQ has
nothing to push (uncorrelated inputs), the layers an int4 scheme leaves at int8 per channel,
and the preset's model through a record and the MCU export."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.quantize import Scheme, WeightOnlyConv2d, WeightOnlyLinear
from ember.quantize.gptq import gptq_codes
from ember.quantize.weights import block_scales, per_block

rng = np.random.default_rng(23)


def _brute_force_scales(blocks, top):
    """Each block's scale, one block and one candidate at a time: the float32 scale whose
    nearest codes (half away from zero, clipped to -8..7 for int4, -127..127 for int8) leave
    the least squared error, the first on a tie: 1.00, 0.99, ..., 0.50 of max |w| / top, then
    (int4) of -w / 8 for the block's weight w of largest magnitude."""
    low = -8 if top == 7 else -top
    out = np.empty(len(blocks), dtype=np.float32)
    for i, b in enumerate(blocks):
        amax = np.abs(b).max()
        big = b[np.argmax(np.abs(b))]
        tops = [amax / top] + ([-big / 8] if top == 7 else [])
        best = None
        for t in tops:
            for step in range(51):
                s = np.float32(t * (100 - step) / 100) if amax > 0 else np.float32(1)
                v = b / np.float64(s)
                codes = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), low, top)
                err = np.sum((codes * np.float64(s) - b) ** 2)
                if best is None or err < best[0]:
                    best = (err, s)
        out[i] = best[1]
    return out


@pytest.mark.parametrize("top", [7, 127])
def test_scale_search_picks_each_blocks_least_squared_error(top):
    # Gaussian blocks, heavy-tailed ones (one outlier), an all-zero block, a constant one
    blocks = np.concatenate([rng.standard_normal((40, 16)), rng.standard_t(2, (40, 16)),
                             np.zeros((1, 16)), np.full((1, 16), 0.3)])
    got = block_scales(blocks, top, search=True)
    np.testing.assert_array_equal(got, _brute_force_scales(blocks, top))
    plain = block_scales(blocks, top)
    assert (np.abs(got) <= plain).all() and got[-2] == 1 and abs(got[-1]) <= plain[-1]


def _block_error(w, bits, block, search):
    codes, scale = per_block(w, bits, block, search=search)
    assert codes.min() >= (-8 if bits == 4 else -127) and codes.max() <= 2 ** (bits - 1) - 1
    full = np.repeat(scale.astype(np.float64), block, axis=1)[:, :w.shape[1]]
    return np.sum((codes * full - w) ** 2), scale


def test_searched_scales_leave_less_error_than_max_abs_ones():
    w = rng.standard_normal((32, 200))  # rows of 200: blocks of 64, 64, 64 and 8
    plain, _ = _block_error(w, 4, 64, search=False)
    searched, scale = _block_error(w, 4, 64, search=True)
    assert searched < 0.8 * plain  # Gaussian weights: about 30 % less at 4 bits
    padded = np.pad(w, ((0, 0), (0, 56))).reshape(-1, 64)  # the last block's zeros: no error
    np.testing.assert_array_equal(scale, _brute_force_scales(padded, 7).reshape(32, 4))


def test_gptq_with_uncorrelated_inputs_is_nearest_rounding_with_searched_scales():
    """GPTQ pushes a weight's error along the input correlations: with H = I there are none,
    and its codes and searched block scales are those of nearest rounding."""
    w = rng.standard_normal((12, 96))
    codes, scales = gptq_codes(w, np.eye(96)[None], None, 7, block=32, search=True)
    want_codes, want_scales = per_block(w, 4, 32, search=True)
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(codes, want_codes)


def _model():
    ember.seed(4)
    return nn.Sequential(
        nn.Conv2d(3, 128, 3, padding=1), nn.ReLU6(),                # 3456 weights, rows of 27
        nn.Conv2d(128, 128, 3, padding=1, groups=128), nn.ReLU6(),  # depthwise: rows of 9
        nn.Conv2d(128, 64, 1), nn.ReLU6(),                          # 8192 weights, rows of 128
        nn.Conv2d(64, 768, 1), nn.ReLU6(),                          # 49152, rows of 64
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(768, 10),  # 7680
    ).eval()


def _formats(q):
    return [(m.bits, m.block) for m in q if isinstance(m, (WeightOnlyConv2d, WeightOnlyLinear))]


def test_int4_preset_keeps_short_rows_at_int8_per_channel():
    model = _model()
    q = ember.quantize(model, None, "int4")
    # the rest: 8192 + 49152 + 7680 weights; the smallest (7680) is over 1 % of them
    assert _formats(q) == [(8, 27), (8, 9), (4, 64), (4, 64), (4, 64)]
    assert q[0].weight_scale.shape == (128, 1) and q[2].weight_scale.shape == (128, 1)
    big = q[6]
    codes, scale = per_block(model[6].weight.numpy(), 4, 64, search=True)
    np.testing.assert_array_equal(big.weight_scale.numpy(), scale)
    want = codes.astype(np.float64) * scale.astype(np.float64)
    np.testing.assert_allclose(big.dequantized().numpy().reshape(768, 64), want, rtol=1e-6)
    # the fields one by one: every layer of >= min_params weights in int4 without them
    plain = ember.quantize(model, None, Scheme(weights="int4", activations=False, block=64))
    assert [bits for bits, _ in _formats(plain)] == [4] * 5


@pytest.mark.parametrize("share,want", [(0.1, [4, 4, 4]), (0.12, [4, 4, 8]), (0.25, [8, 4, 8]),
                                        (0.99, [8, 4, 8])])
def test_int8_share_takes_the_smallest_layers_within_their_share(share, want):
    scheme = Scheme(weights="int4", activations=False, block=64, int8_short_rows=True,
                    int8_share=share)
    # 8192, 49152, 7680 weights: 0.126, 0.756, 0.118 of the three; the largest always int4
    q = ember.quantize(_model(), None, scheme)
    got = _formats(q)
    assert got[:2] == [(8, 27), (8, 9)]
    assert [bits for bits, _ in got[2:]] == want
    assert [block for bits, block in got[2:] if bits == 8] == [
        k for k, bits in zip((128, 64, 768), want) if bits == 8]


def test_int4_preset_round_trips_a_record_and_exports(tmp_path):
    from ember.export import export, load, run_reference

    model = _model()
    q = ember.quantize(model, None, "int4")
    ember.quantize.save(q, tmp_path / "q4")
    twin = ember.quantize.load(_model(), tmp_path / "q4")
    assert twin.scheme == Scheme.named("int4")
    x = ember.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    assert twin(x).tolist() == q(x).tolist()
    export(q, tmp_path / "q4.emb", (3, 6, 6))
    program = load(tmp_path / "q4.emb")
    assert [layer.w_bits for layer in program.layers if layer.w_bits] == [8, 8, 4, 4, 4]
    # the searched scales use code -8 (nibble 0) and negative scales: the file carries both
    big = program.layers[3]
    assert big.w_q.min() == -8 and (big.w_scale < 0).any()
    np.testing.assert_allclose(run_reference(program, x.numpy()), q(x).numpy(), rtol=1e-4,
                               atol=1e-4)


def test_a_record_of_the_old_int4_scheme_loads_as_it_was_written(tmp_path):
    """Records keep their scheme: one written before the new fields loads with them off."""
    from ember.io import read_metadata, save

    model = _model()
    old = Scheme(weights="int4", activations=False, block=64)
    q = ember.quantize(model, None, old)
    # the flat fields records held then (before the Representation/Calibration split too)
    fields = {"weights": "int4", "activations": False, "block": 64, "observer": "minmax",
              "percentile": 99.99, "min_params": 1024, "unsigned": False,
              "bias_correction": False, "keep_float": [], "range_search": False,
              "rounding": "nearest", "chain": True}
    save(q, tmp_path / "old", metadata={ember.quantize.META_KEY: fields})
    assert "int8_share" not in read_metadata(tmp_path / "old")["user"][
        ember.quantize.META_KEY]
    twin = ember.quantize.load(_model(), tmp_path / "old")
    x = ember.tensor(rng.standard_normal((1, 3, 6, 6)).astype(np.float32))
    assert twin(x).tolist() == q(x).tolist()


def test_int4_gptq_preset_is_int4_with_gptq_rounding():
    assert Scheme.named("int4-gptq") == Scheme(**{**Scheme.named("int4").to_dict(),
                                                  "rounding": "gptq"})
    model = _model()
    x = ember.tensor(rng.standard_normal((8, 3, 6, 6)).astype(np.float32))
    q = ember.quantize(model, x, "int4-gptq")
    assert _formats(q) == _formats(ember.quantize(model, None, "int4"))


def test_int4_fields_are_weight_only():
    with pytest.raises(ValueError, match="weight-only schemes"):
        Scheme(scale_search=True)
    with pytest.raises(ValueError, match="weight-only schemes"):
        Scheme(int8_share=0.02)
    with pytest.raises(ValueError, match=r"int8_share must be in \[0, 1\)"):
        Scheme(weights="int4", activations=False, int8_share=1.0)
