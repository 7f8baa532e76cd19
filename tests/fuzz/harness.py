"""Running inputs through worker processes, classifying outcomes, saving the inputs of bugs.

A :class:`Worker` is one long-lived subprocess (CPython :mod:`.worker`, or MicroPython running
``mp_worker.py``) limited to ``MEMORY_LIMIT`` bytes of address space; inputs go in as files,
one per line of its stdin, with a time limit each (``TIMEOUT`` s of CPU time). A CPython
worker also lowers ``ember.limits`` to fit that address space (``worker.SANDBOX_LIMITS``).
Outcomes:

* ``ok`` / ``typed``: the reader accepted the input or raised its typed error (expected);
* ``untyped``: any other exception (bug); ``memory``: MemoryError, or death by the memory
  limit (bug); ``timeout``: no answer within the limit (bug); ``crash``: the process died
  (a signal, an abort: bug); ``injection``: text from the input ran as code (bug).

A worker serves input after input; after a bug it is restarted, so no bug leaves its state
to the next input.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .mutate import Mutator
from .targets import TARGETS, Target

REPO = Path(__file__).resolve().parents[2]
BUGS = ("untyped", "timeout", "memory", "crash", "injection")
#: address space of a worker; EMBER_FUZZ_MEMORY_MB changes it (a reader that reserves more
#: than it needs shows up as a memory bug at the default)
MEMORY_LIMIT = int(os.environ.get("EMBER_FUZZ_MEMORY_MB", "1024")) << 20
#: per input: seconds of the worker's CPU time, and WALL_FACTOR times that of wall-clock time
TIMEOUT = 5.0
WALL_FACTOR = 6
START_TIMEOUT = 120.0
CRASH_DIR = REPO / "runs" / "fuzz"
MICRO_HEAP = "256K"


@dataclass(frozen=True)
class Outcome:
    status: str
    error: str = ""
    message: str = ""
    where: str = ""

    @property
    def bug(self) -> bool:
        return self.status in BUGS

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two bugs the same bug: class, exception type, the reader's frame."""
        return self.status, self.error, self.where.split(" -> ")[0]


def _limit_memory() -> None:  # runs in the child between fork and exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class WorkerError(RuntimeError):
    """A worker that doesn't start (a broken environment, not a finding)."""


