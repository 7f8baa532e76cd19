"""The wgpu backend against torch CUDA (when torch + CUDA are present) or numpy, in one run.

    PYTHONPATH=core python benchmarks/bench_wgpu.py          # GPU machine: full sizes (< 5 min)
    PYTHONPATH=core python benchmarks/bench_wgpu.py --small  # lavapipe / CI: small sizes

Needs only ember (this repo), wgpu, numpy and (for the peer) torch. Prints a markdown table:
the latency of a 1-element add and its readback in µs, f32 matmul GFLOP/s (TF32 off),
elementwise add/mul GB/s (many calls back to back per sync, so the per-call sync doesn't
decide the bandwidth), a chain of 1,000 small elementwise ops in µs/op, conv2d (batch 64,
64→64 channels, 56×56, 3×3) and one training step of the MNIST demo CNN
(ember.demos.mnist_model, Adam, batch 64). Every row has a wall time (median; ember waits by
reading 4 bytes of the output, torch with ``torch.cuda.synchronize()``) and a kernel time
(GPU timestamp queries for ember where the adapter has ``timestamp-query``, CUDA events for
torch), each case after a few hundred ms of untimed warm-up so the GPU's clocks are up. The
load average is printed at the start and the end. A section that fails prints an error row
and the run goes on."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import traceback
from datetime import date
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import ember
from _common import row, write_record
from ember.tensordata import TensorData

BUDGET_S = 20.0  # per timed case: fewer repeats when one call is slow
WARM_S = 0.3  # seconds of untimed work before each timed case (GPU clocks rise)
BACK_TO_BACK = 20  # elementwise calls per sync in the bandwidth rows


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
        adapter = self.b.rt.adapter
        self.gpu_timed = ("timestamp-query" in adapter.info.features
                          and hasattr(adapter, "start_gpu_timer"))

    def up(self, a):
        return self.b.from_data(TensorData.from_numpy(np.ascontiguousarray(a)))

    def wait(self, p):
        # reading 4 bytes of the output: a copy and a map, no kernel added to the GPU time
        if p is not None:
            self.b.rt.engine.read(p.block, 4)

    def read(self, p):
        return self.b.to_data(p)

    def gpu_start(self):
        self.b.rt.engine.flush()
        self.b.rt.adapter.start_gpu_timer()

    def gpu_stop(self) -> float:
        adapter = self.b.rt.adapter
        seconds = adapter.gpu_seconds()
        adapter.stop_gpu_timer()  # timed passes cost a little: never in the wall-time calls
        return seconds

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
    gpu_timed = True

    def __init__(self):
        import torch

        self.t = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.device = torch.cuda.get_device_name(0)
        self._start = None

    def up(self, a):
        return self.t.from_numpy(np.ascontiguousarray(a)).cuda()

    def wait(self, p):
        self.t.cuda.synchronize()

    def read(self, p):
        return p.cpu()

    def gpu_start(self):
        # CUDA events: the stream's time between them (kernels and any gaps between them)
        self._start = self.t.cuda.Event(enable_timing=True)
        self._start.record()

    def gpu_stop(self) -> float:
        end = self.t.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        return self._start.elapsed_time(end) * 1e-3

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
    gpu_timed = False

    def up(self, a):
        return np.ascontiguousarray(a)

    def wait(self, p):
        pass

    def read(self, p):
        return np.array(p)

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


# ---------------------------------------------------------------------- timing
def measure(lib, call, repeat: int, per_sync: int = 1) -> tuple[float, float | None]:
    """(wall seconds, kernel seconds) per call of ``call`` (which returns the output to wait
    for, or None when it waits itself).

    A timed unit is ``per_sync`` calls back to back, then one wait, so per-call overhead
    (a submit, a sync) doesn't decide a bandwidth figure when ``per_sync`` is large. First
    :data:`WARM_S` seconds of the same units untimed: the H200 drops its SM clock from 1980
    to 345–660 MHz when idle and takes a few hundred ms of work to raise it. Wall time is the
    median unit; kernel time comes from separate units timed on the GPU (timestamp queries
    for ember, CUDA events for torch; None where the library can't), so the timer's own cost
    stays out of the wall time."""
    def unit():
        out = None
        for _ in range(per_sync):
            out = call()
        lib.wait(out)

    t0 = time.perf_counter()
    unit()  # caches, allocator pools, compiled pipelines
    first = time.perf_counter() - t0
    end = time.perf_counter() + WARM_S
    while time.perf_counter() < end:
        unit()
    repeat = max(1, min(repeat, int(BUDGET_S / max(first, 1e-6))))
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        unit()
        walls.append(time.perf_counter() - t0)
    kernel = None
    if getattr(lib, "gpu_timed", False):
        gpu = []
        for _ in range(min(repeat, 5)):
            lib.gpu_start()
            unit()
            gpu.append(lib.gpu_stop())
        kernel = statistics.median(gpu) / per_sync
    return statistics.median(walls) / per_sync, kernel


# ---------------------------------------------------------------------- sections
def sections(small: bool):
    """(name, unit, higher_is_better, fn(lib, repeat) -> (wall value, kernel value | None))
    in table order; ``convert`` turns seconds per call into the row's unit."""
    rng = np.random.default_rng(0)
    out = []

    def row(name, unit, higher, setup, convert, per_sync=1):
        def fn(lib, repeat):
            wall, kernel = measure(lib, setup(lib), repeat, per_sync)
            return convert(wall), (None if kernel is None else convert(kernel))

        out.append((name, unit, higher, fn))

    def small_readback(lib):
        one = lib.up(np.ones(1, np.float32))

        def call():
            lib.read(lib.add(one, one))  # the read is the wait

        return call

    row("small readback (1-element add + read)", "µs", False, small_readback,
        lambda t: t * 1e6)

    for n in (128, 256) if small else (1024, 2048, 4096):
        def matmul(lib, n=n):
            a = lib.up(rng.standard_normal((n, n), dtype=np.float32))
            b = lib.up(rng.standard_normal((n, n), dtype=np.float32))
            return lambda: lib.matmul(a, b)

        row(f"matmul {n}×{n} f32", "GFLOP/s", True, matmul, lambda t, n=n: 2 * n**3 / t / 1e9)

    size = (1 << 20) if small else (64 << 20)
    for op in ("add", "mul"):
        def elementwise(lib, op=op):
            a = lib.up(rng.standard_normal(size, dtype=np.float32))
            b = lib.up(rng.standard_normal(size, dtype=np.float32))
            fn = getattr(lib, op)
            return lambda: fn(a, b)

        # two reads, one write; BACK_TO_BACK calls per sync
        row(f"{op} {size >> 20}M f32 ({BACK_TO_BACK} calls per sync)", "GB/s", True,
            elementwise, lambda t: 3 * 4 * size / t / 1e9, per_sync=BACK_TO_BACK)

    steps = 200 if small else 1000

    def chain(lib):
        x0 = lib.up(np.ones(1024, np.float32))

        def run():
            x = x0
            for _ in range(steps):
                x = lib.add(x, x0)
            return x

        return run

    row(f"{steps}-op elementwise chain (1K floats)", "µs/op", False, chain,
        lambda t: t / steps * 1e6)

    n, c, hw = (4, 16, 28) if small else (64, 64, 56)

    def conv(lib):
        x = lib.up(rng.standard_normal((n, c, hw, hw), dtype=np.float32))
        w = lib.up(rng.standard_normal((c, c, 3, 3), dtype=np.float32))
        return lambda: lib.conv(x, w)

    row(f"conv2d N={n} {c}→{c}ch {hw}×{hw} 3×3", "GFLOP/s", True, conv,
        lambda t: 2 * n * c * c * 9 * hw * hw / t / 1e9)

    batch = 16 if small else 64

    def train(lib):
        step = lib.train_step(batch)

        def call():
            step()  # ends with loss.item(): it waits itself

        return call

    row(f"MNIST CNN train step (batch {batch}, Adam)", "ms", False, train, lambda t: t * 1e3)
    return out


def load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small sizes (lavapipe, CI)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    load_before = load()
    print(load_before, file=sys.stderr, flush=True)
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
                values.append(("unavailable", None))
                continue
            try:
                values.append(fn(lib, args.repeat))
            except Exception as e:  # noqa: BLE001 - one failing section must not end the run
                traceback.print_exc(limit=3)
                values.append((f"error: {type(e).__name__}: {str(e).splitlines()[0][:80]}",
                               None))
            finally:
                try:
                    lib.free()
                except Exception:  # noqa: BLE001, S110
                    pass
        rows.append((name, unit, higher, values))
        print(f"  {name}: {values}", file=sys.stderr, flush=True)

    def cell(v, unit):
        if v is None:
            return "—"
        return f"{v:.4g} {unit}" if isinstance(v, float) else v

    def ratio(a, b, higher):
        if isinstance(a, float) and isinstance(b, float) and a > 0 and b > 0:
            return f"{(a / b if higher else b / a) * 100:.1f}%"
        return "—"

    peer_name = getattr(other, "name", "peer")
    print(f"\n{date.today()} — ember wgpu on {getattr(mine, 'device', '?')}; "
          f"peer: {peer_name} on {getattr(other, 'device', '?')}; "
          f"python {platform.python_version()}; {load_before} (start), {load()} (end)\n")
    print(f"| benchmark | ember wall | ember kernel | {peer_name} wall | {peer_name} kernel "
          "| ember vs peer (wall) | ember vs peer (kernel) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, unit, higher, ((a, ak), (b, bk)) in rows:
        print(f"| {name} | {cell(a, unit)} | {cell(ak, unit)} | {cell(b, unit)} "
              f"| {cell(bk, unit)} | {ratio(a, b, higher)} | {ratio(ak, bk, higher)} |")
    print("\n(wall: host clock around calls and their wait; kernel: GPU time from timestamp "
          "queries (ember) or CUDA events (torch), in the same unit; ember vs peer: ember's "
          "speed as a percentage of the peer's, higher is better)")
    print(f"total benchmark time: {time.perf_counter() - started:.0f} s")
    where = f"{peer_name} on {getattr(other, 'device', '?')}"
    record = [row("gpu", f"{name}, {clock}", x, y, unit, where, higher_is_better=higher)
              for name, unit, higher, values in rows
              for clock, x, y in (("wall", values[0][0], values[1][0]),
                                  ("kernel", values[0][1], values[1][1]))
              if isinstance(x, float) and isinstance(y, float)]
    if record:
        write_record(record, variant="small" if args.small else None,
                     device=getattr(mine, "device", None))


if __name__ == "__main__":
    main()
