"""ember.quantize's weight-only layers (schemes "int4" and "int8-weights") exported for the
microcontroller with their own codes and block scales, and run by ember_micro: on the real
MicroPython binary (native and pure tiers), on real ulab firmware (the ulab tier), on
CPython (pure), and the C kernels on emulated Cortex-M boards. Expected values come from CPython ember (``model_logits``: the quantized model's
own forward) and from the numpy float64 reference of the written file.

Tolerance: the float tests' (``test_budget.py``), |micro - want| <= 1e-4 (1 + max |want|):
the board computes in float32 the same dequantized weights the reference uses in float64.
"""

from __future__ import annotations

import math
from array import array

import ember
import numpy as np
import pytest
from _models import seeded
from _tamper import HEADER, LAYER, rechecksum
from test_board import boards  # noqa: F401 - the emulated boards' fixture
from ember import nn
from ember.nn import functional as F
from ember.errors import RecordError, ShapeError, UnsupportedOpError
from ember.export import decode, export, load, model_logits, run_on_micropython, run_reference
from ember.quantize import Scheme

HEAP = "256K"
TOL = 1e-4
SHAPE = (1, 28, 28)
SCHEMES = {"int4": "int4", "int8-weights": "int8-weights",
           # odd blocks and odd rows: int4 rows that end mid-byte, blocks across them
           "int4-block5": Scheme(weights="int4", activations=False, block=5, min_params=0)}
# record fields (format.py's documented layout), relative to a layer record
WDTYPE, SLOT = (2, "<B"), (30, "<H")
VERSION = (4, "<H")


def _cnn():
    """The MNIST demo CNN's shape, narrower: conv 1->8 (72 weights, stays float with the
    presets' min_params), conv 8->16, Linear 784->32, Linear 32->10 (float too)."""
    from ember.demos.mnist_model import mnist_cnn

    return seeded(mnist_cnn(channels=(8, 16), hidden=32), seed=5)


def _inputs(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, *SHAPE)).astype(np.float32)


@pytest.fixture(scope="module", params=list(SCHEMES))
def exported(request, tmp_path_factory):
    """(scheme name, quantized model, its file path, its export report)."""
    q = ember.quantize(_cnn(), None, SCHEMES[request.param])
    path = tmp_path_factory.mktemp("wo") / f"{request.param}.emb"
    return request.param, q, path, export(q, path, SHAPE)


def _close(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want)
    assert got.shape == want.shape
    err = np.abs(got - want)
    assert err.max() <= TOL * (1 + np.abs(want).max()), f"max |diff| {err.max()}"


def _row_geometry(q):
    """(rows, row_len, bits, block) of each weight-only layer, from the layers' own shapes."""
    out = []
    for m in q.modules():
        if type(m).__name__.startswith("WeightOnly"):
            rows, row_len = m.weight_shape[0], math.prod(m.weight_shape[1:])
            out.append((rows, row_len, m.bits, min(m.block, row_len)))
    return out


