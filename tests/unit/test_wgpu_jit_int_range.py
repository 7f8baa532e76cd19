"""int64 across ``ember.jit`` replays on the wgpu backend (Mesa lavapipe on CPU-only machines):
wgpu stores int64 in 32-bit words, and a replay runs no range check, so a value the replays
change (a counter updated in place, a new input) must give numpy's int64 result or raise
``DTypeError``, never come back wrapped. Expected values: numpy int64 arithmetic."""

from __future__ import annotations

import ember
import ember.jit
import pytest
from _wgpu import B, np
from ember import nn
from ember.autodiff import Autodiff
from ember.errors import DTypeError
from ember.fusion import Fusion
from ember.nn.loss import mse_loss
from ember.optim import SGD

TOP = 2**31 - 1  # the largest int64 that wgpu's 32-bit words hold


class _Counter(nn.Module):
    """A step counter buffer, updated in place by each call (``self.n = update(self.n)``);
    the call returns ``out(x, new n)``."""

    def __init__(self, start: int, update, out=lambda x, n: x * 2):
        super().__init__()
        self.update, self.out = update, out
        self.register_buffer("n", ember.tensor(np.array(start, np.int64), backend=B))

    def forward(self, x):
        self.n = self.update(self.n)
        return self.out(x, self.n)


def _count_until_refused(call, read, numpy_values):
    """Call ``call()`` once per numpy value: while it fits in int32 the state must read
    exactly that value, and the first that doesn't must raise DTypeError (the state left as
    it was)."""
    for want in numpy_values:
        if want > TOP:
            with pytest.raises(DTypeError, match="int32"):
                call()
            assert read() == numpy_values[numpy_values.index(want) - 1]
            return
        call()
        assert read() == want


@pytest.mark.parametrize("start", [TOP - 2, TOP - 8])
def test_a_jitted_int64_counter_near_2_31_counts_exactly_or_raises(start):
    m = _Counter(start, lambda n: n + 1)
    step = ember.jit(m)
    x = ember.ones(2, backend=B)
    want = list(np.arange(1, 10, dtype=np.int64) + np.int64(start))  # numpy's count
    _count_until_refused(lambda: step(x), lambda: m.n.tolist(), [int(v) for v in want])
    if start == TOP - 8:  # warm-up, trace, capture, then replays up to 2**31 - 1
        assert step.stats()["replays"] >= 6


def test_a_counter_updated_otherwise_than_by_a_constant_is_measured_and_refused():
    m = _Counter(2**25, lambda n: n * 2)
    step = ember.jit(m)
    x = ember.ones(2, backend=B)
    want = [int(v) for v in np.int64(2**25) * 2 ** np.arange(1, 8, dtype=np.int64)]
    _count_until_refused(lambda: step(x), lambda: m.n.tolist(), want)


def test_a_counter_the_widened_window_refuses_is_captured_under_its_exact_value():
    # n * n of the counter 46336 + k: a window of 4096 more steps would leave int32, the
    # counter's own value does not until 46341**2
    m = _Counter(46_336, lambda n: n + 1, out=lambda x, n: n * n)
    step = ember.jit(m)
    x = ember.ones(2, backend=B)
    for n in range(46_337, 46_342):
        want = np.int64(n) * np.int64(n)
        if want > TOP:
            with pytest.raises(DTypeError, match="int_mul"):
                step(x)
            assert m.n.tolist() == n - 1
        else:
            assert step(x).tolist() == int(want) and m.n.tolist() == n


def test_counting_replays_reads_nothing(monkeypatch):
    m = _Counter(0, lambda n: n + 1)
    step = ember.jit(m)
    x = ember.ones(2, backend=B)
    for _ in range(3):  # warm-up, trace, capture (which measures the counter once)
        step(x)
    reads = []
    read = B.rt.engine.read
    monkeypatch.setattr(B.rt.engine, "read", lambda *a: reads.append(a) or read(*a))
    for _ in range(5):
        step(x)
    monkeypatch.undo()
    assert reads == [] and m.n.tolist() == 8


def test_batchnorm_num_batches_tracked_in_a_jitted_training_step():
    b = Autodiff(Fusion(B))
    rng = np.random.default_rng(0)
    with ember.use_backend(b):
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    bn = model[1]
    start = TOP - 8
    bn.num_batches_tracked = ember.tensor(np.array(start, np.int64), backend=b)
    opt = SGD(model.parameters(), lr=0.01)
    x = ember.tensor(rng.standard_normal((8, 3)).astype(np.float32), backend=b)
    y = ember.tensor(rng.standard_normal((8, 4)).astype(np.float32), backend=b)

    @ember.jit
    def train_step(x, y):
        loss = mse_loss(model(x), y)
        opt.step(loss.backward())
        return loss

    want = [int(v) for v in np.arange(1, 10, dtype=np.int64) + np.int64(start)]
    _count_until_refused(lambda: train_step(x, y), lambda: bn.num_batches_tracked.tolist(), want)
    assert train_step.stats()["replays"] >= 6


def test_an_int64_input_within_its_captured_envelope_is_not_wrapped():
    square = ember.jit(lambda x: x * x)
    for v in (40_000, 40_000, 40_000, 46_340, 50_000):  # the capture saw 40000 (< 2**16)
        x = ember.tensor(np.array([v], np.int64), backend=B)
        want = np.int64(v) * np.int64(v)
        if want > TOP:
            with pytest.raises(DTypeError, match="int_mul"):
                square(x)
        else:
            assert square(x).tolist() == [int(want)]
