"""The ``ember`` command line: info, backends, and clear errors: a bad argument or input is
one ``ember: error:`` line on stderr (status 2 for usage, 1 for a failed command), and a
traceback only with ``--debug`` / ``EMBER_DEBUG=1``. Each case runs the real CLI."""

import os
import subprocess
import sys
from pathlib import Path

import pytest


def ember(*args, cwd=None, env=None):
    environ = {k: v for k, v in os.environ.items() if k != "EMBER_DEBUG"}
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env={**environ, **(env or {})})


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


# ---------------------------------------------------------------- errors: one line, no traceback
REGRESSIONS = Path(__file__).resolve().parents[1] / "fuzz" / "regressions" / "image"


def one_line_error(out, status: int, *words: str) -> str:
    """``out`` failed with ``status`` and said why on one ``ember: error:`` line."""
    assert out.returncode == status, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: error: "), out.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def not_an_image(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "notes.png"
    path.write_text("not a picture\n")
    return path


USAGE_ERRORS = [
    (["demo", "classify", "--backend", "nosuch", "x.png"],
     ["--backend", "'nosuch'", "numpy", "python"]),
    (["demo", "classify", "--top", "0", "x.png"], ["--top", "0", "1..1000"]),
    (["demo", "classify", "--top", "-1", "x.png"], ["--top", "-1", "1..1000"]),
    (["demo", "classify", "--top", "1001", "x.png"], ["--top", "1001", "1..1000"]),
    (["demo", "classify", "--top", "three", "x.png"], ["--top", "'three'"]),
    (["demo", "mnist", "--batch-size", "0"], ["--batch-size", "0", ">= 1"]),
    (["demo", "mnist", "--epochs", "-1"], ["--epochs", "-1", ">= 1"]),
    (["demo", "mnist", "--backend", "nosuch"], ["--backend", "'nosuch'", "numpy"]),
    (["demo", "mnist", "--port", "70000", "--serve"], ["--port", "70000"]),
    (["demo"], ["demo"]),
    (["nosuch"], ["nosuch"]),
]


@pytest.mark.parametrize("args, words", USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_usage_errors_exit_2_with_one_line(args, words):
    one_line_error(ember(*args), 2, *words)


def test_a_missing_image(tmp_path):
    missing = tmp_path / "missing.png"
    one_line_error(ember("demo", "classify", str(missing)), 1, str(missing),
                   "No such file")


def test_a_file_that_is_not_an_image(not_an_image):
    one_line_error(ember("demo", "classify", str(not_an_image)), 1, str(not_an_image),
                   "not an image format")


def test_an_image_too_large_to_decode():
    bomb = REGRESSIONS / "header_20000x20000_pillow_bomb_error.png"
    one_line_error(ember("demo", "classify", str(bomb)), 1, str(bomb), "400000000 pixels",
                   "max_image_pixels")


def test_debug_shows_the_traceback(not_an_image):
    out = ember("--debug", "demo", "classify", str(not_an_image))
    assert out.returncode == 1 and "Traceback" in out.stderr and "DatasetError" in out.stderr
    out = ember("demo", "classify", str(not_an_image), env={"EMBER_DEBUG": "1"})
    assert out.returncode == 1 and "Traceback" in out.stderr and "DatasetError" in out.stderr


# ---------------------------------------------------------------- the hint after training
@pytest.mark.parametrize("dataset, run_dir, flags", [
    ("mnist", "runs/mnist", ""),
    ("mnist", "/tmp/my run", " --run-dir '/tmp/my run'"),
    ("fashion-mnist", "runs/fashion-mnist", " --dataset fashion-mnist"),
    ("fashion-mnist", "elsewhere", " --run-dir elsewhere"),
])
def test_the_hint_after_training_finds_the_same_run_folder(dataset, run_dir, flags):
    from ember.cli import _next_hint

    hint = _next_hint(dataset, Path(run_dir))
    assert f"`ember demo mnist --serve{flags}`" in hint
    assert f"`ember demo mnist --embedded{flags}`" in hint

