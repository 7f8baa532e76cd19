"""How many threads one op may use on a Remote server (``ember serve --op-threads``).

A thread-safe backend's server runs small ops on a thread of their own beside a large one
(:mod:`~ember.remote.scheduler`); that thread and the event loop need a core that the large
op's BLAS threads do not take, or a small read waits behind them for the CPU instead of the
worker. So ``ember serve`` gives BLAS one core fewer than the process may use (at least one).
BLAS reads its thread count once, when numpy loads it: :func:`set_op_threads` sets the
variables it reads before that, and after it goes through ``threadpoolctl`` when installed.

>>> default_op_threads() == max(1, available_cores() - 1)
True
"""

from __future__ import annotations

import os
import sys

from ..errors import EmberError

#: the variables OpenBLAS, OpenMP and MKL read their thread count from when they load
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def default_op_threads() -> int:
    """One fewer than the cores this process may run on, at least one: a core for the network
    and small ops."""
    return max(1, available_cores() - 1)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one, as in a
    container or under ``taskset``), else the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def set_op_threads(n: int) -> None:
    """Let numpy's BLAS use ``n`` threads in this process.

    >>> set_op_threads(0)
    Traceback (most recent call last):
    ...
    ember.errors.EmberError: --op-threads 0: expected a whole number >= 1
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise EmberError(f"--op-threads {n!r}: expected a whole number >= 1")
    for name in BLAS_VARIABLES:
        os.environ[name] = str(n)
    if "numpy" not in sys.modules:
        return  # BLAS will read the variables when numpy loads it
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise EmberError("--op-threads: numpy is loaded already, so its BLAS has read its "
                         "thread count; set it before numpy loads (ember serve does) or "
                         "install threadpoolctl") from None
    threadpool_limits(limits=n, user_api="blas")
