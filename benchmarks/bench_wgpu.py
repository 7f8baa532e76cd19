"""The wgpu backend against torch CUDA (when torch + CUDA are present) or numpy, in one run.

    PYTHONPATH=core python benchmarks/bench_wgpu.py          # GPU machine: full sizes (< 5 min)
    PYTHONPATH=core python benchmarks/bench_wgpu.py --small  # lavapipe / CI: small sizes

Needs only ember (this repo), wgpu, numpy and (for the peer) torch. Prints a markdown table:
f32 matmul GFLOP/s (TF32 off), elementwise add/mul GB/s, a chain of 1,000 small elementwise ops
in µs/op, conv2d (batch 64, 64→64 channels, 56×56, 3×3) and one training step of the MNIST demo
CNN (ember.demos.mnist_model, Adam, batch 64). Times are medians; ember's end with one tiny
readback to wait for the GPU, torch's with ``torch.cuda.synchronize()``. A section that fails
prints an error row and the run goes on.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import traceback
from datetime import date
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from _common import median_time
from ember.tensordata import TensorData

BUDGET_S = 20.0  # per timed case: fewer repeats when one call is slow


def mnist_train_step(backend, batch: int):
    """One Adam step of the MNIST demo CNN on ``Autodiff(backend)`` with a random batch, as a
    function returning the loss."""
    from ember.autodiff import Autodiff
    from ember.demos.mnist_model import mnist_cnn
    from ember.nn.loss import cross_entropy
    from ember.optim import Adam

    ad = Autodiff(backend)
    with ember.use_backend(ad):
        model = mnist_cnn()
    opt = Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((batch, 1, 28, 28), dtype=np.float32), backend=ad)
    y = ember.tensor(rng.integers(0, 10, batch), backend=ad)

    def step():
        loss = cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss.item()

    return step


# ---------------------------------------------------------------------- libraries
class Ember:
    name = "ember wgpu"

    def __init__(self):
        self.b = ember.get_backend("wgpu")
        self.device = self.b.device

    def up(self, a):
        return self.b.from_data(TensorData.from_numpy(np.ascontiguousarray(a)))

    def wait(self, p):
        first = tuple((0, 1, 1) for _ in p.shape)
        self.b.to_data(self.b.slice(p, first))

    def free(self):
        self.b.sync()
        self.b.rt.allocator.empty_cache()

    def matmul(self, a, b):
        return self.b.float_matmul(a, b)

    def add(self, a, b):
        return self.b.float_add(a, b)

    def mul(self, a, b):
        return self.b.float_mul(a, b)

    def conv(self, x, w):
        return self.b.conv(x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)

    def train_step(self, batch: int):
        return mnist_train_step(self.b, batch)


class _Operators:
    """matmul/add/mul through Python's operators (torch tensors, numpy arrays)."""

    def matmul(self, a, b):
        return a @ b

    def add(self, a, b):
        return a + b

    def mul(self, a, b):
        return a * b


