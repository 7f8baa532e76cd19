"""ember_micro on emulated Cortex-M boards: MicroPython's QEMU port (Debian's MicroPython 1.25
source, built by embedded/build_micropython.sh --qemu) under qemu-system-arm, reached with
mpremote over the board's serial port, with a 256 KB heap:

- mps2-an385, Cortex-M3 without FPU: pure tier, and native kernels built for armv7m (soft
  float, libgcc's helpers linked into the .mpy) and for armv6m (the Cortex-M0 build, with
  embedded/native/fdiv_pic.c's division; the M3 runs ARMv6-M code);
- mps2-an386, Cortex-M4F: pure tier, and native kernels built for armv7emsp (hard float);
- an386c, the same Cortex-M4F with MICROPY_OBJ_REPR_C (floats in the object word, 30 bits):
  the f32 pure tier's garbage per inference where floats aren't heap objects.

Garbage per inference (bytes one run allocates, collector off) is held to 16 KB wherever the
firmware allows it: native, pure int8, and pure f32 on REPR_C (test_garbage.py says why not
pure f32 on REPR_A).

Expected values come from CPython ember (f32: the model's own forward; int8: the numpy
simulation of the exported file), never from ember_micro. Tolerances as in test_micropython.py.
Instruction counts come from QEMU's -icount and go to benchmarks/RESULTS.md, not asserted.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ember.demos.mnist_embedded import INPUT_TRANSFORM, normalize
from ember.export import embedded_dir, export, load, model_logits, run_reference

GARBAGE_LIMIT = 16 * 1024
F32_TOL = 1e-4


@pytest.fixture(scope="session")
def boards(micropython):
    """Both QEMU firmwares, the ARM kernels and mpremote; built on demand (idempotent)."""
    from ember.export import qemu

    if shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.fail("qemu-system-arm / arm-none-eabi-gcc missing: run embedded/setup.sh "
                    "(apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
    try:
        import mpremote  # noqa: F401
    except ImportError:
        pytest.fail("mpremote missing: run embedded/setup.sh (pip install mpremote)")
    # (an386u, with ulab built in, only where ../shared/ulab is: test_ulab.py)
    stock = [b for b in qemu.BOARDS if b != "an386u"]
    need = [qemu.native_kernels(b) for b in stock]
    need.append(embedded_dir() / "build" / "native" / "armv6m" / "ember_kernels.mpy")
    try:
        need += [qemu.firmware(b) for b in stock]
    except FileNotFoundError:
        need.append(Path("missing"))
    if not all(p.is_file() for p in need):
        proc = subprocess.run(["bash", str(embedded_dir() / "build_micropython.sh"), "--qemu"],
                              capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            pytest.fail("build_micropython.sh --qemu failed:\n" + proc.stderr[-3000:])
    return qemu


def _export(model, path, mnist, int8):
    (tx, _), _ = mnist
    return export(model, path, (1, 28, 28), int8=int8, input_transform=INPUT_TRANSFORM,
                  calibration=normalize(tx[:200]) if int8 else None)


def _check(run, model, path, x, int8, tol=F32_TOL):
    got = np.asarray(run.logits)
    if int8:
        want = run_reference(load(path), x)
        assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()
        assert np.mean(got.argmax(1) == want.argmax(1)) >= 0.95
    else:
        want = model_logits(model, x)
        bad = np.abs(got - want) > tol * (1 + np.abs(want))
        assert not bad.any(), f"max diff {np.abs(got - want).max()}"
        assert run.predictions == want.argmax(1).tolist()


CASES = [  # (model, board, tier, kernels, images): the pure CNN costs ~2-3e9 instructions
    ("mlp", "an385", "native", "armv7m", 8), ("mlp", "an386", "native", "armv7emsp", 8),
    ("mlp", "an385", "native", "armv6m", 4),  # Cortex-M0 code (own float division) on the M3
    ("mlp", "an385", "pure", None, 2), ("mlp", "an386", "pure", None, 2),
    ("cnn", "an385", "native", "armv7m", 4), ("cnn", "an386", "native", "armv7emsp", 4),
    ("cnn", "an385", "native", "armv6m", 2),
    ("cnn", "an386", "pure", None, 1),
    # MICROPY_OBJ_REPR_C firmware (floats in the object word): the f32 pure tier's garbage
    ("mlp", "an386c", "pure", None, 2), ("cnn", "an386c", "pure", None, 1),
]
# 30-bit floats on the REPR_C firmware (2 mantissa bits fewer than float32): measured max
# relative error 1.8e-4 on the MNIST CNN against float64
REPR_C_TOL = 1e-3


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("which, board, tier, arch, n", CASES)
def test_mnist_on_the_emulated_board(boards, mnist, trained_mlp, trained_cnn, tmp_path, which,
                                     board, tier, arch, n, int8):
    model = trained_mlp if which == "mlp" else trained_cnn
    _, (vx, vy) = mnist
    path = tmp_path / "m.emb"
    report = _export(model, path, mnist, int8)
    run = boards.run_on_qemu(path, vx[:n], vy[:n], board=board, tier=tier, logits=True,
                             arch=arch)
    assert run.tier == tier
    _check(run, model, path, normalize(vx[:n]), int8,
           REPR_C_TOL if board == "an386c" else F32_TOL)
    assert run.insn_per_image > 0
    # the estimate holds on the board: live heap after loading within the tier's RAM figure
    assert 0 < run.heap_after_load <= report.memory.ram_for(tier)
    # garbage per inference: C loops allocate nothing per value; the pure tier runs int8
    # layers in small ints (_chain.py), and f32 ones allocate nothing where floats aren't
    # boxed (REPR_C); on REPR_A firmware every float it computes is a heap object
    if tier == "native" or int8 or board == "an386c":
        assert 0 <= run.garbage_bytes <= GARBAGE_LIMIT
        assert run.heap_after_load + run.garbage_bytes <= report.memory.ram_for(tier)


def test_automatic_tier_is_native_on_the_board(boards, mnist, trained_mlp, tmp_path):
    _, (vx, _) = mnist
    path = tmp_path / "m.emb"
    _export(trained_mlp, path, mnist, False)
    run = boards.run_on_qemu(path, vx[:1], board="an386")
    assert run.tier == "native" and run.why.startswith("native: the fastest tier")


def _run_folder(model, folder: Path) -> None:
    """What `ember demo mnist` leaves behind: model.json + model.safetensors."""
    from ember.io import save_file

    folder.mkdir()
    (folder / "model.json").write_text(json.dumps({"channels": [16, 32], "hidden": 64}))
    save_file(dict(model.state_dict()), folder / "model.safetensors")


def test_deploy_flow_with_ember_export_and_mpremote(boards, mnist, trained_cnn, tmp_path):
    """The README's flow: `ember export` on a run folder, the runtime + kernels + model +
    demos/mnist/embedded/main.py laid out as `mpremote cp` puts them on a board, then `mpremote`
    runs main.py. The emulated board's flash is a ROMFS image (`mpremote romfs build`); its
    missing `time` module comes from embedded/qemu/time.py (staged with the runtime)."""
    _, (vx, vy) = mnist
    run_dir = tmp_path / "run"
    _run_folder(trained_cnn, run_dir)
    board = tmp_path / "board"
    proc = subprocess.run([sys.executable, "-m", "ember.cli", "export", str(run_dir), "-o",
                           str(tmp_path / "model.emb"), "--int8", "--ram-kb", "256"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "MicroPython heap >=" in proc.stdout and "native" in proc.stdout
    boards.stage_board_files(board, native_arch="armv7emsp")
    shutil.copyfile(tmp_path / "model.emb", board / "model.emb")
    n = 6
    (board / "digits.bin").write_bytes(struct.pack("<H", n) + bytes(vy[:n].astype(np.uint8))
                                       + vx[:n].tobytes())
    main = embedded_dir().parent / "demos" / "mnist" / "embedded" / "main.py"
    shutil.copyfile(main, board / "main.py")
    img = tmp_path / "flash.romfs"
    size = boards.build_romfs(board, img)
    with boards.QemuBoard("an386", img, icount=False) as b:
        mount = (f"import vfs, uctypes, sys, os; vfs.mount(vfs.VfsRom(uctypes.bytearray_at("
                 f"{boards.ROMFS_ADDR}, {size})), '/rom'); sys.path[:0] = ['/rom/lib']; "
                 "os.chdir('/rom')")
        out = b.mpremote("exec", mount, "exec", "import main", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "native kernels" in out.stdout, out.stdout
    want = run_reference(load(tmp_path / "model.emb"), normalize(vx[:n])).argmax(1)
    for i, p in enumerate(want):
        assert f"digit {i}: predicted {p}," in out.stdout, out.stdout


def test_last_layer_fine_tuning_on_the_board(boards, mnist, trained_mlp, tmp_path):
    """ember_micro.LastLayer on the emulated Cortex-M4F (256 KB heap) against CPython ember's
    Autodiff + SGD on the same examples (the body's features from CPython ember)."""
    from _finetune import autodiff_sgd, finetune_script

    _, (vx, vy) = mnist
    path = tmp_path / "m.emb"
    _export(trained_mlp, path, mnist, False)
    steps, lr = 6, 0.05
    w_ref, b_ref, losses_ref = autodiff_sgd(trained_mlp, normalize(vx[:steps]), vy[:steps], lr)
    board = tmp_path / "board"
    boards.stage_board_files(board, native_arch="armv7emsp")
    shutil.copyfile(path, board / "model.emb")
    (board / "x.u8").write_bytes(vx[:steps].tobytes())
    (board / "y.u8").write_bytes(bytes(vy[:steps].astype(np.uint8)))
    img = tmp_path / "flash.romfs"
    size = boards.build_romfs(board, img)
    script = tmp_path / "tune.py"
    script.write_text(finetune_script(f"vfs.mount(vfs.VfsRom(uctypes.bytearray_at("
                                      f"{boards.ROMFS_ADDR}, {size})), '/rom')", "/rom", steps, lr))
    with boards.QemuBoard("an386", img, icount=False) as b:
        out = b.mpremote("run", str(script), timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stdout, out.stdout + out.stderr
    _compare_tuned(out.stdout, w_ref, b_ref, losses_ref)


def _compare_tuned(stdout, w_ref, b_ref, losses_ref):
    from _finetune import parse

    got = parse(stdout)
    np.testing.assert_allclose(got["loss"], losses_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["b"], b_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["w"], w_ref.ravel(), rtol=1e-4, atol=1e-5)
    assert got["heap_peak"] <= 256 * 1024
