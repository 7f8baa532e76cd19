"""The one rule for every command that writes a folder (``ember serve-web --dist``, ``ember onnx
convert -o``, ``ember micro deploy --folder``, ``web/build_dist.py --out``): a command may write
into a folder that is missing, empty, or marked as written by an ember command before (its
marker file is there); any other folder holds someone's files, and is refused unless the user
says ``force``. A path that is a file (or anything else but a folder) is always refused: a
command never replaces a file with a folder.

>>> import os, tempfile
>>> root = tempfile.mkdtemp()
>>> out = prepare_output_folder(os.path.join(root, "out"), "ember onnx convert")
>>> mark_output_folder(out, "ember onnx convert")
>>> _ = prepare_output_folder(out, "ember onnx convert")  # marked: ours to write again
>>> _ = open(os.path.join(root, "notes.txt"), "w").write("mine")
>>> prepare_output_folder(root, "ember onnx convert")
Traceback (most recent call last):
...
ember.io.output_folder.OutputFolderError: ...is not empty and was not written by ember...
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import EmberError

#: the file a command leaves in a folder it wrote (JSON naming the command)
MARKER = ".ember-output"


class OutputFolderError(EmberError, FileExistsError):
    """The output path holds something a command must not overwrite (a file, or a folder of
    someone else's files)."""


def prepare_output_folder(path: str | os.PathLike, command: str, force: bool = False,
                          marker: str = MARKER) -> Path:
    """Check that ``command`` may write into the folder ``path`` (see the module doc), create
    it when missing and return it. ``marker``: the file that shows a folder was written by
    this kind of command (default :data:`MARKER`; a command whose output always holds a
    manifest may name that instead)."""
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        kind = "a file" if path.is_file() else "not a folder"
        raise OutputFolderError(f"{command}: {path} is {kind}; give a folder path (a missing "
                                "or empty folder, or one an earlier run wrote)")
    if path.is_dir() and not force and not (path / marker).is_file() and any(path.iterdir()):
        raise OutputFolderError(
            f"{command}: {path} is not empty and was not written by ember (no {marker} in it); "
            "its files could be overwritten or deleted: choose a new or empty folder, or pass "
            "--force to write there anyway")
    path.mkdir(parents=True, exist_ok=True)
    return path


def mark_output_folder(path: str | os.PathLike, command: str) -> None:
    """Leave :data:`MARKER` in ``path``: a later run of ``command`` may write there again."""
    (Path(path) / MARKER).write_text(json.dumps({"written_by": command}) + "\n")
