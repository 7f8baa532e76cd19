"""The Remote server's scheduler (issue 33): on a thread-safe backend a small step of one
connection runs while another connection's large op is in progress, and large ops run one at
a time; on a backend that isn't thread-safe every step waits for the one in progress. The
work a session announces for each record comes from the op's shapes; ``ember serve`` gives
BLAS one core fewer than the machine has. Real Scheduler threads and Session; a step that
waits on an event stands for an op in progress."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

import pytest

from ember import Autodiff, Fusion, get_backend
from ember.remote import ServerLimits, protocol
from ember.remote.scheduler import LIGHT_WORK, Scheduler
from ember.remote.session import Session

HEAVY = LIGHT_WORK * 1000


def blocking_job(started: threading.Event, release: threading.Event, work: int):
    """One step of ``work`` that waits for ``release`` (an op in progress)."""
    yield work
    started.set()
    assert release.wait(30), "the test never released the op"
    return "done"


async def run_beside_op(threadsafe: bool, second_work: int) -> tuple[bool, list]:
    """Start a heavy op on owner "a", then submit a step of ``second_work`` for owner "b":
    whether b finished while a's op was still in progress, and both results."""
    scheduler = Scheduler(threadsafe=threadsafe)
    loop = asyncio.get_running_loop()
    started, release = threading.Event(), threading.Event()
    b_started, b_release = threading.Event(), threading.Event()
    try:
        a = scheduler.submit("a", blocking_job(started, release, HEAVY), loop)
        assert await loop.run_in_executor(None, started.wait, 30)
        b = scheduler.submit("b", blocking_job(b_started, b_release, second_work), loop)
        done, _ = await asyncio.wait([b], timeout=1.0)
        beside = b in done or b_started.is_set()
        release.set()
        b_release.set()
        return beside, await asyncio.gather(a, b)
    finally:
        release.set()
        b_release.set()
        scheduler.stop()

def test_a_small_step_runs_while_another_connections_large_op_is_in_progress():
    beside, results = asyncio.run(run_beside_op(threadsafe=True, second_work=10))
    assert beside, "the small step waited for the other connection's large op"
    assert results == ["done", "done"]


def test_large_ops_run_one_at_a_time():
    """The light thread never takes a large op: working memory stays one large op's."""
    beside, results = asyncio.run(run_beside_op(threadsafe=True, second_work=HEAVY))
    assert not beside
    assert results == ["done", "done"]


def test_one_thread_for_a_backend_that_is_not_thread_safe():
    beside, results = asyncio.run(run_beside_op(threadsafe=False, second_work=10))
    assert not beside
    assert results == ["done", "done"]


async def small_steps_beside_a_large_op(**kwargs) -> bool:
    """Owner "a" runs a large op and "b" a small step, both held in progress: whether a small
    step of "c" still runs."""
    scheduler = Scheduler(**kwargs)
    loop = asyncio.get_running_loop()
    events = [(threading.Event(), threading.Event()) for _ in range(3)]
    try:
        jobs = [scheduler.submit(o, blocking_job(*e, w), loop)
                for o, e, w in zip("ab", events, (HEAVY, 10))]
        for started, _ in events[:2]:
            assert await loop.run_in_executor(None, started.wait, 30)
        c = scheduler.submit("c", blocking_job(*events[2], 10), loop)
        ran = await loop.run_in_executor(None, events[2][0].wait, 1.0)
        for _, release in events:
            release.set()
        assert await asyncio.gather(*jobs, c) == ["done"] * 3
        return ran
    finally:
        for _, release in events:
            release.set()
        scheduler.stop()


def test_with_large_ops_apart_two_threads_serve_small_steps_while_one_runs():
    """The server's worker process runs the large ops (heavy_apart): as many threads serve
    small steps during a large op as when none runs."""
    assert asyncio.run(small_steps_beside_a_large_op(threadsafe=True, heavy_apart=True))
    assert not asyncio.run(small_steps_beside_a_large_op(threadsafe=True))


def test_only_backends_that_allow_it_run_ops_on_two_threads():
    numpy = get_backend("numpy")
    assert numpy.caps.threadsafe
    assert not Autodiff(numpy).caps.threadsafe  # one tape for every op
    assert not Fusion(numpy).caps.threadsafe  # one lazy graph for every op
    assert not get_backend("python").caps.threadsafe


def test_a_session_announces_each_records_work_from_its_shapes():
    s = Session(get_backend("numpy"), ServerLimits(max_op_work=40_000))
    frame = protocol.encode_batch([["put", 1, "float32", [64, 32], 0, 8192],
                                   ["put", 2, "float32", [32, 16], 8192, 2048],
                                   ["put", 5, "float32", [32, 64], 10240, 8192],
                                   ["op", "float_matmul", [3], [{"t": 1}, {"t": 2}]],
                                   ["op", "float_matmul", [4], [{"t": 1}, {"t": 5}]],
                                   ["read", 7, 3]], [bytes(8192 + 2048 + 8192)])
    steps = s.steps(frame)
    announced = [next(steps) for _ in range(6)]
    # bytes of each put; 64*16*32 multiply-adds; 0 for a matmul past max_op_work (it fails
    # its checks at once); the bytes of the tensor read
    assert announced == [8192, 2048, 8192, 64 * 16 * 32, 0, 64 * 16 * 4]
    with pytest.raises(StopIteration):
        next(steps)
    assert s.failed[4][0] == "LimitError"


def test_op_threads_reach_blas_after_numpy_has_loaded():
    pytest.importorskip("threadpoolctl")
    code = ("import numpy, threadpoolctl\n"
            "from ember.remote.threads import set_op_threads\n"
            "set_op_threads(1)\n"
            "print({i['num_threads'] for i in threadpoolctl.threadpool_info()"
            " if i['user_api'] == 'blas'})")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env=env).stdout
    assert out.strip() == "{1}"
