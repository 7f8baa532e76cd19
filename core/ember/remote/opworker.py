"""A Remote server's heavy ops, run in a process of their own at a low OS priority.

A server on a CPU backend runs every op whose work passes the light limit
(:data:`~ember.remote.scheduler.LIGHT_WORK`) in one worker process, started on the first such
op: a large matmul then shares neither the server's interpreter lock nor, at nice
+:data:`HEAVY_NICE`, its claim on the CPU with the event loop and the small ops, which the OS
runs first. The operands go to the worker and the results come back as protocol messages (a
batch of puts, the op record as the client sent it and reads; the reads' replies), which the
worker runs with a :class:`~ember.remote.session.Session` of its own under the same limits, so
nothing but checked tensors and registry ops crosses.

Memory: while an op runs, the server reads the worker's resident memory (Linux's ``/proc``)
every :data:`POLL_SECONDS`; past the op's budget it kills the worker and the op fails with a
:class:`~ember.remote.errors.LimitError`. A worker that dies some other way fails its op the
same way. The next heavy op starts a fresh worker.

>>> from ember.remote import ServerLimits, protocol
>>> worker = OpWorker("numpy", ServerLimits())
>>> batch = protocol.batch_parts([["put", 1, "float32", [2], 0, 8],
...                                ["op", "float_add", [2], [{"t": 1}, {"t": 1}]],
...                                ["read", 0, 2]], [bytes(8)])
>>> [protocol.decode_reply(r)[1] for r in worker.run(batch, 64 << 20, "float_add")]
[{'shape': [2], 'dtype': 'float32'}]
>>> worker.stop()
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import threading

from .errors import LimitError
from .limits import ServerLimits

#: how much lower the worker's OS priority is than the server's (Unix nice levels)
HEAVY_NICE = 19
#: seconds between two reads of the worker's memory while an op runs
POLL_SECONDS = 0.01
#: what an op may add to the worker's memory beyond its budget (interpreter and BLAS buffers)
MARGIN_BYTES = 64 << 20

_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")


class OpWorker:
    """The worker process of one server (see the module doc); one op at a time."""

    def __init__(self, backend: str, limits: ServerLimits):
        self._args = [backend, json.dumps(limits.public())]
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before the first heavy op or after a kill)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def run(self, batch: list, budget: int, what: str) -> list[bytearray]:
        """The replies of ``batch`` (a message in parts: :func:`~.protocol.batch_parts`) run
        in the worker; LimitError when the worker's resident memory grows by more than
        ``budget`` bytes while it runs (the worker is then killed) or the worker dies."""
        with self._lock:
            try:
                proc = self._started()
                _reset_peak(proc.pid)
                start = _rss(proc.pid)
                _write(proc.stdin, [batch])
                replies = self._replies(proc, start, budget)
            except (BrokenPipeError, EOFError):
                raise LimitError(f"{what}: the server's worker process for large ops died "
                                 f"(exit status {self._kill(grace=1.0)}); the op failed") from None
            if replies is None:
                self._kill()
                raise LimitError(f"{what}: the server's worker process for large ops grew by "
                                 f"more than the op's memory budget ({budget + MARGIN_BYTES} "
                                 f"bytes over the {start} it held); it was stopped and the "
                                 "op failed")
            return replies

    def stop(self) -> None:
        """End the worker (it exits when its input closes)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            proc.stdin.close()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()

    def _started(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            import ember

            env = dict(os.environ)
            root = os.path.dirname(os.path.dirname(ember.__file__))
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
            self._proc = subprocess.Popen(
                [sys.executable, "-m", __name__, *self._args], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, bufsize=0, env=env, close_fds=True)
            for pipe in (self._proc.stdin, self._proc.stdout):
                _widen(pipe)
            _read(self._proc.stdout)  # ready: memory from now on is the ops'
        return self._proc

    def _replies(self, proc: subprocess.Popen, start: int | None, budget: int):
        """The worker's answer, or None once its memory has passed ``start + budget`` (read
        while it runs, and its peak once it has answered)."""
        fd = proc.stdout.fileno()
        if start is None:  # no /proc: nothing to watch
            return _read(proc.stdout)
        while not select.select([fd], [], [], POLL_SECONDS)[0]:
            if (_rss(proc.pid) or 0) - start > budget + MARGIN_BYTES:
                return None
        replies = _read(proc.stdout)
        return None if (_peak(proc.pid) or 0) - start > budget + MARGIN_BYTES else replies

    def _kill(self, grace: float = 0.0) -> int | None:
        """Kill the worker (after ``grace`` seconds to exit by itself); its exit status."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
        return proc.returncode


def _rss(pid: int) -> int | None:
    """Resident bytes of process ``pid``; None where the OS doesn't say (no ``/proc``)."""
    return _status(pid, b"VmRSS:")


def _peak(pid: int) -> int | None:
    """Process ``pid``'s peak resident bytes since :func:`_reset_peak`."""
    return _status(pid, b"VmHWM:")


def _reset_peak(pid: int) -> None:
    """Start process ``pid``'s peak resident memory afresh (Linux: ``clear_refs`` 5)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "wb") as f:
            f.write(b"5")
    except OSError:
        pass


def _status(pid: int, key: bytes) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return None


def _widen(pipe) -> None:
    """A 1 MB pipe buffer where the OS allows it (Linux): fewer switches per large tensor."""
    import fcntl

    try:
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (AttributeError, OSError):
        pass


def _write(stream, messages: list) -> None:
    """``messages`` (each bytes-like, or a list of parts written one after another) framed by
    their count and lengths."""
    stream.write(_COUNT.pack(len(messages)))
    for m in messages:
        parts = m if isinstance(m, list) else [m]
        stream.write(_LENGTH.pack(sum(map(len, parts))))
        for part in parts:
            view, done = memoryview(part), 0
            while done < len(view):
                done += stream.write(view[done:])
    stream.flush()


def _read(stream) -> list[bytearray]:
    (count,) = _COUNT.unpack(_exactly(stream, _COUNT.size))
    return [_exactly(stream, _LENGTH.unpack(_exactly(stream, _LENGTH.size))[0])
            for _ in range(count)]


def _exactly(stream, n: int) -> bytearray:
    """``n`` bytes read straight into one buffer (the lock on the interpreter is released
    while the OS copies)."""
    buffer = bytearray(n)
    view, done = memoryview(buffer), 0
    while done < n:
        got = stream.readinto(view[done:])
        if not got:
            raise EOFError("the worker's pipe closed")
        done += got
    return buffer


def _serve(backend_name: str, limits_json: str) -> None:
    """The worker: batches in on stdin, their replies out on stdout, until stdin closes."""
    from ..backends import get_backend
    from . import protocol
    from .session import Session

    os.nice(HEAVY_NICE)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # a stray print goes to stderr, not into the replies
    inp = os.fdopen(0, "rb", buffering=0)
    backend, limits = get_backend(backend_name), ServerLimits(**json.loads(limits_json))
    _write(out, [])  # ready
    while True:
        try:
            (frame,) = _read(inp)
        except EOFError:
            return
        try:
            replies = Session(backend, limits).handle(frame)
        except Exception as e:  # noqa: BLE001 - the server turns it into the op's error
            replies = [protocol.encode_reply(0, {"error": [type(e).__name__, str(e)]})]
        _write(out, replies)


if __name__ == "__main__":
    _serve(*sys.argv[1:3])
