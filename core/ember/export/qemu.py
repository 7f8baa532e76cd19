"""Run exported models on an emulated Cortex-M board: MicroPython's QEMU port under
``qemu-system-arm``, driven with ``mpremote`` over the board's serial port, the way a board user
works.

Four boards (built by ``embedded/build_micropython.sh --qemu``, 256 KB MicroPython heap each):

- ``"an385"``: ``mps2-an385``, a Cortex-M3 without FPU (soft-float firmware), native kernels
  built for ``armv7m`` with libgcc's soft-float helpers linked in (or for ``armv6m``, the
  Cortex-M0 build, which the M3 also runs);
- ``"an386"``: ``mps2-an386``, a Cortex-M4F (hard-float firmware), native kernels for
  ``armv7emsp``;
- ``"an386c"``: the same Cortex-M4F with ``MICROPY_OBJ_REPR_C`` (floats packed into the object
  word, 30 bits: float arithmetic allocates nothing), for the pure tier's garbage figures;
- ``"an386u"``: the an386 firmware with ulab 6.12 built in (``ULAB_MAX_DIMS=2``, float32; the
  source from ``../shared/ulab``, only where that folder is present), for the ulab tier on ARM.

The files a board keeps in flash — ember_micro (.mpy), the native kernels, the model and the
inputs — go into a ROMFS image (``mpremote romfs build``, MicroPython 1.25's read-only
filesystem, read in place without copying into the heap) that QEMU's loader places in the
board's memory; the runner mounts it with ``vfs.VfsRom`` and imports from it.

Heap: each firmware is built with a 256 KB heap (:data:`FIRMWARE_HEAP`). ``run_on_qemu(...,
heap=N)`` runs the model as a board with an ``N``-byte heap would: before anything else, the
runner allocates and holds one ballast block that leaves the collector the pool an ``N``-byte
heap has (``N`` × the firmware's pool / 256 KB, both read with ``gc.mem_alloc() + gc.mem_free()``:
the allocation table's share of a heap is the same at every size). The ballast sits above the
runner's own objects, so the model loads into the rest of the heap as it would on the smaller
board; MemoryError then means the model doesn't fit ``N`` bytes. The firmwares keep their RAM
(data, the heap, the stack) at 0x20000000 as real Cortex-M boards do
(``embedded/qemu/mps2_sram.ld``): MicroPython's collector treats any aligned word equal to a
heap block's address as a pointer, and with the port's stock layout (heap at 0x2E300) byte
counts of 189-451 KB (the ROMFS image's size in the mounted ``bytearray_at``, a ROM file's size
and offset) pinned blocks, so a smallest heap moved with the image's size by up to 4 KB.

Speed: QEMU runs with ``-icount shift=0`` (one instruction = 1 ns of virtual time) and the
runner reads the board's CMSDK timer through ``embedded/qemu/time.py`` (``time.ticks_cpu``,
25 MHz, so one tick = 40 instructions): the result is instructions per inference,
deterministic and independent of the host's load.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .micropython import MicroRun, _write_inputs, embedded_dir, parse_run

BOARDS = {
    # board: (QEMU machine, natmod arch, firmware folder under embedded/build/qemu)
    "an385": ("mps2-an385", "armv7m", "an385"),
    "an386": ("mps2-an386", "armv7emsp", "an386"),
    # the an386 firmware with MICROPY_OBJ_REPR_C: floats live in the object word (30 bits), so
    # the pure tier's float arithmetic allocates nothing
    "an386c": ("mps2-an386", "armv7emsp", "an386c"),
    # the an386 firmware with ulab built in (2-D, float32), from ../shared/ulab's source
    "an386u": ("mps2-an386", "armv7emsp", "an386u"),
}
ROMFS_ADDR = 0x200000  # in the 4 MB at 0x0, above the firmware's code (RAM is at 0x20000000)
ROMFS_MAX = 0x180000
INSN_PER_TICK = 40  # 1 ns per instruction (-icount shift=0) at the timer's 25 MHz
FIRMWARE_HEAP = 262144  # MICROPY_HEAP_SIZE of every firmware (embedded/build_micropython.sh)

# caps the collector's pool at an {heap}-byte heap's: the ballast (less its 16-byte array
# header) holds the rest of the firmware's pool for the whole run
BALLAST = """\
import gc
gc.collect()
_pool = gc.mem_alloc() + gc.mem_free()
_want = {heap} * _pool // {firmware_heap}
if _want < gc.mem_alloc() + 1024:
    raise ValueError("heap cap %d: below what the runner holds already" % {heap})
