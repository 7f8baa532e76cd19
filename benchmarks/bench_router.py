"""Router's own cost per op: a chain of tensor adds on ``Router(A, B)`` against ``A`` alone.

    .venv/bin/python benchmarks/bench_router.py [--ops 2000] [--repeat 9]

Every op of the chain runs on the Router's first backend (no moves), so the difference is the
routing itself: looking up the op's candidates (cached per op and dtypes), the policy's choice
and the wrapping of results. Pairs: numpy vs ``Router(numpy, python)`` on (4, 4) float32, and
wgpu vs ``Router(wgpu, numpy)`` on (256, 256) float32 (ending with a one-element read so the
GPU work is included). Both sides of a pair alternate (medians).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import date
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from _common import median_times, row, write_record


def chain(backend, shape, ops):
    def run():
        x = ember.ones(shape, backend=backend)
        y = ember.full(shape, 0.5, backend=backend)
        for _ in range(ops):
            x = x + y
        return x[0, 0].item()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    print(f"{date.today()} · {platform.processor() or platform.machine()}, {os.cpu_count()} "
          f"CPUs · load {os.getloadavg()[0]:.2f}")
    print("\n| chain | plain µs/op | Router µs/op | Router overhead µs/op | ratio |")
    print("|---|---:|---:|---:|---:|")
    pairs = [("numpy", ember.Router("numpy", "python"), (4, 4))]
    try:
        pairs.append(("wgpu", ember.Router("wgpu", "numpy"), (256, 256)))
    except Exception as e:  # noqa: BLE001 - no adapter: numpy only
        print(f"(wgpu skipped: {e})")
    rows = []
    for name, router, shape in pairs:
        plain = ember.get_backend(name)
        assert chain(plain, shape, args.ops)() == chain(router, shape, args.ops)()
        p, r = (t / args.ops * 1e6 for t in median_times(
            [chain(plain, shape, args.ops), chain(router, shape, args.ops)], args.repeat))
        print(f"| {args.ops} adds {shape} on {name} | {p:.1f} | {r:.1f} | {r - p:.1f} | "
              f"{r / p:.2f} |")
        assert router.moves == 0
        rows.append(row("system", f"Router: {args.ops} adds {shape}, every op on {name}", r, p,
                        "µs/op", f"{name} backend alone"))
    write_record(rows)


if __name__ == "__main__":
    main()
