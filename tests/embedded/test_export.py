"""ember.export on CPython: lowering, the file format, int8 quantisation, and the ember_micro
runtime's pure tier run on CPython (the ulab tier runs on real ulab firmware: test_ulab.py)."""

from __future__ import annotations

import os
import struct
import zlib
from array import array

import ember
import numpy as np
import pytest
from _models import seeded, zoo
from ember import nn
from ember.errors import RecordError, ShapeError, UnsupportedOpError
from ember.export import (
    Residual,
    decode,
    export,
    load,
    lower,
    model_logits,
    quantize,
    run_reference,
)
from ember.export import (
    format as fmt,
)


def _inputs(shape, n=4, seed=1):
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


def test_lowering_matches_ember_forward_on_every_layer_kind():
    model, shape = zoo()
    prog = lower(model, shape)
    ops = {layer.op for layer in prog.layers}
    assert ops == set(fmt.OP_NAMES), "the zoo should exercise every opcode"
    assert prog.n_slots == 2  # nested residual
    x = _inputs(shape)
    np.testing.assert_allclose(run_reference(prog, x), model_logits(model, x), rtol=1e-5,
                               atol=1e-6)


def test_batchnorm_folds_into_the_conv_and_activation_fuses():
    model = seeded(nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(),
                                 nn.Flatten(), nn.Linear(12, 2)))
    prog = lower(model, (1, 4, 4))
    assert [layer.describe() for layer in prog.layers] == [
        "conv2d+relu (1, 4, 4)->(3, 2, 2)", "linear (12, 1, 1)->(2, 1, 1)"]
    x = _inputs((1, 4, 4))
    np.testing.assert_allclose(run_reference(prog, x), model_logits(model, x), rtol=1e-5,
                               atol=1e-6)


def test_unsupported_layers_are_all_named():
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 4), nn.LayerNorm(4),
                          nn.Sequential(nn.SiLU()))
    with pytest.raises(UnsupportedOpError) as e:
        lower(model, (4,))
    msg = str(e.value)
    for part in ("1 (GELU: its forward, traced, runs gelu, which has no micro layer)",
                 "3 (LayerNorm: its forward, traced, runs", "4.0 (SiLU: its forward", "Supported:"):
        assert part in msg


def test_shape_errors_name_the_layer():
    with pytest.raises(ShapeError, match="expects 5 features"):
        lower(nn.Sequential(nn.Linear(5, 2)), (4,))
    with pytest.raises(ShapeError, match="same shape"):
        lower(Residual(nn.Linear(4, 3)), (4,))


def test_file_header_layout_and_checksum(tmp_path):
    model, shape = zoo()
    path = tmp_path / "zoo.emb"
    report = export(model, path, shape, input_transform=(0.5, -1.0))
    data = path.read_bytes()
    assert report.size_bytes == len(data)
    magic, version, flags, n_layers, n_slots, c, h, w = struct.unpack_from("<4s7H", data)
    assert (magic, version, flags, n_slots, (c, h, w)) == (b"EMBM", 2, 0, 2, shape)
    assert n_layers == len(report.layers) == 20
    max_act, max_qin, n_out = struct.unpack_from("<3I", data, 20)
    assert (max_act, max_qin, n_out) == (2 * 13 * 11, 0, 5)  # the input is the largest
    plen, crc = struct.unpack_from("<II", data, 40)
    assert plen == len(data) - 48 and crc == zlib.crc32(data[:44] + data[48:])
    assert struct.unpack_from("<2f", data, 32) == (0.5, -1.0)
    x = _inputs(shape)
    np.testing.assert_allclose(run_reference(load(path), x), model_logits(model, x),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:30], "shorter than the 48-byte header"),
    (lambda d: b"XXXX" + d[4:], "bad magic"),
    (lambda d: d[:4] + b"\x09\x00" + d[6:], "format version 9 is newer"),
    (lambda d: d[:4] + b"\x01\x00" + d[6:], "format version 1 .* re-export the model"),
    (lambda d: d[:-7], "truncated"),
    (lambda d: d[:200] + bytes([d[200] ^ 1]) + d[201:], "CRC32 mismatch"),
])
def test_decode_rejects_damaged_files(tmp_path, damage, message):
    model, shape = zoo()
    export(model, tmp_path / "m.emb", shape)
    with pytest.raises(RecordError, match=message):
        decode(damage((tmp_path / "m.emb").read_bytes()))


