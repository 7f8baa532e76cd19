"""Hostile MCU model files (the security issue's reproducers) on both readers: the CPython
decoder (``ember.export.load``) and ember_micro, on CPython and on the real MicroPython binary
with a board-sized heap. Each must give the reader's typed error naming the problem, never a
MemoryError, a ZeroDivisionError, a hang or a model that silently computes something else.

The files live in tests/fuzz/regressions/mcu/. ``v1_*`` were written by ember before format
version 2 (whose CRC left the header out) and edited in the header; the others are version 2
files edited the same way, most with the checksum recomputed so the semantic checks, not the
CRC, must catch them. ``python tests/embedded/test_mcu_security.py`` rewrites the version 2 ones.
Each test also undoes the edit and checks the file then loads: the named check is the one that
fires, on a file that is otherwise valid.
"""

from __future__ import annotations

from pathlib import Path

import ember
import pytest
from _models import seeded
from _tamper import GROUPS, MAX_ACT, N_LAYERS, patch
from ember import nn
from ember.errors import RecordError
from ember.export import decode, embedded_dir, export, run_micropython_script

REGRESSIONS = Path(__file__).parents[1] / "fuzz" / "regressions" / "mcu"
HEAP = "256K"
M300 = 300_000_000

# file, the message both readers give, the edit undone (None: nothing to undo)
CASES = [
    ("max_act_300m_header_only.emb", "CRC32 mismatch",
     lambda d: patch(d, MAX_ACT, 256, fix_crc=False)),
    ("max_act_300m_rechecksummed.emb", "max_act is 300000000 values, the layers need 256",
     lambda d: patch(d, MAX_ACT, 256)),
    ("n_layers_2_to_1_rechecksummed.emb",
     "the header declares 5 outputs, the last layer gives 256", lambda d: patch(d, N_LAYERS, 2)),
    ("n_layers_0_rechecksummed.emb", "n_layers is 0: a model has at least one layer",
     lambda d: patch(d, N_LAYERS, 2)),
    ("groups_0_rechecksummed.emb", r"layer 0 \(conv2d\): kernel 3x3, stride 1x1, groups 0: "
     "each must be >= 1", lambda d: patch(d, GROUPS, 1, layer=0)),
] + [(f"v1_{name}.emb", "format version 1 was written by an older ember .* re-export the "
      "model with this ember", None)
     for name in ("max_act_300m_header", "n_layers_2_to_1", "n_layers_0", "groups_0")]
# a header that agrees with its layer: one activation over a (3, 10000, 10000) input
CONSISTENT = "max_act_300m_consistent_geometry.emb"


def _conv_linear() -> bytes:
    """Conv2d(1→4, 3×3, pad 1) + ReLU on (1, 8, 8), then Linear(256 → 5): a valid file."""
    model = seeded(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(256, 5)))
    return _export_bytes(model, (1, 8, 8))


def _export_bytes(model, shape) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.emb"
        export(model, path, shape)
        return path.read_bytes()


def write_reproducers(folder: Path) -> None:
    """The version 2 files of CASES and CONSISTENT, from a fresh export."""
    good = _conv_linear()
    edits = {
        "max_act_300m_header_only.emb": patch(good, MAX_ACT, M300, fix_crc=False),
        "max_act_300m_rechecksummed.emb": patch(good, MAX_ACT, M300),
        "n_layers_2_to_1_rechecksummed.emb": patch(good, N_LAYERS, 1),
        "n_layers_0_rechecksummed.emb": patch(good, N_LAYERS, 0),
        "groups_0_rechecksummed.emb": patch(good, GROUPS, 0, layer=0),
        CONSISTENT: _export_bytes(nn.ReLU(), (3, 10_000, 10_000)),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in edits.items():
        (folder / name).write_bytes(data)


def _micropython(path: Path, tmp_path: Path):
    """run_batch.py on ``path``: the exit status and everything it printed."""
    inputs = tmp_path / "x.f32"
    inputs.write_bytes(bytes(4 * 64))
    proc = run_micropython_script([str(embedded_dir() / "run_batch.py"), str(path),
                                   str(inputs), "1", "auto"], heapsize=HEAP, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("name, message, undo", CASES, ids=[c[0] for c in CASES])
def test_cpython_decoder_rejects(name, message, undo):
    data = (REGRESSIONS / name).read_bytes()
    with pytest.raises(RecordError, match=message):
        decode(data)
    if undo is not None:
        assert decode(undo(data)).output_shape == (5, 1, 1)


@pytest.mark.parametrize("name, message, undo", CASES, ids=[c[0] for c in CASES])
def test_ember_micro_on_cpython_rejects(name, message, undo, tmp_path):
    import ember_micro

    with pytest.raises(ember_micro.ModelError, match=message):
        ember_micro.Model(str(REGRESSIONS / name), "pure")
    if undo is not None:
        fixed = tmp_path / "fixed.emb"
        fixed.write_bytes(undo((REGRESSIONS / name).read_bytes()))
        assert ember_micro.Model(str(fixed), "pure").n_out == 5


@pytest.mark.parametrize("name, message, undo", CASES, ids=[c[0] for c in CASES])
def test_micropython_rejects(micropython, tmp_path, name, message, undo):
    import re

    rc, out = _micropython(REGRESSIONS / name, tmp_path)
    assert rc == 3 and re.search(message, out), out
    assert "MemoryError" not in out
    if undo is not None:
        fixed = tmp_path / "fixed.emb"
        fixed.write_bytes(undo((REGRESSIONS / name).read_bytes()))
        rc, out = _micropython(fixed, tmp_path)
        assert rc == 0 and "p 0 " in out, out


# ember_micro on CPython has no heap to measure (CPython's gc can't say), so the consistent file
# is tested on the CPython decoder, bounded by ember.limits, and on MicroPython's real heap.
def test_consistent_300m_activation_is_bounded_by_the_limits_on_cpython():
    data = (REGRESSIONS / CONSISTENT).read_bytes()
    with pytest.raises(RecordError, match="max_act: 300000000 exceeds the limit "
                       "max_activation_elements"):
        decode(data)
    with ember.limits.override(max_activation_elements=M300):  # a trusted file: it decodes
        assert decode(data).output_shape == (3, 10_000, 10_000)


def test_consistent_300m_activation_is_bounded_by_the_heap_on_micropython(micropython,
                                                                           tmp_path):
    rc, out = _micropython(REGRESSIONS / CONSISTENT, tmp_path)
    # two ping-pong buffers of 300M float32 plus the 300M-value output
    assert rc == 3, out
    assert f"the activation and weight chunk buffers need {4 * M300 * 3} bytes" in out, out
    assert "residual slots, chunks 0 bytes), the heap has" in out and "MemoryError" not in out


def test_every_regression_file_is_covered():
    """Each hand-made reproducer is a case here; files a fuzz run found are named fuzz_*."""
    names = {p.name for p in REGRESSIONS.glob("*.emb") if not p.name.startswith("fuzz_")}
    assert names == {c[0] for c in CASES} | {CONSISTENT}


def test_reproducers_are_current(tmp_path):
    """The saved version 2 files are what write_reproducers makes from today's writer."""
    write_reproducers(tmp_path)
    for p in tmp_path.iterdir():
        assert p.read_bytes() == (REGRESSIONS / p.name).read_bytes(), p.name


if __name__ == "__main__":
    write_reproducers(REGRESSIONS)
