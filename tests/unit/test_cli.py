"""The ``ember`` command line: info, backends, and clear errors for demos without a model."""

import subprocess
import sys


def ember(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_info_and_backends():
    info = ember("info")
    assert info.returncode == 0 and "default backend: numpy" in info.stdout
    backends = ember("backends")
    assert backends.returncode == 0
    for name in ("numpy", "python", "autodiff-numpy"):
        assert f"{name}" in backends.stdout


def test_serve_without_a_trained_model_says_what_to_run(tmp_path):
    out = ember("demo", "mnist", "--serve", "--run-dir", str(tmp_path / "none"))
    assert out.returncode == 2
    assert "run `ember demo mnist --run-dir" in out.stderr
