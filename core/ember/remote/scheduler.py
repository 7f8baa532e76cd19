"""The Remote server's one worker thread, shared fairly between connections.

Every connection's jobs (its batches, as :meth:`Session.steps` generators) run on one thread, so
a backend that isn't thread-safe (wgpu) serves them all. The thread runs one step (one record)
at a time and always takes the busy connection that has used the least worker time, as a fair
scheduler does: a client sending a long batch of heavy ops gets its share, and another client's
small read waits for at most the op in progress (each op is bounded by ``max_op_work``), not
for the whole batch. A connection that was idle starts level with the least-served busy one:
idle time is not saved up as credit.

>>> import asyncio
>>> def job(n):
...     for _ in range(n):
...         yield
...     return n
>>> async def main():
...     scheduler = Scheduler()
...     loop = asyncio.get_running_loop()
...     results = await asyncio.gather(scheduler.submit("a", job(3), loop),
...                                    scheduler.submit("b", job(1), loop))
...     scheduler.stop()
...     return results
>>> asyncio.run(main())
[3, 1]
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Generator, Hashable


class Scheduler:
    """Runs jobs (generators) a step at a time on one thread; see the module doc."""

    def __init__(self, name: str = "ember-remote-ops"):
        self._cond = threading.Condition()
        self._queues: dict[Hashable, collections.deque] = {}  # busy owner -> its jobs
        self._used: dict[Hashable, float] = {}  # owner -> worker seconds used
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, owner: Hashable, job: Generator, loop: asyncio.AbstractEventLoop
               ) -> asyncio.Future:
        """Queue ``job`` after ``owner``'s earlier jobs; the future gets its return value (or
        its exception) on ``loop``."""
        future = loop.create_future()
        with self._cond:
            if self._stopped:
                raise RuntimeError("the Remote server's worker has stopped")
            queue = self._queues.get(owner)
            if queue is None:
                queue = self._queues[owner] = collections.deque()
                floor = min((self._used[o] for o in self._queues if o != owner), default=0.0)
                self._used[owner] = max(self._used.get(owner, 0.0), floor)
            queue.append((job, future, loop))
            self._cond.notify()
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
        """Stop after the step in progress; queued jobs are cancelled."""
        with self._cond:
            self._stopped = True
            pending = [job for queue in self._queues.values() for job in queue]
            self._queues.clear()
            self._cond.notify()
        for _, future, loop in pending:
            _settle(loop, future, None, asyncio.CancelledError())

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queues and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                owner = min(self._queues, key=self._used.__getitem__)
                job, future, loop = self._queues[owner][0]
            start = time.perf_counter()
            done, result, error = True, None, None
            try:
                next(job)
                done = False
            except StopIteration as stop:
                result = stop.value
            except Exception as e:  # noqa: BLE001 - the job's error goes to its awaiter
                error = e
            with self._cond:
                self._used[owner] = self._used.get(owner, 0.0) + time.perf_counter() - start
                queue = self._queues.get(owner)
                if done and queue:
                    queue.popleft()
                    if not queue:
                        del self._queues[owner]
            if done:
                _settle(loop, future, result, error)


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
