"""Helpers shared by the benchmark scripts: timing medians, the BLAS thread count, GPU
dispatches per call, the torch.nn twin of a small ember ``nn.Sequential``, and the record of
a run's headline figures that the scoreboard (benchmarks/README.md) is rendered from.

The scripts run as ``python benchmarks/bench_*.py``, so this folder is on ``sys.path``::

    from _common import median_times
    median_times([lambda: sum(range(1000))], repeat=5)  # [seconds]
"""

from __future__ import annotations

import math
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


# ------------------------------------------------------------------ the scoreboard's records
# Each benchmark writes its headline figures to records/<name>.json; scoreboard.py renders
# them as README.md, one table per target (the keys below, in the page's order).
RECORDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "records")
TARGETS = {
    "cpu": "CPU: the numpy backend",
    "training": "Training on the CPU",
    "onnx": "ONNX models on the CPU",
    "wasm": "WebAssembly and the browser",
    "gpu": "GPU (wgpu)",
    "mcu": "Microcontrollers (MicroPython)",
    "quant": "Quantized models",
    "system": "Start-up, interop, Remote, Router and Ray",
}
_LOAD_AT_START = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
# Environment variables that change what a benchmark measures: a record's command sets them
SPEED_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "EMBER_MALLOPT",
             "EMBER_WGPU_ADAPTER", "EMBER_WGPU_Q8_DEPTHWISE", "EMBER_WGPU_SUBGROUPS",
             "EMBER_WGPU_TUNE")


def _is_number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and v >= 0)


def _is_figure(v) -> bool:
    """A measured figure: a number, a [low, high] range of numbers, or None (not measured)."""
    if isinstance(v, list):
        return len(v) == 2 and all(_is_number(x) for x in v) and v[0] <= v[1]
    return v is None or _is_number(v)


def _rounded(v):
    """Four significant digits: what a timing on a shared machine can claim."""
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    return float(f"{v:.4g}") if isinstance(v, float) else v


def row(target: str, case: str, ember, peer, unit: str, peer_name: str, *, ratio=None,
        higher_is_better: bool = False, note: str | None = None) -> dict:
    """One headline figure of a record: Ember's value and the peer's in ``unit``.

    ``ratio`` defaults to Ember's time over the peer's (``peer / ember`` for a rate,
    ``higher_is_better``), so below 1 Ember is ahead whatever the unit::

        row("cpu", "add 32×32", 2.2, 0.8, "µs", "numpy")["ratio"]  # 2.75
    """
    if ratio is None and _is_number(ember) and _is_number(peer) and min(ember, peer) > 0:
        ratio = peer / ember if higher_is_better else ember / peer
    ember, peer, ratio = (_rounded(v) for v in (ember, peer, ratio))
    out = {"target": target, "case": case, "ember": ember, "peer": peer, "unit": unit,
           "peer_name": peer_name, "ratio": ratio, "higher_is_better": higher_is_better}
    if note:
        out["note"] = note
    problems = check_row(out)
    if problems:
        raise ValueError(f"row {case!r}: " + "; ".join(problems))
    return out


def check_row(r: dict) -> list[str]:
    """What is wrong with one record row (empty when nothing)."""
    problems = []
    if r.get("target") not in TARGETS:
        problems.append(f"target {r.get('target')!r} is not one of {sorted(TARGETS)}")
    for key in ("case", "unit", "peer_name"):
        if not isinstance(r.get(key), str) or not r.get(key):
            problems.append(f"{key} must be a non-empty string, got {r.get(key)!r}")
    for key in ("ember", "peer", "ratio"):
        if key not in r:
            problems.append(f"{key} is missing (None where not measured)")
        elif not _is_figure(r[key]):
            problems.append(f"{key} must be a number >= 0, a [low, high] range or None, "
                            f"got {r[key]!r}")
    if not isinstance(r.get("higher_is_better"), bool):
        problems.append("higher_is_better must be true or false")
    if r.get("ratio") is None and (r.get("peer") is not None or not r.get("note")):
        problems.append("ratio is None: allowed only without a peer figure and with a note "
                        "saying what stands instead")
    e, p, q = r.get("ember"), r.get("peer"), r.get("ratio")
    if not problems and all(_is_number(v) and v > 0 for v in (e, p, q)):
        expected = p / e if r["higher_is_better"] else e / p
        if abs(q - expected) > 0.1 * expected:
            problems.append(f"ratio {q} disagrees with the figures: expected {expected:.3g} "
                            f"({'peer / ember' if r['higher_is_better'] else 'ember / peer'})")
    return problems


