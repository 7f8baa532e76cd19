"""The smallest MicroPython heap a model runs in, found by bisecting ``-X heapsize``: what
``MemoryEstimate.heap_for(tier)`` is checked against (tests/embedded/test_heap.py) and what
the benchmarks report."""

from __future__ import annotations

from ember.export import run_on_micropython


def runs_in(path, images, heap: int, *, tier: str, micropython: str | None = None) -> bool:
    """Whether ``path`` loads and runs ``images`` on ``tier`` in a heap of ``heap`` bytes
    (False when MicroPython runs out of memory; any other failure raises)."""
    try:
        run_on_micropython(path, images, tier=tier, heapsize=str(heap),
                           micropython=micropython)
    except RuntimeError as e:
        if "MemoryError" in str(e) or "the heap has" in str(e):
            return False
        raise
    return True


def min_heap(path, images, *, tier: str, micropython: str | None = None, lo: int = 8192,
             hi: int = 1 << 20, step: int = 1024) -> int:
    """The smallest heap (bytes, rounded up to ``step``) in which ``path`` runs ``images`` on
    ``tier``: ``lo`` must fail and ``hi`` work (checked). Fragmentation makes "runs" not quite
    monotonic in the heap size (a large block allocated late can fail in a heap a few KB larger
    than one it fits in), so the bisection finds a boundary, not always the last failing size."""
    if runs_in(path, images, lo, tier=tier, micropython=micropython):
        raise ValueError(f"min_heap: {path} runs on {tier} in {lo} bytes, the bracket's low "
                         f"end: the minimum is below it")
    if not runs_in(path, images, hi, tier=tier, micropython=micropython):
        raise ValueError(f"min_heap: {path} doesn't run on {tier} in {hi} bytes, the "
                         f"bracket's high end: the minimum is above it")
    while hi - lo > step:
        mid = (lo + hi) // 2
        if runs_in(path, images, mid, tier=tier, micropython=micropython):
            hi = mid
        else:
            lo = mid
    return hi
