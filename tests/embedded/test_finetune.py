"""On-device fine-tuning of the last dense layer (ember_micro.LastLayer) against CPython ember:
Autodiff + mean cross-entropy + optim.SGD on the same examples, one example per step, the
body's features computed by CPython ember. Tolerance: float32 on both sides, 1e-4 relative.
The emulated Cortex-M4F run is in test_board.py."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from _finetune import autodiff_sgd, finetune_script, parse
from _models import seeded
from ember import nn
from ember.demos.mnist_embedded import INPUT_TRANSFORM, normalize
from ember.export import export

STEPS, LR = 6, 0.05


@pytest.fixture
def exported(tmp_path, mnist, trained_mlp):
    _, (vx, vy) = mnist
    path = tmp_path / "model.emb"  # the name finetune_script opens
    export(trained_mlp, path, (1, 28, 28), input_transform=INPUT_TRANSFORM)
    return path, vx[:STEPS], vy[:STEPS]


def test_last_layer_sgd_matches_autodiff_on_cpython(exported, trained_mlp):
    import ember_micro

    path, vx, vy = exported
    w_ref, b_ref, losses_ref = autodiff_sgd(trained_mlp, normalize(vx), vy, LR)
    t = ember_micro.LastLayer(ember_micro.Model(str(path), "pure"))
    losses = [t.step(bytes(x), int(y), LR) for x, y in zip(vx, vy)]
    np.testing.assert_allclose(losses, losses_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(list(t.layer.bias), b_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(list(t.layer.weights), w_ref.ravel(), rtol=1e-4, atol=1e-5)


def test_saved_weights_reload_and_pass_the_crc(exported, trained_mlp, tmp_path):
    import ember_micro
    from ember.export import load, run_reference

    path, vx, vy = exported
    t = ember_micro.LastLayer(ember_micro.Model(str(path), "pure"))
    for x, y in zip(vx, vy):
        t.step(bytes(x), int(y), LR)
    t.save()
    w_ref, b_ref, _ = autodiff_sgd(trained_mlp, normalize(vx), vy, LR)
    prog = load(path)  # CPython's decoder checks the CRC32 the runtime rewrote
    np.testing.assert_allclose(prog.layers[-1].weight.reshape(w_ref.shape), w_ref, rtol=1e-4,
                               atol=1e-5)
    again = ember_micro.Model(str(path), "pure")
    x = normalize(vx[:1])
    np.testing.assert_allclose(list(again.run(bytes(vx[0]))), run_reference(prog, x)[0],
                               rtol=1e-4, atol=1e-5)


def test_last_layer_sgd_on_micropython_in_256k(micropython, exported, trained_mlp, tmp_path):
    from ember.export.micropython import micropython_path

    path, vx, vy = exported
    (tmp_path / "x.u8").write_bytes(vx.tobytes())
    (tmp_path / "y.u8").write_bytes(bytes(vy.astype(np.uint8)))
    script = tmp_path / "tune.py"
    script.write_text(finetune_script("", str(tmp_path), STEPS, LR))
    proc = subprocess.run([micropython, "-X", "heapsize=256K", str(script)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={"MICROPYPATH": micropython_path()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = parse(proc.stdout)
    w_ref, b_ref, losses_ref = autodiff_sgd(trained_mlp, normalize(vx), vy, LR)
    np.testing.assert_allclose(got["loss"], losses_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["w"], w_ref.ravel(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["b"], b_ref, rtol=1e-4, atol=1e-5)
    assert 0 < got["heap_peak"] <= 256 * 1024


def test_fine_tuning_refusals_name_the_problem(tmp_path):
    import ember_micro

    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    mlp = seeded(nn.Sequential(nn.Linear(6, 40), nn.ReLU(), nn.Linear(40, 3)), seed=2)
    export(mlp, tmp_path / "q.emb", (6,), int8=True, calibration=x)
    with pytest.raises(ValueError, match="last Linear layer is int8"):
        ember_micro.LastLayer(ember_micro.Model(str(tmp_path / "q.emb"), "pure"))
    export(mlp, tmp_path / "f.emb", (6,))
    with pytest.raises(ValueError, match=r"streamed from flash; load the model with "
                       r"resident=480"):
        ember_micro.LastLayer(ember_micro.Model(str(tmp_path / "f.emb"), "pure", resident=100))
    export(seeded(nn.Sequential(nn.Linear(6, 3), nn.Sigmoid())), tmp_path / "s.emb", (6,))
    with pytest.raises(ValueError, match="fused activation"):
        ember_micro.LastLayer(ember_micro.Model(str(tmp_path / "s.emb"), "pure"))
    t = ember_micro.LastLayer(ember_micro.Model(str(tmp_path / "f.emb"), "pure"))
    with pytest.raises(ValueError, match="label 3 outside 0..2"):
        t.step(ember_micro.model.array("f", x[0].tolist()), 3, 0.1)
