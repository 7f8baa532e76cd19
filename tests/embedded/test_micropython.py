"""ember_micro on a real MicroPython (the unix port built from Debian's source package with
single-precision floats) with a board-sized heap, compared with CPython ember.

Tolerances (stated, float32 on the board vs float32 ember on CPython):
- f32 logits: |micro - ember| <= 1e-4 * (1 + |ember|)   (summation order differs)
- int8 logits vs the numpy int8 simulation of the same file: |diff| <= 2e-3 * max|logits|
  (a float32 input landing on the other side of a rounding boundary moves one int8 step)
- int8 vs the f32 model on MNIST: argmax agreement >= 90% of the images.
"""

from __future__ import annotations

import struct
import subprocess

import numpy as np
import pytest
from _models import zoo
from ember.export import (
    export,
    load,
    model_logits,
    run_micropython_script,
    run_on_micropython,
    run_reference,
)
from ember.demos.mnist_embedded import INPUT_TRANSFORM, normalize

HEAP = "256K"
F32_TOL = 1e-4


def _f32_close(got, expect):
    got, expect = np.asarray(got), np.asarray(expect)
    assert got.shape == expect.shape
    bad = np.abs(got - expect) > F32_TOL * (1 + np.abs(expect))
    assert not bad.any(), f"max diff {np.abs(got - expect).max()}"


def _export_mnist(model, path, mnist, int8=False):
    (tx, _), (vx, vy) = mnist
    return export(model, path, (1, 28, 28), int8=int8, input_transform=INPUT_TRANSFORM,
                  calibration=normalize(tx[:200]) if int8 else None,
                  evaluate=(normalize(vx[:100]), vy[:100]) if int8 else None)


@pytest.mark.parametrize("which, n", [("mlp", 60), ("cnn", 40)])
def test_native_f32_matches_cpython_ember_on_mnist(micropython, mnist, trained_mlp, trained_cnn,
                                                    tmp_path, which, n):
    model = trained_mlp if which == "mlp" else trained_cnn
    _, (vx, vy) = mnist
    path = tmp_path / f"{which}.emb"
    _export_mnist(model, path, mnist)
    run = run_on_micropython(path, vx[:n], vy[:n], logits=True, heapsize=HEAP)
    assert run.tier == "native"
    expect = model_logits(model, normalize(vx[:n]))
    assert run.predictions == expect.argmax(1).tolist()
    _f32_close(run.logits, expect)


@pytest.mark.parametrize("which, n", [("mlp", 60), ("cnn", 40)])
def test_native_int8_matches_the_int8_reference(micropython, mnist, trained_mlp, trained_cnn,
                                                tmp_path, which, n):
    model = trained_mlp if which == "mlp" else trained_cnn
    _, (vx, vy) = mnist
    path = tmp_path / f"{which}_q.emb"
    report = _export_mnist(model, path, mnist, int8=True)
    assert report.size_bytes < report.float_size_bytes / 3
    run = run_on_micropython(path, vx[:n], vy[:n], logits=True, heapsize=HEAP)
    x = normalize(vx[:n])
    yq = run_reference(load(path), x)
    got = np.asarray(run.logits)
    assert np.abs(got - yq).max() <= 2e-3 * np.abs(yq).max()
    assert np.mean(got.argmax(1) == yq.argmax(1)) >= 0.95
    yf = model_logits(model, x)
    assert np.mean(got.argmax(1) == yf.argmax(1)) >= 0.9


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_pure_tier_agrees_with_cpython(micropython, mnist, trained_mlp, trained_cnn, tmp_path,
                                       int8):
    _, (vx, _) = mnist
    for model, n in ((trained_mlp, 6), (trained_cnn, 2)):
        path = tmp_path / "m.emb"
        _export_mnist(model, path, mnist, int8=int8)
        run = run_on_micropython(path, vx[:n], tier="pure", logits=True, heapsize=HEAP)
        assert run.tier == "pure"
        if int8:
            want = run_reference(load(path), normalize(vx[:n]))
            assert np.abs(np.asarray(run.logits) - want).max() <= 2e-3 * np.abs(want).max()
            continue
        expect = model_logits(model, normalize(vx[:n]))
        assert run.predictions == expect.argmax(1).tolist()
        _f32_close(run.logits, expect)