class Torch(_Operators):
    name = "torch cuda"

    def __init__(self):
        import torch

        self.t = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.device = torch.cuda.get_device_name(0)

    def up(self, a):
        return self.t.from_numpy(np.ascontiguousarray(a)).cuda()

    def wait(self, p):
        self.t.cuda.synchronize()

    def free(self):
        self.t.cuda.empty_cache()

    def conv(self, x, w):
        return self.t.nn.functional.conv2d(x, w, padding=1)

    def train_step(self, batch: int):
        torch, nn = self.t, self.t.nn
        torch.manual_seed(0)
        model = nn.Sequential(  # ember.demos.mnist_model.mnist_cnn()
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10),
        ).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = torch.randn(batch, 1, 28, 28, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()

        return step


class Numpy(_Operators):
    name = "numpy"
    device = platform.processor() or "cpu"

    def up(self, a):
        return np.ascontiguousarray(a)

    def wait(self, p):
        pass

    def free(self):
        pass

    def conv(self, x, w):
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
        return np.einsum("nchwij,ocij->nohw", win, w, optimize=True)

    def train_step(self, batch: int):
        return mnist_train_step(ember.get_backend("numpy"), batch)


def peer():
    try:
        import torch

        if torch.cuda.is_available():
            return Torch()
    except ImportError:
        pass
    return Numpy()


# ---------------------------------------------------------------------- sections
def sections(small: bool):
    """(name, unit, higher_is_better, fn(lib, repeat) -> value) in table order."""
    rng = np.random.default_rng(0)
    out = []

    for n in (128, 256) if small else (1024, 2048, 4096):
        def matmul(lib, repeat, n=n):
            a = lib.up(rng.standard_normal((n, n), dtype=np.float32))
            b = lib.up(rng.standard_normal((n, n), dtype=np.float32))
            t = median_time(lambda: lib.wait(lib.matmul(a, b)), repeat, BUDGET_S)
            return 2 * n**3 / t / 1e9

        out.append((f"matmul {n}×{n} f32", "GFLOP/s", True, matmul))

    size = (1 << 20) if small else (64 << 20)
    for op in ("add", "mul"):
        def elementwise(lib, repeat, op=op):
            a = lib.up(rng.standard_normal(size, dtype=np.float32))
            b = lib.up(rng.standard_normal(size, dtype=np.float32))
            fn = getattr(lib, op)
            t = median_time(lambda: lib.wait(fn(a, b)), repeat, BUDGET_S)
            return 3 * 4 * size / t / 1e9  # two reads, one write

        out.append((f"{op} {size >> 20}M f32", "GB/s", True, elementwise))

    steps = 200 if small else 1000

    def chain(lib, repeat):
        x0 = lib.up(np.ones(1024, np.float32))

        def run():
            x = x0
            for _ in range(steps):
                x = lib.add(x, x0)
            lib.wait(x)

        return median_time(run, max(1, repeat // 2), BUDGET_S) / steps * 1e6

    out.append((f"{steps}-op elementwise chain (1K floats)", "µs/op", False, chain))

    n, c, hw = (4, 16, 28) if small else (64, 64, 56)

    def conv(lib, repeat):
        x = lib.up(rng.standard_normal((n, c, hw, hw), dtype=np.float32))
        w = lib.up(rng.standard_normal((c, c, 3, 3), dtype=np.float32))
        t = median_time(lambda: lib.wait(lib.conv(x, w)), repeat, BUDGET_S)
        return 2 * n * c * c * 9 * hw * hw / t / 1e9

    out.append((f"conv2d N={n} {c}→{c}ch {hw}×{hw} 3×3", "GFLOP/s", True, conv))

    batch = 16 if small else 64

    def train(lib, repeat):
        step = lib.train_step(batch)
        step()
        return median_time(step, repeat, BUDGET_S) * 1e3

    out.append((f"MNIST CNN train step (batch {batch}, Adam)", "ms", False, train))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small sizes (lavapipe, CI)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    libs = []
    for make in (Ember, peer):
        try:
            libs.append(make())
        except Exception as e:  # noqa: BLE001 - report and go on with what works
            print(f"could not start {getattr(make, 'name', make.__name__)}: {e}", flush=True)
            libs.append(None)
    mine, other = libs
    rows = []
    for name, unit, higher, fn in sections(args.small):
        values = []
        for lib in (mine, other):
            if lib is None:
                values.append("unavailable")
                continue
            try:
                values.append(fn(lib, args.repeat))
            except Exception as e:  # noqa: BLE001 - one failing section must not end the run
                traceback.print_exc(limit=3)
                values.append(f"error: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
            finally:
                try:
                    lib.free()
                except Exception:  # noqa: BLE001, S110
                    pass
        rows.append((name, unit, higher, values))
        print(f"  {name}: {values}", file=sys.stderr, flush=True)

    def cell(v, unit):
        return f"{v:.4g} {unit}" if isinstance(v, float) else v

    print(f"\n{date.today()} — ember wgpu on {getattr(mine, 'device', '?')}; "
          f"peer: {getattr(other, 'name', '?')} on {getattr(other, 'device', '?')}; "
          f"python {platform.python_version()}\n")
    print(f"| benchmark | ember wgpu | {getattr(other, 'name', 'peer')} | ember vs peer |")
    print("|---|---:|---:|---:|")
    for name, unit, higher, (a, b) in rows:
        if isinstance(a, float) and isinstance(b, float) and a > 0 and b > 0:
            ratio = f"{(a / b if higher else b / a) * 100:.1f}%"
        else:
            ratio = "—"
        print(f"| {name} | {cell(a, unit)} | {cell(b, unit)} | {ratio} |")
    print("\n(ember vs peer: ember's speed as a percentage of the peer's; higher is better)")
    print(f"total benchmark time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