class Worker:
    """One reusable worker process for ``target``; :meth:`run` classifies one input."""

    def __init__(self, target: Target, timeout: float = TIMEOUT):
        self.target, self.timeout = target, timeout
        self.proc: subprocess.Popen | None = None
        self.tmp = tempfile.mkdtemp(prefix=f"ember-fuzz-{target.name}-")
        self.input = os.path.join(self.tmp, "input" + target.suffix)
        self.stderr_path = os.path.join(self.tmp, "stderr")
        self._buf = b""

    def _command(self) -> tuple[list[str], dict[str, str]]:
        # the worker's scratch folder goes inside ours: close() removes it even when the
        # worker was killed (a timeout, the memory limit) before it could clean up
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", FUZZ_TMP=self.tmp)
        if self.target.engine == "micropython":
            from ember.export.micropython import find_micropython, micropython_path

            env["MICROPYPATH"] = micropython_path(native=True)
            script = str(Path(__file__).with_name("mp_worker.py"))
            return [find_micropython(), "-X", f"heapsize={MICRO_HEAP}", script], env
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        return [sys.executable, "-m", "tests.fuzz.worker", self.target.name], env

    def start(self) -> None:
        cmd, env = self._command()
        self._buf = b""
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, cwd=REPO, env=env,
                                         preexec_fn=_limit_memory, start_new_session=True)
        line = self._readline(START_TIMEOUT)
        if line != b"ready":
            self.stop()
            raise WorkerError(f"fuzz worker {self.target.name} didn't start ({line!r}):\n"
                              f"{self._stderr_tail(3000)}")

    def _readline(self, timeout: float) -> bytes | None:
        """One line without its newline; b"" at EOF; None on timeout."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.strip()

    def _cpu_seconds(self) -> float:
        """CPU time the worker has used (Linux /proc; 0 where there is none)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _answer(self) -> bytes | None:
        """The worker's answer line, or None when the input took ``timeout`` seconds of CPU
        time (a busy machine slows the worker down without making that a bug) or
        ``WALL_FACTOR`` times that in wall-clock time (a worker blocked without computing)."""
        cpu0, wall_end = self._cpu_seconds(), time.monotonic() + WALL_FACTOR * self.timeout
        while True:
            line = self._readline(min(self.timeout, max(0.0, wall_end - time.monotonic())))
            if line is not None:
                return line
            if self._cpu_seconds() - cpu0 >= self.timeout or time.monotonic() >= wall_end:
                return None

    def _stack(self) -> str:
        """Where a stuck CPython worker is: it dumps its stack on SIGUSR1 (faulthandler); the
        innermost frame in Ember's code, else the innermost frame."""
        if self.target.engine != "cpython":
            return ""
        before = os.path.getsize(self.stderr_path)
        os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(0.5)
        with open(self.stderr_path, "rb") as f:
            f.seek(before)
            dump = f.read().decode("utf-8", "replace")
        frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', dump)  # innermost first
        ours = [f for f in frames if "/core/ember/" in f[0]] or frames
        if not ours:
            return ""
        path, line, name = ours[0]
        path = os.path.relpath(path, REPO) if path.startswith(str(REPO)) else path
        return f"{path}:{line} in {name}"

    def _stderr_tail(self, n: int = 600) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.stderr_path) - n))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Kill the worker's process group (it may have started children)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, data: bytes) -> Outcome:
        if self.proc is None:
            self.start()
        with open(self.input, "wb") as f:
            f.write(data)
        try:
            self.proc.stdin.write(self.input.encode() + b"\n")
            self.proc.stdin.flush()
            line = self._answer()
        except BrokenPipeError:
            line = b""
        if line is None:
            where = self._stack()
            self.stop()
            return Outcome("timeout", "timeout", f"over {self.timeout:g} s of CPU or "
                           f"{WALL_FACTOR * self.timeout:g} s of wall-clock time", where)
        if line == b"":
            return self._died()
        result = json.loads(line)
        outcome = Outcome(result["status"], result.get("error", ""),
                          result.get("message", ""), _short_where(result.get("where", "")))
        if outcome.bug:
            self.stop()
        return outcome

    def _died(self) -> Outcome:
        rc = self.proc.wait()
        tail = self._stderr_tail()
        self.stop()
        last = tail.strip().splitlines()[-1] if tail.strip() else ""
        if "MemoryError" in tail or "memory allocation" in tail or "bad_alloc" in tail:
            return Outcome("memory", "died", last)
        what = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
        return Outcome("crash", what, last)


def _short_where(where: str) -> str:
    """MicroPython's ``File "/repo/x.py", line 5, in f`` as ``x.py:5 in f``, like CPython's."""
    m = re.fullmatch(r'File "([^"]+)", line (\d+), in (\S+)', where)
    if not m:
        return where
    path = m[1][len(str(REPO)) + 1:] if m[1].startswith(str(REPO)) else m[1]
    return f"{path}:{m[2]} in {m[3]}"


# ------------------------------------------------------------------ campaigns
@dataclass
class Bug:
    outcome: Outcome
    count: int = 0
    saved: list[str] = field(default_factory=list)


