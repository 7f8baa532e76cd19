"""The smallest MicroPython heap a model runs in, found by bisecting the heap size: on the unix
port (``-X heapsize``) or on an emulated board (``run_on_qemu(..., heap=)``, a ballast block
capping the firmware's 256 KB heap). What ``MemoryEstimate.heap_for(tier)`` is checked against
(tests/embedded/test_heap.py, test_board_heap.py) and what the benchmarks report."""

from __future__ import annotations

from ember.export import run_on_micropython


def runs_in(path, images, heap: int, *, tier: str, micropython: str | None = None,
            board: str | None = None) -> bool:
    """Whether ``path`` loads and runs ``images`` on ``tier`` in a heap of ``heap`` bytes, on
    the unix port (``micropython``: another binary) or on the emulated ``board`` (False when
    MicroPython runs out of memory; any other failure raises)."""
    try:
        if board is None:
            run_on_micropython(path, images, tier=tier, heapsize=str(heap),
                               micropython=micropython)
        else:
            from ember.export.qemu import run_on_qemu

            run_on_qemu(path, images, board=board, tier=tier, heap=heap)
    except RuntimeError as e:
        if "MemoryError" in str(e) or "the heap has" in str(e):
            return False
        raise
    return True


def min_heap(path, images, *, tier: str, micropython: str | None = None,
             board: str | None = None, lo: int = 8192, hi: int = 1 << 20,
             step: int = 1024) -> int:
    """The smallest heap (bytes, rounded up to ``step``) in which ``path`` runs ``images`` on
    ``tier`` (where :func:`runs_in` runs it): ``lo`` must fail and ``hi`` work (checked).
    A bisection finds a boundary: it relies on "runs" being monotonic in the heap size, which
    the loader's order (large buffers before the many small objects) gave in the scans of
    benchmarks/RESULTS.md, where a large block allocated late had failed in heaps a few KB
    larger than ones it fitted in."""
    def runs(heap: int) -> bool:
        return runs_in(path, images, heap, tier=tier, micropython=micropython, board=board)

    where = f"{tier} on {board}" if board else tier
    if runs(lo):
        raise ValueError(f"min_heap: {path} runs on {where} in {lo} bytes, the bracket's low "
                         f"end: the minimum is below it")
    if not runs(hi):
        raise ValueError(f"min_heap: {path} doesn't run on {where} in {hi} bytes, the "
                         f"bracket's high end: the minimum is above it")
    while hi - lo > step:
        mid = (lo + hi) // 2
        if runs(mid):
            hi = mid
        else:
            lo = mid
    return hi
