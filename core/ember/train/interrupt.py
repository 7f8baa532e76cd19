"""Graceful Ctrl-C: the first SIGINT asks the loop to stop after the current step (it then
writes a checkpoint atomically); a second one stops at once. Checkpoint writes are atomic, so
neither can leave a torn file."""

from __future__ import annotations

import signal
import threading


class GracefulInterrupt:
    def __init__(self):
        self.requested = False
        self._previous = None

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nstopping after this step (Ctrl-C again to stop at once)", flush=True)

    def __enter__(self) -> GracefulInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
