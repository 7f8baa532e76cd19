"""The wgpu backend against torch CUDA (when torch + CUDA are present) or numpy, in one run.

    python benchmarks/bench_wgpu.py            # GPU machine: full sizes
    python benchmarks/bench_wgpu.py --small    # lavapipe / CI: small sizes, same code paths

Prints a markdown table: matmul GFLOP/s, elementwise add GB/s, a chain of tiny dispatches in
µs/op, and a conv2d (64→64 channels, 56×56, 3×3). Times are medians; ember's include one
tiny readback to wait for the GPU (amortised over the work being timed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import ember
from ember.data import TensorData


def median_time(fn, repeat: int) -> float:
    fn()  # warm up: compiles pipelines, fills the allocator's pool
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Ember:
    name = "ember wgpu"

    def __init__(self):
        self.b = ember.get_backend("wgpu")

    def up(self, a):
        return self.b.from_data(TensorData.from_numpy(np.ascontiguousarray(a)))

    def wait(self, p):
        first = tuple((0, 1, 1) for _ in p.shape)
        self.b.to_data(self.b.slice(p, first))

    def matmul(self, a, b):
        return self.b.float_matmul(a, b)

    def add(self, a, b):
        return self.b.float_add(a, b)

    def conv(self, x, w):
        from ember.nn import functional as F

        return F.conv2d(self.b.wrap(x), self.b.wrap(w), padding=1)._prim


class Torch:
    name = "torch cuda"

    def __init__(self):
        import torch

        self.t = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def up(self, a):
        return self.t.from_numpy(np.ascontiguousarray(a)).cuda()

    def wait(self, p):
        self.t.cuda.synchronize()

    def matmul(self, a, b):
        return a @ b

    def add(self, a, b):
        return a + b

    def conv(self, x, w):
        return self.t.nn.functional.conv2d(x, w, padding=1)


class Numpy:
    name = "numpy"

    def up(self, a):
        return np.ascontiguousarray(a)

    def wait(self, p):
        pass

    def matmul(self, a, b):
        return a @ b

    def add(self, a, b):
        return a + b

    def conv(self, x, w):
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
        return np.einsum("nchwij,ocij->nohw", win, w, optimize=True)


def peer():
    try:
        import torch

        if torch.cuda.is_available():
            return Torch()
    except ImportError:
        pass
    return Numpy()


def run(lib, small: bool, repeat: int) -> dict[str, tuple[float, str]]:
    rng = np.random.default_rng(0)
    out = {}
    for n in ((128, 256) if small else (1024, 2048, 4096)):
        a = lib.up(rng.standard_normal((n, n), dtype=np.float32))
        b = lib.up(rng.standard_normal((n, n), dtype=np.float32))
        t = median_time(lambda a=a, b=b: lib.wait(lib.matmul(a, b)), repeat)
        out[f"matmul {n}×{n} f32"] = (2 * n**3 / t / 1e9, "GFLOP/s")
    n = (1 << 20) if small else (64 << 20)
    a = lib.up(rng.standard_normal(n, dtype=np.float32))
    b = lib.up(rng.standard_normal(n, dtype=np.float32))
    t = median_time(lambda: lib.wait(lib.add(a, b)), repeat)
    out[f"add {n >> 20}M f32"] = (3 * 4 * n / t / 1e9, "GB/s")
    steps = 200 if small else 1000
    x0 = lib.up(np.ones(256, np.float32))

    def chain():
        x = x0
        for _ in range(steps):
            x = lib.add(x, x0)
        lib.wait(x)

    t = median_time(chain, max(1, repeat // 2))
    out[f"{steps}-op dispatch chain"] = (t / steps * 1e6, "µs/op")
    c, hw = (16, 28) if small else (64, 56)
    x = lib.up(rng.standard_normal((1, c, hw, hw), dtype=np.float32))
    w = lib.up(rng.standard_normal((c, c, 3, 3), dtype=np.float32))
    t = median_time(lambda: lib.wait(lib.conv(x, w)), repeat)
    out[f"conv2d {c}→{c}ch {hw}×{hw} 3×3"] = (t * 1e3, "ms")
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small sizes (lavapipe, CI)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    mine, other = Ember(), peer()
    ours = run(mine, args.small, args.repeat)
    theirs = run(other, args.small, args.repeat)
    print(f"\nember wgpu on {mine.b.device}; peer: {other.name}\n")
    print(f"| benchmark | {mine.name} | {other.name} | ember / peer |")
    print("|---|---:|---:|---:|")
    for key, (value, unit) in ours.items():
        peer_value = theirs[key][0]
        print(f"| {key} | {value:.4g} {unit} | {peer_value:.4g} {unit} | "
              f"{value / peer_value:.3f} |")
    print("\n(GFLOP/s and GB/s: higher is better; µs/op and ms: lower is better)")


if __name__ == "__main__":
    main()