@dataclass
class Stats:
    """What one format's run did."""

    target: str
    executed: int = 0
    seconds: float = 0.0
    status: Counter = field(default_factory=Counter)
    typed: Counter = field(default_factory=Counter)
    bugs: dict[tuple, Bug] = field(default_factory=dict)
    seeds_not_ok: list[str] = field(default_factory=list)

    @property
    def n_bugs(self) -> int:
        return sum(self.status[s] for s in BUGS)

    def to_json(self) -> dict:
        return {
            "format": self.target, "executed": self.executed,
            "seconds": round(self.seconds, 1),
            "inputs_per_s": round(self.executed / self.seconds, 1) if self.seconds else 0.0,
            "ok": self.status["ok"], "typed": self.status["typed"], "typed_by_error":
            dict(self.typed), "bugs": {s: self.status[s] for s in BUGS if self.status[s]},
            "seeds_not_ok": self.seeds_not_ok,
            "unique_bugs": [{"class": b.outcome.status, "error": b.outcome.error,
                             "where": b.outcome.where, "message": b.outcome.message,
                             "count": b.count, "saved": b.saved} for b in self.bugs.values()],
        }


def save_input(data: bytes, outcome: Outcome, target: Target, crash_dir: Path) -> str:
    """Write a bug's input (and a note on what happened) under ``crash_dir/<format>/``."""
    folder = crash_dir / target.name
    folder.mkdir(parents=True, exist_ok=True)
    error = "".join(c if c.isalnum() else "_" for c in outcome.error.split(".")[-1])[:40]
    digest = hashlib.sha1(data).hexdigest()[:12]
    path = folder / f"{outcome.status}-{error}-{digest}{target.suffix}"
    path.write_bytes(data)
    path.with_suffix(path.suffix + ".txt").write_text(
        f"format: {target.name}\nclass: {outcome.status}\nerror: {outcome.error}\n"
        f"where: {outcome.where}\nmessage: {outcome.message}\n")
    return str(path)


def record(stats: Stats, outcome: Outcome, data: bytes, target: Target, crash_dir: Path,
           keep: int) -> None:
    """Count one outcome; save a bug's input unless ``keep`` inputs of that bug are saved."""
    stats.executed += 1
    stats.status[outcome.status] += 1
    if outcome.status == "typed":
        stats.typed[outcome.error] += 1
    if outcome.bug:
        bug = stats.bugs.setdefault(outcome.key, Bug(outcome))
        bug.count += 1
        if len(bug.saved) < keep:
            bug.saved.append(save_input(data, outcome, target, crash_dir))


def fuzz(name: str, seconds: float, *, max_inputs: int | None = None, rng_seed: int = 0,
         crash_dir: Path = CRASH_DIR, keep: int = 20,
         progress: Callable[[Stats], None] | None = None) -> Stats:
    """Run the seeds, then mutated inputs for ``seconds`` (or ``max_inputs``) through one
    format's worker. The input sequence depends only on ``rng_seed``. The inputs of each
    distinct bug are saved, up to ``keep`` of them."""
    target = TARGETS[name]
    corpus = target.seeds()
    mutator = Mutator(corpus, random.Random(rng_seed), target.structured, target.fixup,
                      structured_rate=target.structured_rate)
    stats = Stats(name)
    start = time.monotonic()
    with Worker(target) as worker:
        for seed_name in sorted(corpus):
            outcome = worker.run(corpus[seed_name])
            if outcome.status != "ok":
                stats.seeds_not_ok.append(f"{seed_name}: {outcome.status} {outcome.error} "
                                          f"{outcome.message}")
            record(stats, outcome, corpus[seed_name], target, crash_dir, keep)
        while time.monotonic() - start < seconds and (max_inputs is None
                                                       or stats.executed < max_inputs):
            data = mutator()
            record(stats, worker.run(data), data, target, crash_dir, keep)
            stats.seconds = time.monotonic() - start
            if progress is not None:
                progress(stats)
    stats.seconds = time.monotonic() - start
    return stats


def replay(name: str, paths: Iterable[Path]) -> list[tuple[Path, Outcome]]:
    """Each file through one format's worker (regression tests, reproducing a saved bug)."""
    with Worker(TARGETS[name]) as worker:
        return [(Path(p), worker.run(Path(p).read_bytes())) for p in paths]
