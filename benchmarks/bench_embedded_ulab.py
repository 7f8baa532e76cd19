"""The ulab tier on real ulab firmware (../shared/ulab: MicroPython 1.25 unix builds with ulab
6.12; tests/embedded/_ulab_firmware.py), beside the native tier in the same binary:

- MNIST MLP and CNN, float32 / int8 / int4 weight-only, uint8 digits in: ms per image on the
  ulab and the native tier (2-D float32 build, its x64 native kernels), argmax agreement with
  the numpy reference of the file and the largest logit difference, garbage per inference,
  heap after load; instructions per inference on the emulated Cortex-M4F with ulab (an386u),
  ulab and native;
- the smallest heap each runs in (bisected -X heapsize) beside ``heap_for(tier)``, on the unix
  port (native, pure) and the ulab builds;
- ember_micro from .py sources vs .mpy (``ember micro deploy --mpy``): smallest heap, native;
- LastLayer (on-board fine-tuning of the last Linear): bytes one SGD step allocates (forward
  and update), native and ulab tiers.

    python benchmarks/bench_embedded_ulab.py [--digits 100] [--quick]

Times on the unix port are wall-clock on a shared 2-core machine (medians of alternating
runs): compare the tiers' ratio, not the ms; the emulated board's instruction counts are
deterministic.
Prints markdown tables and writes the scoreboard record (instructions, garbage, heap: not the
unix port's wall-clock times).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
from _common import row, write_record
from ember.demos.mnist_embedded import (
    export_mnist,
    mnist_arrays,
    mnist_mlp,
    normalize,
    train_briefly,
)
from ember.demos.mnist_model import mnist_cnn
from ember.export import embedded_dir, load, run_on_micropython, run_reference
from ember.export import micropython as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "embedded"))
from _heap import min_heap  # noqa: E402
from _ulab_firmware import binary, missing  # noqa: E402

KINDS = ("f32", "int8", "int4")
CNN_NOTE = "stated: ulab's dot makes every conv output row a new array"


def garbage_note(name: str, kind: str) -> str:
    """The issue's goal for this figure."""
    if name == "cnn":
        return CNN_NOTE
    return "goal: no MB-sized garbage" if kind == "int4" else "goal ≤ 16 KB"
STEP_SCRIPT = """\
import gc, sys
import ember_micro
m = ember_micro.Model(sys.argv[1], sys.argv[2])
t = ember_micro.LastLayer(m)
img = open(sys.argv[3], "rb").read()
t.step(img, 3, 0.01)
gc.collect()
gc.disable()
a = gc.mem_alloc()
t.step(img, 3, 0.01)
print("step_bytes", gc.mem_alloc() - a)
"""


def _files(tmp: str, tx, ty, quick: bool) -> dict:
    out = {}
    for name, make, steps in (("mlp", mnist_mlp, 120), ("cnn", mnist_cnn, 25)):
        model = train_briefly(make(), tx, ty, steps=5 if quick else steps, batch=32)
        for kind in KINDS:
            path = os.path.join(tmp, f"{name}_{kind}.emb")
            out[name, kind] = path, export_mnist(model, path, kind, tx)
    return out