def test_the_file_holds_the_codes_not_floats(exported):
    name, q, path, report = exported
    geo = _row_geometry(q)
    assert geo and report.weight_only and not report.int8
    # every weight-only layer: 4 bytes a weight in f32; codes (1 byte, or half a byte with
    # each row starting on a byte) plus one float32 scale per block in this file
    f32 = sum(4 * rows * k for rows, k, _, _ in geo)
    coded = sum(rows * (k if bits == 8 else (k + 1) // 2) + 4 * rows * -(-k // block)
                for rows, k, bits, block in geo)
    saved = report.float_size_bytes - report.size_bytes
    assert abs(saved - (f32 - coded)) <= 3 * 2 * len(geo), (saved, f32 - coded)  # alignment
    assert path.stat().st_size == report.size_bytes == report.memory.flash_bytes
    if name == "int4":  # 64 int4 codes + a float32 scale: 36 bytes for 256
        assert f32 / coded > 7
    elif name == "int8-weights":
        assert f32 / coded > 3.9
    # the codes are ember.quantize's, read back unchanged
    layers = [la for la in load(path).layers if la.w_bits]
    mods = [m for m in q.modules() if type(m).__name__.startswith("WeightOnly")]
    for layer, m in zip(layers, mods, strict=True):
        assert np.array_equal(layer.weight.astype(np.float32).reshape(m.weight_shape),
                              m.dequantized().numpy())


def test_reference_matches_the_quantized_model(exported):
    _, q, path, _ = exported
    x = _inputs(4)
    _close(run_reference(load(path), x), model_logits(q, x))


@pytest.mark.parametrize("tier", ["native", "pure"])
def test_micropython_matches_ember_and_the_reference(micropython, exported, tier):
    name, q, path, report = exported
    x = _inputs(3 if tier == "native" else 1, seed=1)
    run = run_on_micropython(path, x, tier=tier, logits=True, heapsize=HEAP)
    assert run.tier == tier
    _close(run.logits, run_reference(load(path), x))
    _close(run.logits, model_logits(q, x))
    if tier == "native":  # the C dequant: no float objects per weight
        assert 0 < run.heap_after_load <= report.memory.ram_for("native"), str(report.memory)
        assert 0 <= run.garbage_bytes <= 16 * 1024


@pytest.mark.parametrize("resident", [16384, 0], ids=["resident", "streamed"])
def test_pure_tier_on_cpython_resident_and_streamed(exported, resident):
    import ember_micro

    _, q, path, _ = exported
    x = _inputs(1, seed=2)
    m = ember_micro.Model(str(path), "pure", resident=resident, chunk=1024)
    _close([list(m.run(array("f", x[0].ravel())))], model_logits(q, x))


@pytest.mark.parametrize("resident", [16384, 0], ids=["resident", "streamed"])
def test_real_ulab_resident_and_streamed(ulab, exported, resident):
    """The ulab tier's dequant on real firmware (2-D float32): one block per row
    (int8-weights), blocks of 64 over rows that aren't whole blocks (int4), and odd rows with
    blocks of 5 (int4-block5: rows ending mid-byte)."""
    from _ulab_firmware import run_logits

    _, q, path, _ = exported
    x = _inputs(2, seed=2)
    got = run_logits("2d-f32", path, x, resident=resident, chunk=1024)
    _close(got, run_reference(load(path), x))
    _close(got, model_logits(q, x))


def test_export_refuses_int8_on_a_weight_only_model(exported, tmp_path):
    _, q, _, _ = exported
    with pytest.raises(ValueError, match="weight-only layers .* without int8=True"):
        export(q, tmp_path / "m.emb", SHAPE, int8=True, calibration=_inputs(4))


def test_unknown_module_is_named_not_a_later_shape_error(tmp_path):
    class Block(nn.Module):  # its forward runs an op the boards lack: its shape is unknown
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 32)

        def forward(self, x):
            return F.gelu(self.fc(x))

    model = seeded(nn.Sequential(nn.Flatten(), Block(), nn.ReLU(), nn.Linear(32, 10)))
    with pytest.raises(UnsupportedOpError, match=r"can't run 1 \(Block: its forward, traced, "
                       r"runs gelu, which has no micro layer\)\. Supported: Linear, ") as info:
        export(model, tmp_path / "m.emb", (1, 8, 8))
    assert isinstance(info.value.__cause__, ShapeError)  # what the next Linear ran into
    # weight-only layers in an own forward: the trace would read their float weights
    with pytest.raises(UnsupportedOpError, match=r"holds WeightOnlyLinear, whose codes only "
                       r"the module walk keeps"):
        export(ember.quantize(Block(), None, "int4"), tmp_path / "m.emb", (64,))
    # the model: the weight-only layer is exported, no longer skipped
    q = ember.quantize(nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(),
                                     nn.Linear(32, 10)), None, "int4")
    from ember.export import lower

    program = lower(q, (1, 8, 8))
    assert [la.describe() for la in program.layers] == [
        "linear+relu int4/64 (64, 1, 1)->(32, 1, 1)", "linear (32, 1, 1)->(10, 1, 1)"]
    # pass-through modules still pass
    assert len(lower(nn.Sequential(nn.Dropout(0.1), nn.Identity(), nn.Linear(4, 2)),
                     (4,)).layers) == 1