@pytest.mark.parametrize("tier", ["native", "pure"])
@pytest.mark.parametrize("int8", [False, True])
def test_every_layer_kind_on_micropython(micropython, tmp_path, tier, int8):
    model, shape = zoo()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, *shape)).astype(np.float32)
    path = tmp_path / "zoo.emb"
    export(model, path, shape, int8=int8,
           calibration=rng.standard_normal((16, *shape)).astype(np.float32))
    run = run_on_micropython(path, x, tier=tier, logits=True, heapsize=HEAP)
    assert run.tier == tier
    if int8:
        expect = run_reference(load(path), x)
        np.testing.assert_allclose(run.logits, expect, atol=2e-3 * np.abs(expect).max())
    else:
        _f32_close(run.logits, model_logits(model, x))


def test_cnn_fits_a_256k_heap_with_room_to_spare(micropython, mnist, trained_cnn, tmp_path):
    _, (vx, _) = mnist
    path = tmp_path / "cnn.emb"
    _export_mnist(trained_cnn, path, mnist)
    run = run_on_micropython(path, vx[:3], heapsize=HEAP)
    assert 0 < run.heap_after_load < 200 * 1024
    # and it really needs the streaming: a heap too small for the buffers fails cleanly, before
    # allocating them
    with pytest.raises(RuntimeError, match=r"exited with 3:\n.*the activation and weight chunk "
                       r"buffers need \d+ bytes .* the heap has \d+ free"):
        run_on_micropython(path, vx[:1], heapsize="64K")


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"", "truncated: 0 bytes"),
    (lambda d: d[:-100], "truncated or padded"),
    (lambda d: b"GIF8" + d[4:], "bad magic"),
    (lambda d: d[:500] + bytes([d[500] ^ 0x40]) + d[501:], "CRC32 mismatch"),
])
def test_damaged_files_give_clear_errors_on_micropython(micropython, tmp_path, damage, message):
    model, shape = zoo()
    good = tmp_path / "good.emb"
    export(model, good, shape)
    bad = tmp_path / "bad.emb"
    bad.write_bytes(damage(good.read_bytes()))
    inputs = tmp_path / "x.f32"
    inputs.write_bytes(bytes(4 * int(np.prod(shape))))
    from ember.export import embedded_dir

    proc = run_micropython_script([str(embedded_dir() / "run_batch.py"), str(bad), str(inputs),
                                   "1", "auto"])
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert message in proc.stdout and str(bad) in proc.stdout


def test_board_demo_main_runs_on_the_unix_port(micropython, mnist, trained_mlp, tmp_path):
    """demos/mnist/embedded/main.py as copied to a board: model.emb + digits.bin in the cwd."""
    from ember.export import embedded_dir
    from ember.export.micropython import micropython_path

    _, (vx, vy) = mnist
    _export_mnist(trained_mlp, tmp_path / "model.emb", mnist)
    (tmp_path / "digits.bin").write_bytes(
        struct.pack("<H", 8) + bytes(vy[:8].astype(np.uint8)) + vx[:8].tobytes())
    main = embedded_dir().parent / "demos" / "mnist" / "embedded" / "main.py"
    proc = subprocess.run([micropython, "-X", f"heapsize={HEAP}", str(main)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={"MICROPYPATH": micropython_path()}, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expect = model_logits(trained_mlp, normalize(vx[:8])).argmax(1)
    for i, p in enumerate(expect):
        assert f"digit {i}: predicted {p}" in proc.stdout
    assert "ms per image" in proc.stdout
