"""``ember micro deploy --mpy``: ember_micro cross-compiled with the project's mpy-cross
(MicroPython 1.25's, built by embedded/build_micropython.sh), and the heap it prints. Run on
the MicroPython unix port from the deployed folder: the ``.mpy`` runtime runs in the heap
``heap_for(tier)`` states, the ``.py`` one doesn't (the board compiles the sources first) and
runs in ``heap_for(tier, mpy=False)``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _models import seeded
from ember.errors import EmberError
from ember.export import embedded_dir, export
from ember.export.mpy import board_heap, check_board, decode_board_mpy


@pytest.fixture(scope="module")
def mlp(tmp_path_factory, mnist):
    from ember.demos.mnist_embedded import INPUT_TRANSFORM, mnist_mlp, normalize

    (tx, _), (vx, _) = mnist
    path = tmp_path_factory.mktemp("deploy") / "mlp.emb"
    report = export(seeded(mnist_mlp(), seed=4), path, (1, 28, 28), int8=True,
                    input_transform=INPUT_TRANSFORM, calibration=normalize(tx[:200]))
    inputs = path.with_name("digit.u8")
    inputs.write_bytes(vx[0].tobytes())
    return path, report, inputs


def _run_from(folder, model, inputs, heap: int, micropython: str):
    """run_batch.py with ember_micro imported from the deployed folder (native kernels too)."""
    env = dict(os.environ, MICROPYPATH=f"{folder}:{embedded_dir() / 'build/native/x64'}")
    return subprocess.run([micropython, "-X", f"heapsize={heap}",
                           str(embedded_dir() / "run_batch.py"), str(model), str(inputs), "1",
                           "native"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_mpy_deploy_runs_in_the_heap_the_estimate_states(micropython, mlp, tmp_path):
    from ember.export.deploy import deploy_to_folder

    path, report, inputs = mlp
    deploy_to_folder(path, tmp_path / "mpy", mpy=True)
    deploy_to_folder(path, tmp_path / "src")
    runtime = sorted(p.name for p in (tmp_path / "mpy" / "ember_micro").iterdir())
    sources = sorted(p.name for p in (tmp_path / "src" / "ember_micro").iterdir())
    assert runtime == [n[:-3] + ".mpy" for n in sources] and "model.mpy" in runtime
    head = (tmp_path / "mpy" / "ember_micro" / "model.mpy").read_bytes()[:3]
    assert head == b"M\x06\x00"  # .mpy version 6, bytecode only: no architecture
    est = report.memory
    assert board_heap(path, mpy=True)["native"] == est.heap_for("native")
    heap = est.heap_for("native")
    ok = _run_from(tmp_path / "mpy", path, inputs, heap, micropython)
    assert ok.returncode == 0 and "tier native" in ok.stdout, ok.stdout + ok.stderr
    short = _run_from(tmp_path / "src", path, inputs, heap, micropython)
    assert short.returncode != 0 and "MemoryError" in short.stdout + short.stderr
    src = _run_from(tmp_path / "src", path, inputs, est.heap_for("native", mpy=False),
                    micropython)
    assert src.returncode == 0 and "tier native" in src.stdout, src.stdout + src.stderr


def test_cli_deploy_mpy_prints_the_heap(micropython, mlp, tmp_path):
    path, report, _ = mlp
    for flag, mpy in (["--mpy"], True), ([], False):
        board = tmp_path / f"board{mpy}"
        proc = subprocess.run([sys.executable, "-m", "ember.cli", "micro", "deploy", str(path),
                               "--folder", str(board), *flag], capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        heaps = board_heap(path, mpy=mpy)
        want = ", ".join(f"{t} {(h + 1023) // 1024} KB" for t, h in heaps.items())
        assert want in proc.stdout, proc.stdout
        assert ("as .mpy" if mpy else "as .py sources") in proc.stdout, proc.stdout
        assert any((board / "ember_micro").glob("*.mpy" if mpy else "*.py"))


def test_board_version_and_arch_are_checked():
    """sys.implementation._mpy of the board against what mpy-cross emits and --arch."""
    m4f_125 = decode_board_mpy(6 | 3 << 8 | 7 << 10)
    assert m4f_125 == (6, 3, "armv7emsp")
    check_board(m4f_125, (6, 3), "armv7emsp")
    check_board(m4f_125, (6, 3), None)
    check_board((6, 1, None), (6, 3), None)  # bytecode loads on any 6.x, any arch
    with pytest.raises(EmberError, match=r"loads \.mpy version 5, this mpy-cross emits 6\.3"):
        check_board((5, 0, None), (6, 3), None)
    with pytest.raises(EmberError, match="the native kernels are armv7m for .mpy v6.3; the "
                       "board runs armv7emsp with .mpy v6.3"):
        check_board(m4f_125, (6, 3), "armv7m")
    with pytest.raises(EmberError, match="board runs armv7emsp with .mpy v6.2"):
        check_board(decode_board_mpy(6 | 2 << 8 | 7 << 10), (6, 3), "armv7emsp")
