"""The model matrix (tests/matrix, issue 40) on the real GPU: every row whose packages are
installed, on wgpu and on Fusion(wgpu) + ember.jit, judged against the same independent
references as in ``make test`` (which runs these columns on lavapipe), with the seconds each
cell took (first call included: model load, shader compilation, the trace).

    python benchmarks/bench_matrix_gpu.py

Rows whose weights are not on this machine (the GPU machine carries no 90 MB MiniLM
checkpoint) are listed with the package that is missing. Prints a markdown table; exits 1 when
a cell fails; the pass count goes to the scoreboard's record.
"""

from __future__ import annotations

import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # wgpu-py's Vulkan loader wants one

from _common import row, write_record  # noqa: E402
from tests.matrix import rows as matrix_rows  # noqa: E402
from tests.matrix import runner  # noqa: E402

COLUMNS = ["wgpu", "fusion+jit wgpu"]
GROUPS = [("MNIST", matrix_rows._mnist_rows), ("EfficientNet-Lite0", matrix_rows._effnet_rows),
          ("MiniLM", matrix_rows._minilm_rows), ("LSTM+GRU", matrix_rows._rnn_row),
          ("PaddleOCR cls", lambda folder: matrix_rows._ocr_row())]


def main() -> int:
    import ember

    print(f"ember {ember.__version__}, wgpu on {ember.get_backend('wgpu').device}, load "
          f"{os.getloadavg()[0]:.1f}\n")
    rows, missing = [], []
    with tempfile.TemporaryDirectory() as folder:
        for name, build in GROUPS:
            try:
                built = build(folder)
            except Exception as e:  # noqa: BLE001 - a package or its weights are not here
                missing.append(f"{name}: {type(e).__name__}: {str(e)[:160]}")
                continue
            rows += built if isinstance(built, list) else [built]
        cells = runner.run(rows, COLUMNS)
    print("| model | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for matrix_row in rows:
        texts = []
        for column in COLUMNS:
            cell = cells[(matrix_row.name, column)]
            mark = {"pass": "✓", "n/a": "—"}.get(cell.status, "✗")
            texts.append(f"{mark} {cell.text[:120]} ({cell.seconds:.1f} s)")
        print(f"| {matrix_row.name} | " + " | ".join(texts) + " |")
    for line in missing:
        print(f"\nnot built: {line}")
    passed = sum(c.status == "pass" for c in cells.values())
    not_built = ", ".join(line.split(":")[0] for line in missing) or "none"
    write_record([row("gpu", f"model matrix, {' and '.join(COLUMNS)}: cells that pass", passed,
                      None, "cells", "cells run",
                      note=f"{passed} of {len(cells)} pass; rows not built: {not_built}")],
                 device=ember.get_backend("wgpu").device)
    return 1 if any(c.status == "FAIL" for c in cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
