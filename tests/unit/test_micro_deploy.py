"""``ember micro deploy`` (ember.export.deploy): the files a board gets, from this checkout, and
what happens without mpremote. tests/install runs the same from an installed wheel."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from ember.errors import EmberError
from ember.export.deploy import deploy_files, deploy_to_folder, native_archs
from ember.resources import resource_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def model(tmp_path) -> Path:
    from ember import nn
    from ember.export import export

    path = tmp_path / "digits.emb"
    export(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), str(path), (1, 2, 2))
    return path


def test_folder_gets_the_runtime_and_the_model(model, tmp_path):
    written = deploy_to_folder(model, tmp_path / "board")
    runtime = sorted(p.name for p in (ROOT / "embedded" / "ember_micro").glob("*.py"))
    assert sorted(p.name for p in (tmp_path / "board" / "ember_micro").iterdir()) == runtime
    assert (tmp_path / "board" / "digits.emb").read_bytes() == model.read_bytes()
    assert len(written) == len(runtime) + 1


def test_native_kernels_by_architecture(model):
    archs = native_archs()
    if archs:
        files = deploy_files(model, archs[0])
        assert files["ember_kernels.mpy"] == (resource_dir("micro") / "build" / "native" /
                                              archs[0] / "ember_kernels.mpy")
    with pytest.raises(EmberError, match="no native kernels for 'z80'; this ember has them for"):
        deploy_files(model, "z80")


def test_missing_model_names_the_export_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="ember export"):
        deploy_files(tmp_path / "none.emb")


def test_without_mpremote_the_error_names_it(model, tmp_path):
    # no site-packages (-S) and an empty PATH: neither the mpremote command nor its module
    proc = subprocess.run([sys.executable, "-S", "-m", "ember.cli", "micro", "deploy",
                           "--port", "/dev/ttyACM0", str(model)], capture_output=True, text=True,
                          env={"PATH": str(tmp_path), "PYTHONPATH": str(ROOT / "core")},
                          timeout=120, check=False)
    assert proc.returncode == 1
    assert proc.stderr == ("ember: error: micro deploy: mpremote is not installed; it copies "
                           "files to a board: pip install mpremote (or use --folder DIR)\n")


@pytest.mark.skipif(importlib.util.find_spec("mpremote") is None, reason="mpremote missing")
def test_mpremote_is_run_with_the_staged_files(model, tmp_path):
    port = str(tmp_path / "no-board")
    proc = subprocess.run([sys.executable, "-m", "ember.cli", "micro", "deploy", "--port", port,
                           "--arch", native_archs()[0] if native_archs() else "x64", str(model)],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 1  # no board there: mpremote's own refusal, one line
    assert (f"mpremote connect {port} fs cp -r digits.emb ember_kernels.mpy ember_micro :"
            in proc.stdout)
    assert f"failed to access {port}" in proc.stderr
    assert proc.stderr.count("ember: error:") == 1
