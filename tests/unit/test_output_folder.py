"""Commands that write a folder never destroy what the user had there (issue 33): ``ember
serve-web --dist``, ``web/build_dist.py --out``, ``ember onnx convert -o`` and ``ember micro
deploy --folder`` refuse a non-empty folder without their marker (unless ``--force``) and a path
that is a file, and leave it untouched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ember.cli import main
from ember.demos.serve import load_source
from ember.io.output_folder import (
    MARKER,
    OutputFolderError,
    mark_output_folder,
    prepare_output_folder,
)

ROOT = Path(__file__).resolve().parents[2]


def _user_folder(root: Path) -> Path:
    """A folder of someone's files: what a careless --dist/--out/--folder points at."""
    folder = root / "mydocs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("my notes")
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return folder


def _untouched(folder: Path) -> bool:
    return ((folder / "notes.txt").read_text() == "my notes"
            and (folder / "sub" / "data.csv").read_text() == "a,b\n1,2\n"
            and sorted(p.name for p in folder.rglob("*")) == ["data.csv", "notes.txt", "sub"])


def test_the_rule(tmp_path):
    assert prepare_output_folder(tmp_path / "new" / "out", "cmd").is_dir()  # missing: created
    assert prepare_output_folder(tmp_path / "new" / "out", "cmd").is_dir()  # empty
    user = _user_folder(tmp_path)
    with pytest.raises(OutputFolderError, match=r"cmd: .*mydocs is not empty and was not "
                                                r"written by ember.*--force"):
        prepare_output_folder(user, "cmd")
    assert _untouched(user)
    assert prepare_output_folder(user, "cmd", force=True) == user
    mark_output_folder(tmp_path / "new" / "out", "cmd")
    (tmp_path / "new" / "out" / "model.py").write_text("")
    assert (tmp_path / "new" / "out" / MARKER).is_file()
    prepare_output_folder(tmp_path / "new" / "out", "cmd")  # marked: an earlier run's
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    for force in (False, True):  # never a file replaced by a folder, even with force
        with pytest.raises(OutputFolderError, match="notes.txt is a file; give a folder path"):
            prepare_output_folder(a_file, "cmd", force=force)
    assert a_file.read_text() == "mine"
    assert issubclass(OutputFolderError, FileExistsError)  # the CLI reports it on one line


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_serve_web_dist_keeps_what_is_there(tmp_path, kind):
    target = _user_folder(tmp_path) if kind == "folder" else tmp_path / "notes.txt"
    if kind == "file":
        target.write_text("my notes")
    try:  # a subprocess: a build that went ahead would then serve until killed
        proc = subprocess.run([sys.executable, "-m", "ember.cli", "serve-web", "--port", "0",
                               "--dist", str(target)], capture_output=True, text=True,
                              timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("serve-web built into the folder and served it")
    assert proc.returncode == 1
    err = proc.stderr
    assert err.startswith("ember: error: serve-web --dist: ") and "\n" == err[-1]
    if kind == "folder":
        assert "not empty and was not written by ember (no ember-dist.json" in err
        assert _untouched(target)
    else:
        assert "is a file" in err and target.read_text() == "my notes"


def test_build_dist_refuses_a_folder_that_is_no_distribution(tmp_path):
    build_dist = load_source("ember_build_dist_folder_test", ROOT / "web" / "build_dist.py")
    user = _user_folder(tmp_path)
    with pytest.raises(OutputFolderError, match="build_dist --out: .*--force"):
        build_dist.build(user)
    assert _untouched(user)


def _linear_onnx(folder: Path) -> Path:
    import ember
    import ember.onnx
    from ember import nn

    path = folder / "m.onnx"
    ember.onnx.export(nn.Linear(2, 1), ember.ones(1, 2), str(path))
    return path


def test_onnx_convert_out(tmp_path, capsys):
    model = _linear_onnx(tmp_path)
    user = _user_folder(tmp_path)
    assert main(["onnx", "convert", str(model), "-o", str(user)]) == 1
    assert "OutputFolderError" in capsys.readouterr().err and _untouched(user)
    out = tmp_path / "out"
    assert main(["onnx", "convert", str(model), "-o", str(out)]) == 0
    assert main(["onnx", "convert", str(model), "-o", str(out)]) == 0  # its own folder again
    assert main(["onnx", "convert", str(model), "-o", str(user), "--force"]) == 0
    assert (user / "model.py").is_file() and (user / "notes.txt").read_text() == "my notes"


def _model_file(folder: Path) -> Path:
    from ember import nn
    from ember.export import export

    path = folder / "digits.emb"
    export(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), str(path), (1, 2, 2))
    return path


def test_micro_deploy_folder(tmp_path, capsys):
    model = _model_file(tmp_path)
    user = _user_folder(tmp_path)
    assert main(["micro", "deploy", "--folder", str(user), str(model)]) == 1
    assert "micro deploy: " in capsys.readouterr().err and _untouched(user)
    assert main(["micro", "deploy", "--folder", str(user), "--force", str(model)]) == 0
    assert (user / "digits.emb").read_bytes() == model.read_bytes()
    assert (user / "notes.txt").read_text() == "my notes"


@pytest.mark.parametrize("content", [b"", b"hello, not a model\n", b"EMBM" + bytes(60)],
                         ids=["empty", "text", "bad-header"])
def test_micro_deploy_refuses_a_file_that_is_no_model(tmp_path, content, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    board = tmp_path / "board"
    assert main(["micro", "deploy", "--folder", str(board), str(notes)]) == 1
    err = capsys.readouterr().err
    assert f"micro deploy: {notes} is not a model file written by `ember export`" in err
    assert not board.exists() or not any(board.iterdir())
    assert os.path.getsize(notes) == len(content)
