"""``heap_for(tier, romfs=True)`` against the smallest heap the model really runs in on the
emulated Cortex-M boards (``_heap.min_heap`` with ``board=``: ``run_on_qemu``'s ballast block
caps the firmware's 256 KB heap, see ember.export.qemu): the MNIST MLP in float32, int8 and
int4 weight-only, uint8 digits in, ember_micro's .mpy files in the board's ROMFS. Boards: the
an385 (Cortex-M3, soft float) and an386 (Cortex-M4F) on the native and pure tiers, the an386u
(Cortex-M4F with ulab) on the ulab tier. The estimate must lie between the measured minimum and
15 % above it: the bisection runs between heap_for / 1.15 (must fail: else heap_for is more than
15 % above the minimum) and heap_for (must run: else it is below), in 2 KB steps. The minima
don't depend on the checkout's path since the firmwares keep their heap at 0x20000000
(embedded/qemu/mps2_sram.ld; before, the pure-tier MLP's moved by 4 KB between checkouts).
QEMU is slow: one model per board and tier here; every kind, and the CNN's board figures, in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import pytest
from _heap import min_heap
from _models import seeded
from test_board import boards  # noqa: F401 - the emulated boards' fixture

KB = 1024
CASES = {  # (board, tier): the models it bisects (one kind each here, to keep `make test`
    # short; every kind on every board: benchmarks/RESULTS.md, 2026-12-07)
    ("an386", "native"): ("mlp_int4",),
    ("an386", "pure"): ("mlp_int8",),
    ("an385", "native"): ("mlp_int8",),
    ("an385", "pure"): ("mlp_f32",),
    ("an386u", "ulab"): ("mlp_f32",),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory, mnist):
    """{name: (path, export report)} for the seeded MNIST MLP, f32 / int8 / int4."""
    from ember.demos.mnist_embedded import export_mnist, mnist_mlp

    (tx, _), _ = mnist
    folder = tmp_path_factory.mktemp("board_heap")
    model = seeded(mnist_mlp(), seed=4)
    out = {}
    for kind in ("f32", "int8", "int4"):
        path = folder / f"mlp_{kind}.emb"
        out[f"mlp_{kind}"] = path, export_mnist(model, path, kind, tx)
    return out


@pytest.mark.parametrize(("board", "tier"), list(CASES), ids=[f"{b}-{t}" for b, t in CASES])
def test_heap_for_on_the_board_is_within_15_percent_above_the_measured_minimum(
        request, boards, mnist, models, board, tier):  # noqa: F811 - the fixture imported above
    if board == "an386u":
        request.getfixturevalue("ulab")  # skips, naming ../shared/ulab, where it is absent
        boards.firmware("an386u")
    (_, _), (vx, _) = mnist
    for name in CASES[board, tier]:
        path, report = models[name]
        want = report.memory.heap_for(tier, romfs=True)
        # min_heap raises, naming the bound, when heap_for / 1.15 runs (heap_for is more than
        # 15 % above the minimum) or heap_for doesn't (below it)
        got = min_heap(path, vx[:1], tier=tier, board=board, lo=int(want / 1.15), hi=want,
                       step=2 * KB)
        print(f"\n{board} {tier} {name}: smallest heap {got / KB:.1f} KB, heap_for "
              f"{want / KB:.1f} KB ({want / got:.2f}x)")
        assert want / 1.15 < got <= want, (name, got, want)