def test_failed_export_leaves_no_file(tmp_path):
    path = tmp_path / "bad.emb"
    with pytest.raises(UnsupportedOpError):
        export(nn.Sequential(nn.GELU()), path, (3,))
    assert not path.exists() and os.listdir(tmp_path) == []


def test_int8_weights_are_per_channel_symmetric_and_reconstruct(tmp_path):
    model, shape = zoo()
    prog = quantize(lower(model, shape), _inputs(shape, 32, seed=2))
    for layer in prog.layers:
        if not layer.weighted:
            continue
        w = layer.weight.reshape(len(layer.weight), -1)
        np.testing.assert_allclose(layer.w_scale, np.abs(w).max(1) / 127, rtol=1e-12)
        assert np.abs(layer.w_q).max() == 127
        err = np.abs(layer.w_q.reshape(len(w), -1) * layer.w_scale[:, None] - w)
        assert (err <= layer.w_scale[:, None] / 2 + 1e-12).all()
        assert layer.in_scale > 0


def test_int8_export_reports_the_accuracy_change(tmp_path):
    model = seeded(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)), seed=3)
    x = _inputs((6,), 200, seed=4)
    labels = model_logits(model, x).argmax(1)  # the f32 model is right by construction
    path = tmp_path / "q.emb"
    report = export(model, path, (6,), int8=True, calibration=x[:100], evaluate=(x, labels))
    assert report.int8 and report.accuracy_f32 == 1.0
    assert report.accuracy_int8 >= 0.95 and report.agreement == report.accuracy_int8
    assert report.size_bytes < report.float_size_bytes
    assert "int8 on 200 inputs" in str(report)
    yq = run_reference(load(path), x)
    assert np.abs(yq - model_logits(model, x)).max() == pytest.approx(
        report.max_abs_logit_diff, rel=1e-4)


def _run_tier(path, tier, x):
    import ember_micro

    m = ember_micro.Model(str(path), tier, resident=256, chunk=200)  # force streaming too
    assert m.tier == tier
    return np.array([list(m.run(array("f", xi.ravel().tolist()))) for xi in x])


@pytest.mark.parametrize("int8", [False, True])
def test_pure_tier_on_cpython_matches_the_reference(tmp_path, int8):
    model, shape = zoo()
    x = _inputs(shape, 3)
    path = tmp_path / "zoo.emb"
    export(model, path, shape, int8=int8, calibration=_inputs(shape, 16, seed=5))
    expect = run_reference(load(path), x)
    np.testing.assert_allclose(_run_tier(path, "pure", x), expect, rtol=1e-4, atol=2e-5)


def test_runtime_takes_uint8_inputs_through_the_input_transform(tmp_path):
    import ember_micro

    model = seeded(nn.Sequential(nn.Flatten(), nn.Linear(12, 4)), seed=6)
    path = tmp_path / "u8.emb"
    export(model, path, (1, 3, 4), input_transform=(1 / 255, -0.5))
    raw = np.random.default_rng(7).integers(0, 256, (2, 12), dtype=np.uint8)
    expect = model_logits(model, (raw.astype(np.float64) / 255 - 0.5).reshape(2, 1, 3, 4))
    m = ember_micro.Model(str(path), "pure")
    got = np.array([list(m.run(bytes(r))) for r in raw])
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    assert m.predict(bytes(raw[0])) == int(expect[0].argmax())
    with pytest.raises(ValueError, match="input has 11 values"):
        m.run(bytes(11))


def test_runtime_rejects_damaged_files_on_cpython(tmp_path):
    import ember_micro

    model, shape = zoo()
    good = tmp_path / "m.emb"
    export(model, good, shape)
    data = good.read_bytes()
    for name, bad, message in [("short", data[:10], "truncated: 10 bytes"),
                               ("cut", data[:-1], "truncated or padded"),
                               ("flip", data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:],
                                "CRC32 mismatch")]:
        (tmp_path / name).write_bytes(bad)
        with pytest.raises(ember_micro.ModelError, match=message):
            ember_micro.Model(str(tmp_path / name), "pure")


def test_model_logits_leaves_training_mode_alone():
    model = nn.Sequential(nn.Linear(2, 2))
    model.train()
    model_logits(model, np.zeros((1, 2)))
    assert model.training
    assert ember.zeros(1).shape == (1,)
