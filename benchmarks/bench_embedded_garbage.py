"""Garbage per inference on every ember_micro tier (issue 19's goal: <= 16 KB), and what the
pure tier's int8 chains cost or save in time.

- unix port (MicroPython, single-precision floats, MICROPY_OBJ_REPR_A): native and pure, MLP and
  CNN, f32 and int8: garbage per inference (bytes one run allocates, collector off), heap after
  load, heap peak; pure int8 with its integer chains and with them switched off (the float
  path, as before), alternating runs, time per image and the ratio;
- (the ulab tier, on real ulab firmware: benchmarks/bench_embedded_ulab.py);
- with --boards: the emulated Cortex-M4F (an386, REPR_A) and the same firmware built with
  MICROPY_OBJ_REPR_C (an386c), pure tier: garbage, heap, instructions per inference.

    python benchmarks/bench_embedded_garbage.py [--reps 5] [--boards]

Models have seeded weights (the figures don't depend on training). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _common import row, write_record
from ember.demos.mnist_embedded import INPUT_TRANSFORM, mnist_arrays, mnist_mlp, normalize
from ember.demos.mnist_model import mnist_cnn
from ember.export import embedded_dir, export, run_micropython_script, run_on_micropython

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "embedded"))
sys.path.insert(0, str(embedded_dir()))

# MicroPython: the same model with chains (as loaded) and without (float path), alternating
ALTERNATE = """\
import gc, sys, time
import ember_micro
path, inputs, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
img = open(inputs, "rb").read()
on = ember_micro.Model(path, "pure")
off = ember_micro.Model(path, "pure")
for L in off.layers:
    L.req = None
off._lut = None
t = {0: 0, 1: 0}
for r in range(reps):
    for k, m in ((0, on), (1, off)) if r % 2 == 0 else ((1, off), (0, on)):
        gc.collect()
        t0 = time.ticks_us()
        m.run(img)
        t[k] += time.ticks_diff(time.ticks_us(), t0)
print("chains_us", t[0] // reps, "float_us", t[1] // reps)
"""


def _kb(v) -> str:
    return "over the heap" if v is None else f"{v / 1024:.1f} KB"


def _files(tmp: str, x):
    out = {}
    for name, make in (("MLP", mnist_mlp), ("CNN", mnist_cnn)):
        from _models import seeded

        for int8 in (False, True):
            path = os.path.join(tmp, f"{name}{int(int8)}.emb")
            export(seeded(make(), seed=4), path, (1, 28, 28), int8=int8,
                   input_transform=INPUT_TRANSFORM, calibration=normalize(x) if int8 else None)
            out[name, int8] = path
    return out


def _garbage(model: str, where: str, garbage) -> dict:
    """A record row: garbage per inference against the issue's goal (no peer measures it)."""
    return row("mcu", f"garbage per inference, {model}, {where}",
               None if garbage is None else garbage / 1024, None, "KB", "none",
               note="goal ≤ 16 KB" + ("; more than the free heap" if garbage is None else ""))


def unix_port(files, images, reps: int, tmp: str, record: list) -> None:
    print("| model | tier | garbage / inference | heap after load | heap peak |")
    print("|---|---|---|---|---|")
    for (name, int8), path in files.items():
        for tier in ("native", "pure"):
            r = run_on_micropython(path, images[:1], tier=tier, heapsize="16M")
            print(f"| {name} {'int8' if int8 else 'f32'} | {tier} | {_kb(r.garbage_bytes)} | "
                  f"{r.heap_after_load / 1024:.0f} KB | {r.heap_peak / 1024:.0f} KB |")
            record.append(_garbage(f"{name} {'int8' if int8 else 'f32'}",
                                   f"{tier} tier, unix port", r.garbage_bytes))
    inputs = os.path.join(tmp, "img.u8")
    Path(inputs).write_bytes(images[0].tobytes())
    script = os.path.join(tmp, "alternate.py")
    Path(script).write_text(ALTERNATE)
    print("\n| model (pure, int8) | int8 chains | float path | chains / float |")
    print("|---|---|---|---|")
    for name in ("MLP", "CNN"):
        proc = run_micropython_script([script, files[name, True], inputs, str(reps)],
                                      heapsize="512K", native=False)
        parts = proc.stdout.split()
        if proc.returncode or len(parts) < 4:
            raise RuntimeError(proc.stdout + proc.stderr)
        on, off = int(parts[1]), int(parts[3])
        print(f"| {name} | {on / 1000:.1f} ms | {off / 1000:.1f} ms | {on / off:.2f} |")


def boards(files, images, record: list) -> None:
    from ember.export import qemu

    print("\n| model | board | garbage / inference | heap after load | heap peak | "
          "instructions / inference |")
    print("|---|---|---|---|---|---|")
    for board in ("an386", "an386c"):
        for (name, int8), path in files.items():
            r = qemu.run_on_qemu(path, images[:1], board=board, tier="pure")
            print(f"| {name} {'int8' if int8 else 'f32'} | {board} pure | "
                  f"{_kb(r.garbage_bytes)} | {r.heap_after_load / 1024:.0f} KB | "
                  f"{r.heap_peak / 1024:.0f} KB | {r.insn_per_image / 1e6:.0f} M |")
            record.append(_garbage(f"{name} {'int8' if int8 else 'f32'}",
                                   f"pure tier, {board} (QEMU)", r.garbage_bytes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--boards", action="store_true")
    args = ap.parse_args()
    (tx, _), (vx, _) = mnist_arrays("train"), mnist_arrays("test")
    with tempfile.TemporaryDirectory() as tmp:
        files = _files(tmp, tx[:200])
        record = []
        unix_port(files, vx[:1], args.reps, tmp, record)
        if args.boards:
            boards(files, vx[:1], record)
    write_record(record)


if __name__ == "__main__":
    main()
