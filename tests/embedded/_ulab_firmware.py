"""Real ulab firmware for the ulab tier's tests and benchmarks.

ulab is in no package registry, so the folder ``shared/ulab`` beside the checkout (``../shared/
ulab`` from the repository root, as on CI, where the clone has ``shared/`` beside it) holds
ulab 6.12's source and MicroPython 1.25 unix builds made with it (its README says how). Nothing
here downloads them: without the folder, the tests that need it skip with :func:`missing`'s
reason.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

ULAB_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "ulab"
# build name -> what it is (the binary is ULAB_DIR / f"micropython-ulab-{name}")
BUILDS = {
    "2d-f32": "ULAB_MAX_DIMS=2, single-precision floats (the common board build)",
    "4d-f32": "ULAB_MAX_DIMS=4, single-precision floats",
    "2d-f64": "ULAB_MAX_DIMS=2, double-precision floats (the ulab tier refuses it)",
    "2d-f32-noreverse": "2-D, single precision, MICROPY_PY_REVERSE_SPECIAL_METHODS=0",
}
F32_BUILDS = ("2d-f32", "4d-f32", "2d-f32-noreverse")  # the builds the ulab tier runs on

# a model over float32 inputs with Model's options, printing logits as run_batch.py does
# (parse_run reads them); "no-out": the tier's code path for ulab builds whose tanh has no out=
SCRIPT = """\
import sys
from array import array
import ember_micro
path, inputs, n, resident, chunk, mode = sys.argv[1:7]
if mode == "no-out":
    from ember_micro import _ulab
    _ulab.OUT = False
m = ember_micro.Model(path, "ulab", resident=int(resident), chunk=int(chunk) or None)
print("tier", m.tier)
x = array("f", range(m.in_size))
f = open(inputs, "rb")
for i in range(int(n)):
    f.readinto(x)
    print("l", i, " ".join(["%.7g" % v for v in m.run(x)]))
"""


def binary(name: str) -> str:
    """Path of one build's MicroPython binary."""
    if name not in BUILDS:
        raise ValueError(f"no ulab build {name!r}: the builds are {', '.join(BUILDS)}")
    return str(ULAB_DIR / f"micropython-ulab-{name}")


def missing() -> str | None:
    """Why the real ulab firmware can't be used here, or None when every build is present."""
    absent = [n for n in BUILDS if not os.access(binary(n), os.X_OK)]
    if not absent:
        return None
    return (f"real ulab firmware not found: {ULAB_DIR} lacks {', '.join(absent)} (ulab is in "
            f"no package registry; a checkout needs shared/ulab beside it)")


def run_logits(build: str, path, x, *, resident: int = 16384, chunk: int | None = None,
               mode: str = "-", heapsize: str = "1M"):
    """Logits of model file ``path`` on the ulab tier of ``build`` for float inputs ``x``
    (N, ...), with Model's ``resident`` and ``chunk`` (None: the tier's)."""
    import numpy as np
    from ember.export import run_micropython_script
    from ember.export.micropython import parse_run

    with tempfile.TemporaryDirectory(prefix="ember-ulab-") as tmp:
        script, inputs = Path(tmp, "check.py"), Path(tmp, "in.f32")
        script.write_text(SCRIPT)
        inputs.write_bytes(np.ascontiguousarray(x, dtype="<f4").tobytes())
        args = [str(script), str(path), str(inputs), str(len(x)), str(resident),
                str(chunk if chunk is not None else 0), mode]
        proc = run_micropython_script(args, heapsize=heapsize, native=False,
                                      micropython=binary(build))
    if proc.returncode != 0:
        raise subprocess.SubprocessError(f"{build}: exit {proc.returncode}\n"
                                         f"{(proc.stdout + proc.stderr)[-2000:]}")
    run = parse_run(proc.stdout)
    assert run.tier == "ulab", proc.stdout[:200]
    return np.asarray(run.logits)
