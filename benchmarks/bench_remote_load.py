"""``ember serve`` under attack: honest clients' read latency beside hostile clients, and the
server's memory (issue 33). Everything on 127.0.0.1, every loop bounded.

    python benchmarks/bench_remote_load.py [--honest 50] [--hostile 50] [--rounds 20]
                                           [--repeat 3] [--max-op-work N] [--op-threads N]

The server runs in a process of its own (numpy backend, the given ServerLimits, BLAS threads
as ``ember serve`` sets them). Honest clients each do ``rounds`` times: upload a 32×32 tensor,
an op chain, a read (the latency measured), alone and beside the hostile ones, ``repeat``
times alternating, the latencies of each kind pooled. Hostile clients, split three ways, for
as long as the honest ones run: connections that never send a hello (a flood), oversized
frames before authentication, and authenticated clients sending the heaviest ops the limits
allow plus ops past them (conv whose intermediates pass ``max_op_bytes``). They run in a
process of their own (``--attack URL``), as attackers are not inside the honest clients'
process: the honest clients' latency is then the server's, not that of a client process
shared with 50 hostile threads. Reported: honest p50/p99 unloaded and loaded, their ratio,
the server's peak RSS (VmHWM) and its worker process's for large ops, and what the hostile
clients got.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
from _common import row, write_record

from ember.remote.threads import available_cores, default_op_threads

TOKEN = "load-test-token"
SERVER = """
import json, sys
from ember.remote import Server, ServerLimits
from ember.remote.threads import default_op_threads, set_op_threads
set_op_threads(int(sys.argv[3]) if len(sys.argv) > 3 else default_op_threads())  # as ember serve
server = Server("numpy", port=0, token=sys.argv[1], limits=ServerLimits(**json.loads(sys.argv[2])))
server.start()
print(server.url, flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
server.stop()
"""


def start_server(limits: dict, op_threads: int | None = None):
    extra = [] if op_threads is None else [str(op_threads)]
    proc = subprocess.Popen([sys.executable, "-c", SERVER, TOKEN, json.dumps(limits), *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def children_peak_rss_mb(pid: int) -> float:
    """The largest peak RSS among process ``pid``'s children (the server's worker for large
    ops), 0 when it has none."""
    peaks = [0.0]
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            peaks.append(peak_rss_mb(int(entry)))
    return max(peaks)


def honest(url: str, rounds: int, latencies: list, errors: list) -> None:
    import ember
    from ember.remote import Remote

    try:
        r = Remote(url, token=TOKEN, timeout=300)
        x = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
        want = (x @ x + 1).sum()
        for _ in range(rounds):
            start = time.perf_counter()
            t = ember.tensor(x, backend=r)
            got = ((t @ t) + 1).sum().item()
            latencies.append(time.perf_counter() - start)
            if abs(got - want) > 1e-3 * max(1.0, abs(want)):
                errors.append(f"wrong result {got} != {want}")
        r.close()
    except Exception as e:  # noqa: BLE001 - counted and reported
        errors.append(f"{type(e).__name__}: {e}")


def flood(url: str, stop: threading.Event, outcomes: dict) -> None:
    """Connections that never authenticate, one after another."""
    from websockets.sync.client import connect

    while not stop.is_set():
        try:
            with connect(url, open_timeout=10) as ws:
                ws.recv(30)
        except Exception as e:  # noqa: BLE001 - the server closing us is the point
            key = f"flood: {type(e).__name__} {getattr(getattr(e, 'rcvd', None), 'code', '')}"
            outcomes[key] = outcomes.get(key, 0) + 1


def oversized(url: str, stop: threading.Event, outcomes: dict) -> None:
    """A 16 MB first message instead of a hello."""
    from websockets.sync.client import connect

    blob = b"H" + bytes(16 << 20)
    while not stop.is_set():
        try:
            with connect(url, open_timeout=10, max_size=None) as ws:
                ws.send(blob)
                ws.recv(30)
        except Exception as e:  # noqa: BLE001 - counted
            key = f"oversized: {type(e).__name__} {getattr(getattr(e, 'rcvd', None), 'code', '')}"
            outcomes[key] = outcomes.get(key, 0) + 1


def heavy(url: str, stop: threading.Event, outcomes: dict, side: int,
          connected: threading.Semaphore) -> None:
    """Authenticated: the heaviest matmul max_op_work allows, and a conv past max_op_bytes."""
    import ember
    import ember.nn.functional as F
    from ember.remote import Remote

    try:
        r = Remote(url, token=TOKEN, timeout=600)
        connected.release()
        a = ember.ones(side, side, backend=r)
        x, w = ember.ones(1, 64, 128, 128, backend=r), ember.ones(1, 64, 31, 31, backend=r)
        while not stop.is_set():
            for what, fn in (("matmul", lambda: (a @ a).sum().item()),
                             ("conv", lambda: F.conv2d(x, w).sum().item())):
                try:
                    fn()
                    key = f"heavy {what}: ran"
                except Exception as e:  # noqa: BLE001 - LimitError expected for the conv
                    key = f"heavy {what}: {type(e).__name__}"
                outcomes[key] = outcomes.get(key, 0) + 1
        r.close()
    except Exception as e:  # noqa: BLE001
        outcomes[f"heavy: {type(e).__name__}"] = outcomes.get(f"heavy: {type(e).__name__}", 0) + 1


def attack(url: str, n: int, side: int) -> None:
    """``n`` hostile clients until stdin closes; then their outcomes as one JSON line. Says
    "attacking" once the heavy clients are connected and the others started."""
    import logging

    import ember.nn.functional  # noqa: F401 - imported once, before the threads race for it
    import ember.remote  # noqa: F401

    # a dropped connection makes the websockets client log an internal error; it is counted
    logging.getLogger("websockets").setLevel(logging.CRITICAL)

    stop, outcomes, connected = threading.Event(), {}, threading.Semaphore(0)
    kinds = [heavy, flood, oversized]
    hostile = []
    for i in range(n):
        kind = kinds[i % 3]
        extra = (side, connected) if kind is heavy else ()
        hostile.append(threading.Thread(target=kind, args=(url, stop, outcomes, *extra),
                                        daemon=True))
    for t in hostile:
        t.start()
    for t in hostile[::3]:
        connected.acquire(timeout=60)
    print("attacking", flush=True)
    sys.stdin.read()
    stop.set()
    for t in hostile:
        t.join(120)
    print(json.dumps(outcomes), flush=True)


def run_honest(url: str, n: int, rounds: int) -> tuple[list, list]:
    latencies, errors = [], []
    threads = [threading.Thread(target=honest, args=(url, rounds, latencies, errors))
               for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    return latencies, errors


def run_attacked(url: str, args, side: int, outcomes: dict) -> tuple[list, list]:
    """The honest clients beside the hostile process; its outcomes added to ``outcomes``."""
    attacker = subprocess.Popen(
        [sys.executable, __file__, "--attack", url, "--hostile", str(args.hostile),
         "--side", str(side)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        attacker.stdout.readline()  # "attacking": the heavy clients connected
        time.sleep(2)  # the attack under way before the honest clients start
        latencies, errors = run_honest(url, args.honest, args.rounds)
    finally:
        attacker.stdin.close()
        for key, n in json.loads(attacker.stdout.readline() or "{}").items():
            outcomes[key] = outcomes.get(key, 0) + n
        attacker.wait(180)
    return latencies, errors


def pct(values: list, q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--honest", type=int, default=50)
    p.add_argument("--hostile", type=int, default=50)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3,
                   help="unloaded and attacked phases, alternating (figures pooled)")
    p.add_argument("--max-op-work", type=int, default=1 << 32)
    p.add_argument("--op-threads", type=int, help="the server's BLAS threads (default: as "
                   "ember serve, one fewer than the cores)")
    p.add_argument("--attack", metavar="URL", help=argparse.SUPPRESS)  # the hostile process
    p.add_argument("--side", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.attack:
        return attack(args.attack, args.hostile, args.side)
    # sessions for every authenticated client (honest + the heavy third of the hostile)
    limits = {"max_op_work": args.max_op_work, "max_op_bytes": 256 << 20,
              "max_sessions": args.honest + args.hostile}
    side = int(round(args.max_op_work ** (1 / 3)))  # the largest square matmul allowed
    while side ** 3 > args.max_op_work:
        side -= 1
    proc, url = start_server(limits, args.op_threads)
    base, base_errors, loaded, loaded_errors, outcomes = [], [], [], [], {}
    rss_worker = 0.0
    try:
        for k in range(args.repeat):  # alternating, so the machine's other load hits both
            latencies, errors = run_honest(url, args.honest, args.rounds)
            base += latencies
            base_errors += errors
            if k == 0:
                rss_unloaded = peak_rss_mb(proc.pid)
            latencies, errors = run_attacked(url, args, side, outcomes)
            loaded += latencies
            loaded_errors += errors
            rss_worker = max(rss_worker, children_peak_rss_mb(proc.pid))
        rss_loaded = peak_rss_mb(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(60)
    p50u, p99u, p50l, p99l = pct(base, 50), pct(base, 99), pct(loaded, 50), pct(loaded, 99)
    threads = args.op_threads or default_op_threads()
    print(f"server limits: {limits} (heavy matmul {side}x{side}x{side}); op threads {threads}")
    print(f"honest reads: {len(base)} unloaded, {len(loaded)} loaded; errors: "
          f"{len(base_errors)} / {len(loaded_errors)} {sorted(set(base_errors + loaded_errors))}")
    print("| honest p50 unloaded | p99 unloaded | p50 loaded | p99 loaded | p99 ratio | "
          "server peak RSS + its worker's |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {p50u * 1e3:.1f} ms | {p99u * 1e3:.1f} ms | {p50l * 1e3:.1f} ms | "
          f"{p99l * 1e3:.1f} ms | {p99l / p99u:.1f}x | {rss_loaded:.0f} + {rss_worker:.0f} MB "
          f"(unloaded {rss_unloaded:.0f} MB) |")
    print("hostile outcomes:", json.dumps(dict(sorted(outcomes.items()))))
    print(f"machine: {available_cores()} cores of {os.cpu_count()}; load "
          f"{os.getloadavg()[0]:.1f}")
    who = f"{args.honest} honest clients, {args.rounds} reads each, {args.repeat} times"
    peer = "the same reads, server not under attack"
    write_record([row("system", f"ember serve under {args.hostile} hostile clients: {who}, p50",
                      p50l * 1e3, p50u * 1e3, "ms", peer),
                  row("system", "the same, p99 read latency", p99l * 1e3, p99u * 1e3, "ms", peer,
                      note=f"server peak RSS {rss_loaded:.0f} MB + worker {rss_worker:.0f} MB, "
                      f"op threads {threads}")])


if __name__ == "__main__":
    main()