_a0 = gc.mem_alloc()
_ballast = bytearray(max(0, _pool - _want - 16))
print("ballast", gc.mem_alloc() - _a0)
"""
RUNNER = """\
import sys, vfs, uctypes
vfs.mount(vfs.VfsRom(uctypes.bytearray_at({addr}, {size})), "/rom")
sys.path[:0] = ["/rom/lib", "/rom"]
import time, run_batch
run_batch.main({argv!r}, ("insn", time.ticks_cpu,
                          lambda a, b: time.ticks_diff(b, a) * {per_tick}))
"""


def firmware(board: str = "an385") -> Path:
    """The QEMU firmware of ``board``; FileNotFoundError saying how to build it."""
    if board not in BOARDS:
        raise ValueError(f"unknown board {board!r}: use one of {', '.join(BOARDS)}")
    path = embedded_dir() / "build" / "qemu" / BOARDS[board][2] / "firmware.elf"
    if not path.is_file():
        raise FileNotFoundError(f"no QEMU firmware at {path}: run embedded/setup.sh (or "
                                "embedded/build_micropython.sh --arm --qemu)")
    return path


def native_kernels(board: str) -> Path:
    return embedded_dir() / "build" / "native" / BOARDS[board][1] / "ember_kernels.mpy"


def _mpy_cross() -> Path:
    return embedded_dir() / "build" / "src" / "mpy-cross" / "build" / "mpy-cross"


def build_romfs(folder: str | os.PathLike, out: str | os.PathLike) -> int:
    """``mpremote romfs build`` of ``folder`` into ``out``; returns the image size."""
    subprocess.run([sys.executable, "-m", "mpremote", "romfs", "-o", os.fspath(out),
                    "--no-mpy", "build", os.fspath(folder)], check=True, capture_output=True,
                   text=True)
    return os.path.getsize(out)


def _install(src: Path, dest_dir: Path) -> None:
    """``src`` into ``dest_dir`` as bytecode .mpy (imports without spending heap on the
    compiler), or as source when mpy-cross isn't built."""
    cross = _mpy_cross()
    if cross.is_file():
        subprocess.run([str(cross), "-o", str(dest_dir / (src.stem + ".mpy")), str(src)],
                       check=True)
    else:
        shutil.copyfile(src, dest_dir / src.name)


def stage_board_files(folder: Path, *, native_arch: str | None) -> None:
    """Lay out what an emulated board keeps in flash under ``folder``:
    ``lib/ember_micro/*.mpy``, ``lib/ember_kernels.mpy`` (when ``native_arch``),
    ``lib/run_batch.mpy`` and ``lib/time.mpy`` (the QEMU port has no ``time`` module:
    ``embedded/qemu/time.py`` reads the board's timer)."""
    emb = embedded_dir()
    lib = folder / "lib" / "ember_micro"
    lib.mkdir(parents=True, exist_ok=True)
    for src in sorted((emb / "ember_micro").glob("*.py")):
        _install(src, lib)
    _install(emb / "run_batch.py", folder / "lib")
    _install(emb / "qemu" / "time.py", folder / "lib")
    if native_arch:
        shutil.copyfile(emb / "build" / "native" / native_arch / "ember_kernels.mpy",
                        folder / "lib" / "ember_kernels.mpy")


