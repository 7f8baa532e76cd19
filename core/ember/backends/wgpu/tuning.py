"""The matmul autotuner: for each adapter and shape class, time the candidate kernels once and
keep the fastest, in memory and in a small JSON file.

A shape class is ``(n, m, k, batch)`` rounded up to powers of two, plus the dtype. Candidates
are named launches (``"128x128/8x8k16+split4"``: see :func:`ember.backends.wgpu.compute.plan`);
each runs once to compile and warm up, then ``REPEAT`` times under the timer: GPU time from
timestamp queries where the adapter has them, else wall time around a sync. The choice is
cached per adapter (its name and backend) in ``$EMBER_CACHE/wgpu-tuning.json`` (default
``~/.cache/ember/wgpu-tuning.json``); a corrupt or foreign file is ignored with a warning.

When it tunes (:func:`enabled`): ``EMBER_WGPU_TUNE=1`` always, ``=0`` never; by default on
real GPUs for products of at least :data:`MIN_WORK` multiply-adds. On CPU emulation (lavapipe,
SwiftShader) and for smaller products the timing would cost more than it saves, so the
default rule stays. Nothing is tuned while a capture is recording (its dispatches would be
replayed); a cached choice is still used then.

>>> shape_class((100, 1000, 3, 1))
(128, 1024, 4, 1)
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

#: multiply-adds (n·m·k·batch) from which tuning is on by default on a real GPU
MIN_WORK = 1 << 27
#: timed runs per candidate (after one untimed)
REPEAT = 3
_VERSION = 1
_EMULATED = ("llvmpipe", "lavapipe", "swiftshader")


def shape_class(dims: tuple[int, ...]) -> tuple[int, ...]:
    """Each dimension rounded up to a power of two (0 stays 0)."""
    return tuple(1 << (d - 1).bit_length() if d > 0 else 0 for d in dims)


def cache_path() -> Path:
    """``$EMBER_CACHE/wgpu-tuning.json``, else ``~/.cache/ember/wgpu-tuning.json``."""
    root = os.environ.get("EMBER_CACHE") or Path.home() / ".cache" / "ember"
    return Path(root) / "wgpu-tuning.json"


def enabled(info, work: int) -> bool:
    """Whether to tune a product of ``work`` multiply-adds on the adapter ``info`` (see the
    module)."""
    flag = os.environ.get("EMBER_WGPU_TUNE", "").strip()
    if flag in ("0", "1"):
        return flag == "1"
    if flag:
        warnings.warn(f"EMBER_WGPU_TUNE={flag!r} is neither 0 nor 1; using the default rule",
                      stacklevel=3)
    emulated = any(word in info.name.lower() for word in _EMULATED)
    return not emulated and work >= MIN_WORK


def measure(rt, name: str, launch) -> float:
    """Seconds one call of ``launch()`` (candidate ``name``) takes on the GPU (median of
    :data:`REPEAT`)."""
    adapter = rt.adapter
    launch()  # compiles the pipeline, warms the allocator
    rt.engine.flush()
    timed = ("timestamp-query" in adapter.info.features and hasattr(adapter, "start_gpu_timer")
             and getattr(adapter, "_timer", None) is None)  # a benchmark's timer is running
    times = []
    for _ in range(REPEAT):
        if timed:
            adapter.start_gpu_timer()
            launch()
            rt.engine.flush()
            times.append(adapter.gpu_seconds())
            adapter.stop_gpu_timer()
        else:
            _sync(rt)
            t0 = time.perf_counter()
            _sync(rt, launch())
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def _sync(rt, out=None) -> None:
    """Wait for the submitted work (a 4-byte read of ``out`` or of a scratch block)."""
    block = out.block if out is not None else rt.allocator.alloc(4, "tune", False)
    rt.engine.read(block, 4)
    if out is None:
        rt.allocator.release(block)


class Tuner:
    """Choices per adapter and shape class; ``timer(rt, name, launch) -> seconds`` measures a
    candidate (:func:`measure`; tests pass a fake), ``path`` is the cache file (default
    :func:`cache_path`, read when first needed)."""

    def __init__(self, timer=measure, path: Path | None = None):
        self.timer = timer
        self.path = path
        self.choices: dict[str, dict[str, str]] | None = None
        self.timings = 0  # candidates timed, for tests

    def _file(self) -> Path:
        return self.path or cache_path()

    def _load(self) -> dict[str, dict[str, str]]:
        if self.choices is None:
            self.choices = _read(self._file())
        return self.choices

    def choose(self, rt, dims: tuple[int, ...], dtype: str, candidates, launch):
        """The fastest of ``candidates()`` (name → option) for ``dims`` of ``dtype`` on
        ``rt``'s adapter, ``launch(option)`` running one: cached, else timed now when
        :func:`enabled`; None (the caller's default rule) otherwise. Cheap when it declines:
        ``candidates()`` is only built for a cached or tuned class."""
        adapter = f"{rt.info.name} | {rt.info.backend}"
        cls = ",".join(map(str, shape_class(dims))) + f",{dtype}"
        known = self._load().get(adapter, {}).get(cls)
        work = 1
        for d in dims:
            work *= d
        may_tune = rt.engine.recording is None and enabled(rt.info, work)
        if known is None and not may_tune:
            return None
        options = candidates()
        if known in options:
            return options[known]
        if not may_tune or len(options) < 2:
            return None
        times = {}
        for name, option in options.items():
            times[name] = self.timer(rt, name, lambda o=option: launch(o))
            self.timings += 1
        best = min(times, key=times.get)
        self.choices.setdefault(adapter, {})[cls] = best
        self._save()
        return options[best]

    def _save(self) -> None:
        path = self._file()
        merged = _read(path, quiet=True)  # another process may have added its choices
        for adapter, classes in self.choices.items():
            merged.setdefault(adapter, {}).update(classes)
        text = json.dumps({"version": _VERSION, "choices": merged}, indent=1, sort_keys=True)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # atomic: write a temporary file next to it, then rename (ember.io.atomic is a
            # layer above the backends)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".wgpu-tuning-")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except OSError as e:
            with contextlib.suppress(OSError, NameError):
                os.unlink(tmp)
            warnings.warn(f"wgpu tuning: could not write {path}: {e}; the choices stay in "
                          "memory", stacklevel=3)


def _read(path: Path, quiet: bool = False) -> dict[str, dict[str, str]]:
    """The cached choices in ``path``; {} (with a warning unless ``quiet``) when it is
    missing, unreadable, corrupt or not this version's."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        if not quiet:
            warnings.warn(f"wgpu tuning: ignoring {path}: {e}", stacklevel=4)
        return {}
    choices = data.get("choices") if isinstance(data, dict) else None
    if (data.get("version") if isinstance(data, dict) else None) != _VERSION or not (
            isinstance(choices, dict) and all(
                isinstance(c, dict) and all(isinstance(v, str) for v in c.values())
                for c in choices.values())):
        if not quiet:
            warnings.warn(f"wgpu tuning: ignoring {path}: not a version-{_VERSION} tuning "
                          "file", stacklevel=4)
        return {}
    return {a: dict(c) for a, c in choices.items()}


#: the process's tuner
TUNER = Tuner()
