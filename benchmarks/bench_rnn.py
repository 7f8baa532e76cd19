"""Recurrent ONNX models on the CPU: GRU and LSTM stacks exported from PyTorch
(``torch.onnx.export``), ``ember.onnx.load`` on numpy (the compiled pipeline) vs onnxruntime,
one thread each, side by side in one run (issue 34's goal: ≤ 3× onnxruntime).

    python benchmarks/bench_rnn.py [--repeat 15]

Two layers of 64 → hidden units, then a Linear on the last step: batch 1 × 50 steps at 128
units (latency: the per-step work dominates) and batch 8 × 100 steps at 256 units (the matmuls
dominate). Calls alternate; the minimum of ``--repeat`` calls is reported (the machine is
shared: the minimum is the least disturbed), with the outputs checked against onnxruntime's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import pin_blas_threads, row, write_record  # noqa: E402

pin_blas_threads("1")

import numpy as np  # noqa: E402

CASES = [(128, 50, 1), (256, 100, 8)]  # hidden units, steps, batch


def export(torch, kind: str, hidden: int, x, path: str) -> None:
    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(x.shape[-1], hidden, num_layers=2,
                                               batch_first=True)
            self.head = torch.nn.Linear(hidden, 10)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Stack().eval(), (x,), path, input_names=["x"], output_names=["y"],
                          opset_version=17, dynamo=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    import onnxruntime as ort
    import torch

    import ember
    import ember.onnx

    torch.manual_seed(0)
    torch.set_num_threads(1)
    print(f"ember {ember.__version__} numpy vs onnxruntime {ort.__version__}, 1 thread, min of "
          f"{args.repeat} alternated calls, load {os.getloadavg()[0]:.1f}\n")
    print("| model | ember ms | onnxruntime ms | ratio | replayed steps | max abs diff |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("GRU", "LSTM"):
            for hidden, steps, batch in CASES:
                x = torch.randn(batch, steps, 64)
                path = os.path.join(tmp, f"{kind}.onnx")
                export(torch, kind, hidden, x, path)
                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                model = ember.onnx.load(path, backend="numpy")
                xn = x.numpy()
                xe = ember.tensor(xn, backend="numpy")
                want = session.run(None, {"x": xn})[0]
                diff = float(np.abs(model(xe).numpy() - want).max())
                if diff > 1e-4:
                    raise SystemExit(f"{kind}: ember and onnxruntime disagree by {diff}")
                model(xe)  # the traced call: the timed ones replay
                te, to = [], []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    model(xe).numpy()
                    te.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    session.run(None, {"x": xn})
                    to.append(time.perf_counter() - t0)
                e, o = min(te) * 1e3, min(to) * 1e3
                replayed = sum(s["replayed"] for s in model.jit_stats()["steps"])
                case = f"{kind} 2 × {hidden}, batch {batch} × {steps} steps"
                print(f"| {case} | {e:.2f} | {o:.2f} | {e / o:.2f}× | {replayed} | {diff:.1e} |")
                rows.append(row("cpu", case + ", 1 thread", e, o, "ms", "onnxruntime CPU"))
    write_record(rows)


if __name__ == "__main__":
    main()
