"""Helpers shared by the benchmark scripts: timing medians, the BLAS thread count, GPU
dispatches per call and the torch.nn twin of a small ember ``nn.Sequential``.

The scripts run as ``python benchmarks/bench_*.py``, so this folder is on ``sys.path``::

    from _common import median_times
    median_times([lambda: sum(range(1000))], repeat=5)  # [seconds]
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def pin_blas_threads(default: str | None = None) -> None:
    """Set the BLAS thread variables to the command line's ``--threads N`` (else ``default``;
    None: leave them). Call before numpy is imported: BLAS reads them once, when it loads."""
    value = default
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            value = sys.argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
    if value is not None:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = value


def blas_threads() -> tuple[int, str]:
    """Threads numpy's BLAS uses, and where the figure came from (``threadpoolctl`` when
    installed, else ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS``, else the
    CPU count)."""
    try:
        from threadpoolctl import threadpool_info

        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            return max(i["num_threads"] for i in blas), f"threadpoolctl: {blas[0]['internal_api']}"
    except ImportError:
        pass
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var]), var
    return os.cpu_count() or 1, "cpu count"


def median_times(fns, repeat: int, warmup: int = 1) -> list[float]:
    """Median seconds of each function, timed in alternation so all see the same machine load
    (after ``warmup`` untimed calls each)."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def median_time(fn, repeat: int, budget_s: float = float("inf")) -> float:
    """Median seconds of ``repeat`` timed calls after one warm-up; fewer calls when the
    warm-up says ``repeat`` of them would take longer than ``budget_s``."""
    t0 = time.perf_counter()
    fn()  # warm up: caches, allocator pools, compiled pipelines
    first = time.perf_counter() - t0
    if budget_s != float("inf"):
        repeat = max(1, min(repeat, int(budget_s / max(first, 1e-6))))
    return median_times([fn], repeat, warmup=0)[0]


def profile(backend, fn) -> tuple[int | None, float, float | None]:
    """One call of ``fn``: the GPU dispatches it records on ``backend`` (the wgpu engine's
    counter, found under any decorators: ``Autodiff(Fusion(wgpu))``), the CPU ms of this thread
    (recording, submitting, the host side of reads; not waiting) and the GPU ms in compute
    passes (timestamp queries, where the adapter has them). None where unavailable."""
    while getattr(backend, "inner", None) is not None:
        backend = backend.inner
    rt = getattr(backend, "rt", None)
    adapter = rt.adapter if rt is not None else None
    timed = (adapter is not None and "timestamp-query" in adapter.info.features
             and hasattr(adapter, "start_gpu_timer"))
    if rt is not None:
        rt.engine.flush()
    if timed:
        adapter.start_gpu_timer()
    before = rt.engine.dispatches if rt is not None else 0
    cpu = time.thread_time()
    fn()
    cpu = (time.thread_time() - cpu) * 1e3
    gpu = adapter.gpu_seconds() * 1e3 if timed else None
    if timed:
        adapter.stop_gpu_timer()  # timed passes cost a little: never in the timed calls
    return (rt.engine.dispatches - before if rt is not None else None), cpu, gpu


def dispatches(backend, fn) -> int | None:
    """GPU dispatches one call of ``fn`` records on ``backend`` (see :func:`profile`)."""
    return profile(backend, fn)[0]


def torch_twin(torch, model):
    """The same ``nn.Sequential`` (Linear, Conv2d with padding 1, ReLU, MaxPool2d(2), Flatten)
    in torch.nn, with the ember model's weights copied in."""
    import numpy as np

    T = torch.nn
    layers = []
    for layer in model:
        kind = type(layer).__name__
        if kind == "Linear":
            layers.append(T.Linear(layer.in_features, layer.out_features))
        elif kind == "Conv2d":
            out_c, in_c, k, _ = layer.weight.shape
            layers.append(T.Conv2d(in_c, out_c, k, padding=1))
        elif kind in ("ReLU", "Flatten"):
            layers.append(getattr(T, kind)())
        elif kind == "MaxPool2d":
            layers.append(T.MaxPool2d(2))
        else:
            raise ValueError(f"torch_twin: no torch.nn twin for {kind}")
    twin = T.Sequential(*layers)
    ours = list(model.state_dict().values())
    theirs = list(twin.parameters())
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    with torch.no_grad():
        for v, p in zip(ours, theirs):
            p.copy_(torch.from_numpy(np.ascontiguousarray(v.numpy())))
    return twin
