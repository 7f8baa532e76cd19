"""``ember export`` on what users have: a run folder of ``ember demo mnist``, the bare weights
file inside it (the MNIST CNN sized from the weights' shapes), or any model's weights with
``--arch MODULE:FUNCTION``. The same model must give the same file whichever way it came."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpy")

import ember
from ember.demos.mnist_model import mnist_cnn
from ember.export import export
from ember.io import save_file

ROOT = Path(__file__).resolve().parents[2]
TINY = "from ember import nn\n\ndef mlp():\n    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), " \
       "nn.Linear(8, 3))\n"


def _ember(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT / 'core'}:{cwd}"})


def test_weights_file_and_run_folder_give_the_same_model_file(tmp_path):
    ember.seed(1)
    model = mnist_cnn((4, 8), 16)
    save_file(model.state_dict(), tmp_path / "weights.safetensors")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(tmp_path / "weights.safetensors", run / "model.safetensors")
    (run / "model.json").write_text(json.dumps({"channels": [4, 8], "hidden": 16}))
    for source, out in (("weights.safetensors", "a.emb"), ("run", "b.emb")):
        proc = _ember("export", source, "-o", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert f"{out}: " in proc.stdout
    assert (tmp_path / "a.emb").read_bytes() == (tmp_path / "b.emb").read_bytes()


def test_arch_names_any_model(tmp_path):
    (tmp_path / "tinymodel.py").write_text(TINY)
    sys.path.insert(0, str(tmp_path))
    try:
        from tinymodel import mlp
    finally:
        sys.path.remove(str(tmp_path))
    ember.seed(2)
    model = mlp()
    save_file(model.state_dict(), tmp_path / "mlp.safetensors")
    export(model.eval(), tmp_path / "direct.emb", (4,))
    proc = _ember("export", "mlp.safetensors", "-o", "cli.emb", "--arch", "tinymodel:mlp",
                  "--input-shape", "4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cli.emb").read_bytes() == (tmp_path / "direct.emb").read_bytes()


@pytest.mark.parametrize(("args", "message"), [
    (["mlp.safetensors", "-o", "x.emb"], "not the MNIST demo CNN's weights"),
    (["mlp.safetensors", "-o", "x.emb", "--arch", "tinymodel:mlp"], "--input-shape"),
    (["mlp.safetensors", "-o", "x.emb", "--arch", "tinymodel", "--input-shape", "4"],
     "expected MODULE:FUNCTION"),
    (["none.safetensors", "-o", "x.emb"], "no such weights file"),
])
def test_errors_say_what_to_give(tmp_path, args, message):
    (tmp_path / "tinymodel.py").write_text(TINY)
    save_file({"0.weight": ember.zeros(8, 4), "0.bias": ember.zeros(8)},
              tmp_path / "mlp.safetensors")
    proc = _ember("export", *args, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("ember: error:") and message in proc.stderr, proc.stderr