def speed(files, vx, digits: int, records: list, alternations: int = 3) -> None:
    exe = binary("2d-f32")
    print("\n| model | ulab ms/img | native ms/img | ulab / native | argmax = reference | "
          "max logit diff | garbage / inference | heap after load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (name, kind), (path, _) in files.items():
        want = run_reference(load(path), normalize(vx[:digits]))
        ms = {"ulab": [], "native": []}
        for _ in range(alternations):  # alternating, medians: the host's load moves
            for tier in ms:
                # a heap large enough for one inference's garbage with the collector off
                r = run_on_micropython(path, vx[:digits], tier=tier, logits=True,
                                       micropython=exe, heapsize="8M")
                ms[tier].append(r.ms_per_image)
                if tier == "ulab":
                    u = r
        got = np.asarray(u.logits)
        agree = float(np.mean(got.argmax(1) == want.argmax(1)))
        diff = float(np.abs(got - want).max())
        um, nm = float(np.median(ms["ulab"])), float(np.median(ms["native"]))
        print(f"| {name} {kind} | {um:.2f} | {nm:.2f} | {um / nm:.1f}x | {100 * agree:.0f}% | "
              f"{diff:.1e} | {u.garbage_bytes / 1024:.1f} KB | "
              f"{u.heap_after_load / 1024:.0f} KB |", flush=True)
        records.append(row("mcu", f"garbage per inference, MNIST {name} {kind}, ulab tier "
                           f"(real ulab, unix port)", round(u.garbage_bytes / 1024, 1), None,
                           "KB", "none", note=garbage_note(name, kind)))


def board(files, vx, records: list) -> None:
    from ember.export.qemu import run_on_qemu

    print("\n| model | an386u ulab, M instructions | native | ulab / native | ulab garbage |")
    print("|---|---:|---:|---:|---:|")
    for (name, kind), (path, _) in files.items():
        u = run_on_qemu(path, vx[:1], board="an386u", tier="ulab")
        n = run_on_qemu(path, vx[:1], board="an386u", tier="native")
        garbage = ("over the heap" if u.garbage_bytes is None
                   else f"{u.garbage_bytes / 1024:.1f} KB")
        print(f"| {name} {kind} | {u.insn_per_image / 1e6:.1f} | {n.insn_per_image / 1e6:.1f} "
              f"| {u.insn_per_image / n.insn_per_image:.1f}x | {garbage} |", flush=True)
        records.append(row("mcu", f"ulab tier vs native, MNIST {name} {kind}, Cortex-M4F "
                           f"(an386u)", u.insn_per_image / 1e6, n.insn_per_image / 1e6,
                           "M instructions", "ember native tier"))


def heaps(files, vx, records: list) -> None:
    configs = [("unix", "native"), ("unix", "pure"), ("2d-f32", "ulab"), ("4d-f32", "ulab"),
               ("2d-f32-noreverse", "ulab"), ("2d-f64", "native"), ("2d-f64", "pure")]
    print("\n| model | firmware | tier | smallest heap | heap_for | heap_for / smallest |")
    print("|---|---|---|---:|---:|---:|")
    for (name, kind), (path, report) in files.items():
        for firmware, tier in configs:
            exe = None if firmware == "unix" else binary(firmware)
            want = report.memory.heap_for(tier)
            got = min_heap(path, vx[:1], tier=tier, micropython=exe, lo=want // 2,
                           hi=2 * want)
            print(f"| {name} {kind} | {firmware} | {tier} | {got / 1024:.1f} KB | "
                  f"{want / 1024:.1f} KB | {want / got:.2f} |", flush=True)
            if firmware in ("unix", "2d-f32"):
                records.append(row("mcu", f"heap_for / smallest heap, MNIST {name} {kind}, "
                                   f"{tier} ({firmware})", round(want / got, 2), None, "x",
                                   "none", note="goal 1.00-1.15"))


def sources(files, vx) -> None:
    print("\n| model | smallest heap, .mpy | from .py sources | heap_for(mpy=True / False) |")
    print("|---|---:|---:|---:|")
    for name in ("mlp", "cnn"):
        path, report = files[name, "int8"]
        mpy = min_heap(path, vx[:1], tier="native", lo=16384)
        with mock.patch.object(mp, "_fresh_mpy", lambda emb: None):
            src = min_heap(path, vx[:1], tier="native", lo=16384)
        est = report.memory
        print(f"| {name} int8, native | {mpy / 1024:.0f} KB | {src / 1024:.0f} KB | "
              f"{est.heap_for('native') / 1024:.0f} / "
              f"{est.heap_for('native', mpy=False) / 1024:.0f} KB |")


def finetune(files, vx, tmp: str) -> None:
    script, img = os.path.join(tmp, "step.py"), os.path.join(tmp, "img.u8")
    Path(script).write_text(STEP_SCRIPT)
    Path(img).write_bytes(vx[0].tobytes())
    print("\n| model | tier (firmware) | bytes one LastLayer.step allocates |")
    print("|---|---|---:|")
    for name in ("mlp", "cnn"):
        path, _ = files[name, "f32"]
        # (the pure tier: its f32 forward alone allocates megabytes, test_garbage.py)
        for tier, exe in (("native", None), ("ulab", binary("2d-f32"))):
            env = dict(os.environ, MICROPYPATH=mp.micropython_path(tier == "native"))
            proc = subprocess.run([exe or mp.find_micropython(), "-X", "heapsize=4M", script,
                                   path, tier, img], capture_output=True, text=True, env=env,
                                  check=False)
            got = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("step")]
            if proc.returncode or not got:
                raise RuntimeError(proc.stdout + proc.stderr)
            print(f"| {name} f32 | {tier} ({'ulab 2d-f32' if exe else 'unix port'}) | "
                  f"{int(got[0]) / 1024:.1f} KB |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--digits", type=int, default=100)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    why = missing()
    if why:
        sys.exit(why)
    # fresh .mpy files (a stale one makes ember_micro import from source: more heap)
    subprocess.run(["bash", str(embedded_dir() / "build_micropython.sh")], check=True,
                   capture_output=True)
    (tx, ty), (vx, _) = mnist_arrays("train"), mnist_arrays("test")
    print(f"ember_micro from {embedded_dir()}; firmware: ../shared/ulab")
    records: list = []
    with tempfile.TemporaryDirectory() as tmp:
        files = _files(tmp, tx, ty, args.quick)
        speed(files, vx, 10 if args.quick else args.digits, records)
        if not args.quick:
            board(files, vx, records)
            heaps(files, vx, records)
            sources(files, vx)
        finetune(files, vx, tmp)
    if not args.quick:
        write_record(records)


if __name__ == "__main__":
    main()
