"""Reading wgpu tensors back: exact round trips of many sizes and dtypes, reads between
dispatches, large reads in chunks, and a staging buffer that stops growing.

The expected values are the numpy arrays that went up (uploads and reads share no code)."""

from __future__ import annotations

import ember
import pytest
from _wgpu import B, down, np, up
from ember.backends.wgpu.adapter import GpuAdapter

SIZES = [1, 2, 3, 4, 5, 63, 64, 65, 255, 256, 257, 1023, 4097, 65537]
DTYPES = ["float32", "int32", "int64", "bool", "int8", "uint8", "float16"]


def values(dtype: str, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -2**31), min(info.max, 2**31 - 1), n, dtype=dtype,
                            endpoint=True)
    return (rng.standard_normal(n) * 1000).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_reads_round_trip_exactly(dtype, n):
    if ember.dtype.as_dtype(dtype) not in B.caps.dtypes:
        pytest.skip(f"{dtype} not in caps")
    a = values(dtype, n, seed=n)
    got = down(up(a))
    assert got.dtype == a.dtype and got.shape == a.shape
    assert got.tobytes() == a.tobytes()


def test_reads_between_dispatches_see_every_step():
    one = up(np.ones(7, np.float32))
    x, want = up(np.zeros(7, np.float32)), np.zeros(7, np.float64)
    for step in range(1, 60):
        x = B.float_add(x, one)
        want += 1.0
        if step % 3:  # some steps read, some only dispatch: reads share the pending batch
            np.testing.assert_array_equal(down(x), want)
        y = B.float_mul(x, up(np.full(7, 2.0, np.float32)))
        np.testing.assert_array_equal(down(y), want * 2.0)


@pytest.mark.parametrize("dtype,n", [("float32", 25_001), ("uint8", 70_003), ("int64", 9_999)])
def test_large_reads_stream_in_chunks(monkeypatch, dtype, n):
    engine = B.rt.engine
    monkeypatch.setattr(engine, "chunk", 4096)
    calls = []
    into = engine.adapter.map_read_into
    monkeypatch.setattr(engine.adapter, "map_read_into",
                        lambda s, size, out: (calls.append(size), into(s, size, out)))
    a = values(dtype, n, seed=3)
    got = down(up(a))
    assert got.tobytes() == a.tobytes()
    nbytes = n * (4 if dtype == "int64" else a.itemsize)  # int64 is stored as int32
    assert len(calls) == -(-nbytes // 4096) and max(calls) <= 4096


@pytest.mark.parametrize("dtype,n", [("float32", 25_001), ("uint8", 70_003), ("int8", 8191)])
def test_large_uploads_go_in_chunks_behind_pending_work(monkeypatch, dtype, n):
    engine = B.rt.engine
    monkeypatch.setattr(engine, "chunk", 4096)
    x = up(np.arange(9, dtype=np.float32))
    y = B.float_add(x, x)  # recorded, not submitted: its meta words must survive the chunks
    before = engine.submits
    a = values(dtype, n, seed=4)
    z = up(a)
    assert engine.submits - before == -(-(n * a.itemsize // 4 * 4) // 4096) - 1
    np.testing.assert_array_equal(down(y), np.arange(9) * 2.0)
    assert down(z).tobytes() == a.tobytes()


def test_a_read_past_the_default_chunk_is_exact():
    n = (B.rt.engine.chunk // 4) + 12_345
    a = values("float32", n, seed=5)
    assert down(up(a)).tobytes() == a.tobytes()


def test_staging_buffer_stops_growing(monkeypatch):
    engine, adapter = B.rt.engine, B.rt.adapter
    tensors = [up(values("float32", n, seed=n)) for n in (1, 17, 300, 5000)]
    for t in tensors:
        down(t)
    created = []
    make = adapter.create_buffer
    monkeypatch.setattr(adapter, "create_buffer",
                        lambda size, kind: (created.append(kind), make(size, kind))[1])
    before = engine.staging_bytes
    for i in range(1000):
        down(tensors[i % len(tensors)])
    assert engine.staging_bytes == before
    assert "staging" not in created


def test_the_portable_map_read_into_matches():
    """The interface's default map_read_into (the browser adapter uses it) reads the same
    bytes as the native one."""
    a = values("int32", 1001, seed=9)
    block = up(a).block
    engine, adapter = B.rt.engine, B.rt.adapter
    staging = engine._staging_for(4004)
    adapter.copy(block.buffer, 0, staging, 0, 4004)
    adapter.submit()
    out = bytearray(4003)
    GpuAdapter.map_read_into(adapter, staging, 4004, memoryview(out))
    assert bytes(out) == a.tobytes()[:4003]
