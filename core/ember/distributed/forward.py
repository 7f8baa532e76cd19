"""Reports from the Ray Train controller to the driver, live: a Ray Train callback (it runs in
the controller's process) puts each round of worker reports on a Ray queue; a thread on the
driver takes them off into the :class:`~ember.distributed.log.DriverLog`.

Imported only when Ray is used (it imports Ray at the top).
"""

from __future__ import annotations

import threading

from ray.train import UserCallback
from ray.util.queue import Empty, Queue


class ReportForwarder:
    """``with forwarder: trainer.fit()`` — the driver thread runs for the duration."""

    def __init__(self, sink):
        self.sink = sink
        self.queue = Queue(actor_options={"num_cpus": 0})
        self.failures = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)

    def callback(self):
        return ForwardReports(self.queue)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self._take(block=False)  # what arrived after the thread's last look
        self.queue.shutdown()

    def _drain(self) -> None:
        while not self._done.is_set():
            self._take(block=True)

    def _take(self, block: bool) -> None:
        while True:
            try:
                kind, payload = self.queue.get(block=block, timeout=0.2) if block \
                    else self.queue.get_nowait()
            except Empty:
                return
            if kind == "report":
                self.sink(payload)
            else:
                self.failures += 1
            block = False


class ForwardReports(UserCallback):
    """Runs in the controller: each round of reports (one dict per worker), each failure."""

    def __init__(self, queue):
        self.queue = queue

    def after_report(self, run_context, metrics, checkpoint):
        self.queue.put(("report", metrics))

    def after_exception(self, run_context, worker_exceptions):
        self.queue.put(("failure", len(worker_exceptions)))
