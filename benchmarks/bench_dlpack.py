"""DLPack exchange beside its peers: a 64 MB float32 array handed numpy → Ember → PyTorch
and back, against numpy → PyTorch directly (zero-copy on both sides: the times should be
flat in the size); and the python backend's host copy against numpy's own copy.

    python benchmarks/bench_dlpack.py
"""

from __future__ import annotations

import numpy as np
import torch

import ember
from _common import median_times, row, write_record

N = 16 * 1024 * 1024  # float32: 64 MB


def main() -> None:
    a = np.ones(N, dtype=np.float32)
    e = ember.from_dlpack(a, device="numpy")
    small = np.ones(1024, dtype=np.float32)
    py = ember.tensor(small, backend="python")
    rows = [
        ("numpy → ember (numpy backend), 64 MB", lambda: ember.from_dlpack(a, device="numpy"),
         "numpy → torch", lambda: torch.from_dlpack(a)),
        ("ember → torch, 64 MB", lambda: torch.from_dlpack(e),
         "numpy → torch", lambda: torch.from_dlpack(a)),
        ("ember → numpy, 64 MB", lambda: np.from_dlpack(e),
         "numpy → numpy", lambda: np.from_dlpack(a)),
        ("python backend → torch (host copy), 4 KB", lambda: torch.from_dlpack(py),
         "torch.tensor(list) copy, 4 KB", lambda: torch.tensor(small.tolist())),
    ]
    print("| exchange | ember µs | peer | peer µs | ratio |")
    print("|---|---:|---|---:|---:|")
    record = []
    for name, fn, peer, peer_fn in rows:
        ours, theirs = median_times([fn, peer_fn], repeat=200)
        print(f"| {name} | {ours * 1e6:.1f} | {peer} | {theirs * 1e6:.1f} | "
              f"{ours / theirs:.2f}× |")
        record.append(row("system", f"DLPack: {name}", ours * 1e6, theirs * 1e6, "µs", peer))
    write_record(record)


if __name__ == "__main__":
    main()