def check_record(rec: dict) -> list[str]:
    """What is wrong with a record (empty when nothing): every field the scoreboard needs."""
    problems = []
    for key in ("benchmark", "script", "command", "date", "source"):
        if not isinstance(rec.get(key), str) or not rec.get(key):
            problems.append(f"{key} must be a non-empty string, got {rec.get(key)!r}")
    if problems:
        return problems
    if rec["script"] not in rec["command"]:
        problems.append(f"command {rec['command']!r} does not run {rec['script']}")
    if not (len(rec["date"]) >= 10 and rec["date"][:4].isdigit() and rec["date"][4] == "-"):
        problems.append(f"date {rec['date']!r} is not ISO (YYYY-MM-DD...)")
    if rec["source"] not in ("measured", "journal"):
        problems.append(f"source {rec['source']!r} is not 'measured' or 'journal'")
    if rec["source"] == "journal" and not rec.get("journal_section"):
        problems.append("a record from the journal names its RESULTS.md section "
                        "(journal_section)")
    machine = rec.get("machine")
    if not isinstance(machine, dict):
        problems.append("machine is missing")
    else:
        for key in ("cpu", "gpu", "load"):
            if not isinstance(machine.get(key), str) or not machine.get(key):
                problems.append(f"machine.{key} must be a non-empty string")
    rows = rec.get("rows")
    if not isinstance(rows, list) or not rows:
        problems.append("rows must be a non-empty list")
    else:
        for r in rows:
            problems += [f"row {r.get('case')!r}: {p}" for p in check_row(r)]
    return problems


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _nvidia_gpu() -> str | None:
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True)
    names = out.stdout.strip().splitlines() if out.returncode == 0 else []
    return names[0] if names else None


def _commit() -> str:
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    git = ["git", "-C", root]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    changed = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no", "--",
                                    "core", "wasm", "shaders", "embedded", "benchmarks"],
                             capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + (" + uncommitted changes" if changed else "")


def machine(device: str | None = None) -> dict:
    """This machine as a record names it: CPU model and cores, the GPU (``device``: the
    adapter a GPU benchmark ran on, else nvidia-smi's), the 1-minute load at the start and at
    the end of the run, and the versions of the peers' packages this process imported."""
    import platform

    cores = os.cpu_count() or 1
    end = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    load = ("not available" if end is None
            else f"{_LOAD_AT_START:.2f} → {end:.2f}" if _LOAD_AT_START is not None
            else f"{end:.2f}")
    packages = ("numpy", "torch", "onnxruntime", "wgpu", "wasmtime", "ray", "ember")
    software = {name: getattr(sys.modules[name], "__version__", "?")
                for name in packages if name in sys.modules}
    software["python"] = platform.python_version()
    return {"cpu": f"{cores}-core {_cpu_model()}", "gpu": device or _nvidia_gpu() or "none",
            "load": load, "os": platform.platform(terse=True), "software": software}


def write_record(rows: list[dict], *, variant: str | None = None,
                 device: str | None = None) -> str:
    """Write this run's headline figures (``row`` dicts) to records/<script>[-variant].json,
    replacing the benchmark's previous record; the command line that reproduces them (with the
    ``SPEED_ENV`` variables set), the date, the machine and the commit go with them. ``EMBER_BENCH_RECORDS`` names another
    folder (trial runs that should not replace the scoreboard's figures)."""
    import datetime
    import json
    import shlex

    script = os.path.basename(sys.argv[0])
    name = os.path.splitext(script)[0] + (f"-{variant}" if variant else "")
    rec = {
        "benchmark": name,
        "script": f"benchmarks/{script}",
        "command": " ".join([f"{k}={shlex.quote(os.environ[k])}" for k in SPEED_ENV
                             if k in os.environ] + ["python", f"benchmarks/{script}"]
                            + [shlex.quote(a) for a in sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "source": "measured",
        "commit": _commit(),
        "machine": machine(device),
        "rows": rows,
    }
    problems = check_record(rec)
    if problems:
        raise ValueError(f"record {name}: " + "; ".join(problems))
    folder = os.environ.get("EMBER_BENCH_RECORDS") or RECORDS
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"record: {path} (python benchmarks/scoreboard.py renders the scoreboard)")
    return path