class QemuBoard:
    """One emulated board, started with a ROMFS image, reachable at ``self.port`` (a pty)."""

    def __init__(self, board: str, romfs: str | os.PathLike, *, icount: bool = True):
        machine = BOARDS[board][0]
        args = ["qemu-system-arm", "-machine", machine, "-nographic", "-monitor", "null",
                "-semihosting", "-serial", "pty", "-kernel", str(firmware(board)),
                "-device", f"loader,file={os.fspath(romfs)},addr={ROMFS_ADDR:#x},force-raw=on"]
        if icount:
            args += ["-icount", "shift=0"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.port = self._find_pty()

    def _find_pty(self) -> str:
        deadline = time.monotonic() + 30
        seen = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                line = self.proc.stdout.readline()
                seen += line
                m = re.search(r"(/dev/pts/\d+)", line)
                if m:
                    return m.group(1)
            if self.proc.poll() is not None:
                break
        self.close()
        raise RuntimeError(f"qemu-system-arm did not open a serial pty:\n{seen}")

    def mpremote(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mpremote", "connect", self.port, *args],
                              capture_output=True, text=True, timeout=timeout, check=False)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_on_qemu(model_path, images, labels=None, *, board: str = "an385", tier: str = "auto",
                logits: bool = False, reps: int = 1, arch: str | None = None,
                heap: int | None = None, timeout: float = 600) -> MicroRun:
    """Run an exported model file on the emulated ``board``; like ``run_on_micropython``, with
    ``insn_per_image`` (instructions per inference) instead of wall time. ``arch`` picks other
    native kernels than the board's own: ``"armv6m"`` (Cortex-M0 code) runs on the an385's
    Cortex-M3, which executes the ARMv6-M instruction set. ``heap``: run as a board whose
    MicroPython heap has this many bytes (at most the firmware's 256 KB; a ballast block holds
    the rest, see the module's docstring); the heap figures reported leave the ballast out.
    Take instruction counts from runs without ``heap``: under the cap they came out higher
    (MNIST MLP, native: 5.3 M instead of 1.8 M per inference).

    >>> r = run_on_qemu("mnist_cnn.emb", images[:4], board="an386")   # doctest: +SKIP
    >>> r.tier, r.insn_per_image                                       # doctest: +SKIP
    ('native', 2950000.0)
    """
    if heap is not None and not 0 < heap <= FIRMWARE_HEAP:
        raise ValueError(f"run_on_qemu: heap={heap} bytes; the {board} firmware's heap holds "
                         f"1 to {FIRMWARE_HEAP} bytes")
    with tempfile.TemporaryDirectory(prefix="ember-qemu-") as tmp:
        root = Path(tmp) / "rom"
        stage_board_files(root, native_arch=None if tier == "pure" else
                          arch or BOARDS[board][1])
        shutil.copyfile(model_path, root / "model.emb")
        inputs, n = _write_inputs(images, str(root))
        name = os.path.basename(inputs)
        img = Path(tmp) / "board.romfs"
        size = build_romfs(root, img)
        if size > ROMFS_MAX:
            raise ValueError(f"ROMFS image of {size} bytes exceeds the {ROMFS_MAX} bytes "
                             "reserved for it")
        argv = ["/rom/model.emb", f"/rom/{name}", str(n), tier, "logits" if logits else "-",
                str(reps)]
        runner = Path(tmp) / "runner.py"
        cap = "" if heap is None else BALLAST.format(heap=heap, firmware_heap=FIRMWARE_HEAP)
        runner.write_text(cap + RUNNER.format(addr=ROMFS_ADDR, size=size,
                                              per_tick=INSN_PER_TICK, argv=argv))
        with QemuBoard(board, img) as b:
            proc = b.mpremote("run", str(runner), timeout=timeout)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 or "Traceback" in out:
        raise RuntimeError(f"the {board} board failed (mpremote exit {proc.returncode}):\n"
                           f"{out[-3000:]}")
    run = parse_run(proc.stdout, labels)
    ballast = re.search(r"^ballast (\d+)", proc.stdout, re.MULTILINE)
    if ballast:
        run.heap_after_load -= int(ballast.group(1))
        run.heap_peak -= int(ballast.group(1))
    return run