def test_int8_and_weight_only_layers_do_not_mix():
    from ember.export import lower

    x = ember.randn(8, 16, generator=ember.Generator(0))
    a = ember.quantize(nn.Sequential(nn.Linear(16, 16)), x, "int8")
    b = ember.quantize(nn.Sequential(nn.Linear(16, 4)), None,
                       Scheme(activations=False, min_params=0))
    with pytest.raises(UnsupportedOpError, match="mixes int8-activation layers .* one kind"):
        lower(nn.Sequential(a[0], b[0]), (16,))


# ------------------------------------------------------------- damaged weight-only files
def _weight_only_file(tmp_path):
    """A small valid file: a float Linear 6->24 (144 weights: under min_params), then Linear
    24->7 in int4 with blocks of 5 (rows of 12 bytes, 5 scales a row)."""
    model = seeded(nn.Sequential(nn.Linear(6, 24), nn.Linear(24, 7)), seed=1)
    q = ember.quantize(model, None, Scheme(weights="int4", activations=False, block=5,
                                          min_params=150))
    path = tmp_path / "wo.emb"
    export(q, path, (6,))
    return path.read_bytes()


def _set(data, field, value, layer=None, fix=True):
    out = bytearray(data)
    import struct

    struct.pack_into(field[1], out, field[0] + (HEADER + LAYER * layer if layer is not None
                                                else 0), value)
    return rechecksum(bytes(out)) if fix else bytes(out)


DAMAGE = [
    ("truncated", lambda d: d[:-7], "truncated or padded"),
    ("wdtype int4 -> int8", lambda d: _set(d, WDTYPE, 2, layer=1),
     r"layer 1 \(linear\): weight block of 84 bytes, a 7x24 int8 per block matrix takes 168"),
    ("block 5 -> 3", lambda d: _set(d, SLOT, 3, layer=1),
     r"layer 1 \(linear\): scales block of 224 bytes at offset \d+ lies outside"),
    ("version 3 -> 2", lambda d: _set(d, VERSION, 2),
     r"int4 per block weights need format version 3, the header says 2"),
    ("version 3 -> 4", lambda d: _set(d, VERSION, 4), "format version 4 is newer"),
    ("a bit flipped in the scales", lambda d: d[:-1] + bytes([d[-1] ^ 1]), "CRC32 mismatch"),
]


@pytest.mark.parametrize("damage, message", [d[1:] for d in DAMAGE], ids=[d[0] for d in DAMAGE])
def test_damaged_weight_only_files_are_refused(tmp_path, damage, message):
    import ember_micro

    good = _weight_only_file(tmp_path)
    assert decode(good).layers[1].w_bits == 4
    bad = damage(good)
    with pytest.raises(RecordError, match=message):
        decode(bad)
    path = tmp_path / "bad.emb"
    path.write_bytes(bad)
    with pytest.raises(ember_micro.ModelError, match=message):
        ember_micro.Model(str(path), "pure")


def test_damaged_weight_only_file_on_micropython(micropython, tmp_path):
    from ember.export import embedded_dir, run_micropython_script

    path = tmp_path / "bad.emb"
    path.write_bytes(_set(_weight_only_file(tmp_path), SLOT, 3, layer=1))
    inputs = tmp_path / "x.f32"
    inputs.write_bytes(bytes(4 * 6))
    proc = run_micropython_script([str(embedded_dir() / "run_batch.py"), str(path),
                                   str(inputs), "1", "auto"], heapsize=HEAP, timeout=120)
    assert proc.returncode == 3 and "scales block of 224 bytes" in proc.stdout, proc.stdout


@pytest.mark.parametrize("board, arch", [("an385", "armv6m"), ("an385", "armv7m"),
                                         ("an386", "armv7emsp")])
def test_int4_on_the_emulated_board(request, tmp_path, board, arch):
    """The C dequant of each ARM kernel build, on the emulated Cortex-M3/M4F: the quantized
    model's own outputs, the heap within the estimate, little garbage (a C loop)."""
    qemu = request.getfixturevalue("boards")
    q = ember.quantize(_cnn(), None, "int4")
    path = tmp_path / "m.emb"
    report = export(q, path, SHAPE)
    x = _inputs(2, seed=3)
    run = qemu.run_on_qemu(path, x, board=board, tier="native", logits=True, arch=arch)
    assert run.tier == "native"
    _close(run.logits, model_logits(q, x))
    assert 0 < run.heap_after_load <= report.memory.ram_for("native")
    assert 0 <= run.garbage_bytes <= 16 * 1024
