"""The Remote server's worker threads, shared fairly between connections.

Every connection's jobs (its batches, as :meth:`Session.steps` generators) run one step (one
record) at a time, in order within the connection, and a job tells the scheduler before each
step how much work that step is (the number it yields: multiply-adds or element visits, known
from the shapes before anything runs). Of the connections with a step waiting, the scheduler
always takes the one that has used the least worker time, as a fair scheduler does; a
connection that was idle starts level with the least-served busy one (idle time is not saved
up as credit).

One thread runs every step when the backend is not thread-safe (wgpu): another client's
small read then waits for at most the op in progress. A thread-safe backend
(``caps.threadsafe``, numpy) gets two threads: one that runs only *light* steps (at most
``light_work``: a few milliseconds of a CPU core) and one that runs the heavy steps first and
light ones when no heavy step waits, at a lower OS priority (nice +10, where the OS gives a
thread a priority of its own: Linux) so that the light thread and the event loop get the CPU
first. A small read then never waits for another client's large matmul, only for other light
steps; working memory is at most one heavy op's plus one light op's, each bounded by
``max_op_bytes``. On a CPU backend the heavy step itself runs in the server's worker process
(:mod:`~ember.remote.opworker`: the thread only carries its operands and results), and the
server asks for ``heavy_apart``: one thread takes only the heavy steps and two take the light
ones, so as many threads serve small steps while a large op runs as when none does.

>>> import asyncio
>>> def job(n, work):
...     for _ in range(n):
...         yield work
...     return n
>>> async def main():
...     scheduler = Scheduler(threadsafe=True)
...     loop = asyncio.get_running_loop()
...     results = await asyncio.gather(scheduler.submit("a", job(3, 1 << 30), loop),
...                                    scheduler.submit("b", job(1, 10), loop))
...     scheduler.stop()
...     return results
>>> asyncio.run(main())
[3, 1]
"""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import threading
import time
from collections.abc import Generator, Hashable

#: the most work (multiply-adds or element visits) a step may have to run on the light thread:
#: a few milliseconds of one CPU core, so a small read waits for milliseconds, not seconds
LIGHT_WORK = 1 << 22


class Scheduler:
    """Runs jobs (generators yielding each next step's work) a step at a time; see the module
    doc."""

    def __init__(self, *, threadsafe: bool = False, light_work: int = LIGHT_WORK,
                 name: str = "ember-remote-ops", heavy_apart: bool = False):
        self._cond = threading.Condition()
        self._queues: dict[Hashable, collections.deque] = {}  # busy owner -> its jobs
        self._next: dict[Hashable, int] = {}  # busy owner -> the work of its next step
        self._running: set[Hashable] = set()  # owners with a step on a thread now
        self._used: dict[Hashable, float] = {}  # owner -> worker seconds used
        self._light_work = light_work
        self._split = threadsafe  # a light thread beside the one that runs everything
        self._stopped = False
        kinds = (("heavy", "light", "light") if heavy_apart and threadsafe else
                 ("any", "light") if threadsafe else ("any",))
        self._threads = [threading.Thread(target=self._loop, args=(kind,),
                                          name=f"{name}-{kind}", daemon=True)
                         for kind in kinds]
        for t in self._threads:
            t.start()

    def submit(self, owner: Hashable, job: Generator, loop: asyncio.AbstractEventLoop,
               work: int = 0) -> asyncio.Future:
        """Queue ``job`` after ``owner``'s earlier jobs; the future gets its return value (or
        its exception) on ``loop``. ``work``: that of the job's first step (reading a frame:
        its size)."""
        future = loop.create_future()
        with self._cond:
            if self._stopped:
                raise RuntimeError("the Remote server's worker has stopped")
            queue = self._queues.get(owner)
            if queue is None:
                queue = self._queues[owner] = collections.deque()
                self._next[owner] = work
                floor = min((self._used[o] for o in self._queues if o != owner), default=0.0)
                self._used[owner] = max(self._used.get(owner, 0.0), floor)
            queue.append((job, future, loop, work))
            self._cond.notify_all()
        return future

    def used(self, owner: Hashable) -> float:
        """Worker seconds ``owner``'s jobs have taken."""
        with self._cond:
            return self._used.get(owner, 0.0)

    def forget(self, owner: Hashable) -> None:
        """Drop ``owner``'s account (the connection ended; its jobs have finished)."""
        with self._cond:
            if owner not in self._queues:
                self._used.pop(owner, None)

    def stop(self) -> None:
        """Stop after the steps in progress; queued jobs are cancelled."""
        with self._cond:
            self._stopped = True
            pending = [job for queue in self._queues.values() for job in queue]
            self._queues.clear()
            self._next.clear()
            self._cond.notify_all()
        for _, future, loop, _ in pending:
            _settle(loop, future, None, asyncio.CancelledError())

    def _pick(self, kind: str) -> Hashable | None:
        """The least-served owner with a step a thread of ``kind`` runs: "light" steps,
        "heavy" ones, or "any" (heavy ones first when light threads take the others)."""
        ready = [o for o in self._queues if o not in self._running]
        heavy = [o for o in ready if self._next[o] > self._light_work]
        if kind == "light":
            ready = [o for o in ready if self._next[o] <= self._light_work]
        elif kind == "heavy":
            ready = heavy
        elif self._split:
            ready = heavy or ready
        return min(ready, key=self._used.__getitem__, default=None)

    def _loop(self, kind: str) -> None:
        if kind != "light" and self._split:
            _lower_priority()
        while True:
            with self._cond:
                while not self._stopped and (owner := self._pick(kind)) is None:
                    self._cond.wait()
                if self._stopped:
                    return
                self._running.add(owner)
                job, future, loop, _ = self._queues[owner][0]
            start = time.perf_counter()
            done, result, error, work = True, None, None, 0
            try:
                work = next(job)
                done = False
            except StopIteration as stop:
                result = stop.value
            except Exception as e:  # noqa: BLE001 - the job's error goes to its awaiter
                error = e
            with self._cond:
                self._running.discard(owner)
                self._used[owner] = self._used.get(owner, 0.0) + time.perf_counter() - start
                queue = self._queues.get(owner)
                if queue and done:
                    queue.popleft()
                    work = queue[0][3] if queue else 0
                if not queue:
                    self._queues.pop(owner, None)
                    self._next.pop(owner, None)
                else:
                    self._next[owner] = work if type(work) is int else 0
                self._cond.notify_all()
            if done:
                _settle(loop, future, result, error)


def _lower_priority() -> None:
    """Nice +10 for the calling thread, where the OS gives threads priorities of their own."""
    if sys.platform != "linux":
        return  # elsewhere PRIO_PROCESS would name the whole process
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + 10))
    except OSError:  # not allowed here: the thread keeps the process's priority
        pass


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future, result, error) -> None:
    def settle():
        if future.done():
            return
        if isinstance(error, asyncio.CancelledError):
            future.cancel()
        elif error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the loop has closed: nobody waits for the answer
        pass
