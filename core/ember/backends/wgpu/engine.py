"""The execution engine: records dispatches into command buffers and submits them as it goes.

A batch is submitted every ``submit_every`` dispatches (and at reads), so the GPU runs batch
n while Python records batch n+1; small enough batches keep the GPU busy early, large enough
ones keep the per-submit cost (an encoder, a queue write, a submit) out of the per-op cost.
Each dispatch's parameters (``meta`` words) go into one arena buffer, written with a single
queue write right before the batch is submitted; queue ordering makes it safe to reuse the
arena for the next batch. Reads go through a persistent staging buffer; large ones in
chunks through two, so the GPU's copy of one chunk overlaps the host's copy of the previous.

:meth:`Engine.capture` records everything issued while it is active into a replayable
:class:`~.capture.Program` (see :mod:`.capture`).
"""

from __future__ import annotations

from ...errors import EmberError
from .allocator import Allocator
from .capture import Program, pack_words


class Engine:
    chunk = 16 << 20  # bytes a transfer moves at a time (a power of two)

    def __init__(self, adapter, allocator: Allocator, arena_size: int = 1 << 18,
                 submit_every: int = 32):
        self.adapter = adapter
        self.allocator = allocator
        self.arena_size = arena_size
        self.submit_every = submit_every
        self.align = max(4, adapter.info.offset_alignment)
        self._arena = adapter.create_buffer(arena_size, "storage")
        self._meta = bytearray()
        self._pending = 0
        self._dirty = False
        self._staging = [None, None]  # see _staging_for
        self._staging_sizes = [0, 0]
        self.dispatches = 0  # totals, for tests and benchmarks
        self.submits = 0
        self.recording = None  # the capture.Program that engine.capture() is building

    def dispatch(self, pipeline, meta: list[int], buffers: list, groups: tuple[int, int, int]):
        """Record one dispatch; ``buffers`` are allocator blocks bound after the meta words."""
        words = pack_words(meta)
        arena = self._meta
        offset = -(-len(arena) // self.align) * self.align
        size = len(words) * 4
        if offset + size > self.arena_size:
            self.flush()
            offset = 0
        elif offset > len(arena):
            arena.extend(bytes(offset - len(arena)))
        arena.extend(words)
        bindings = [(self._arena, offset, size)]
        bindings += [(b.buffer, 0, b.size) for b in buffers]
        self.adapter.dispatch(pipeline, bindings, groups)
        self._dirty = True
        self.allocator.hold = True
        self.dispatches += 1
        if self.recording is not None:
            self.recording.record_dispatch(pipeline, words, buffers, groups)
        self._pending += 1
        if self._pending >= self.submit_every:
            self.flush()

    def copy(self, src, dst, size: int) -> None:
        """Record a copy of the first ``size`` bytes of block ``src`` into block ``dst``."""
        self.adapter.copy(src.buffer, 0, dst.buffer, 0, size)
        self._dirty = True
        self.allocator.hold = True
        if self.recording is not None:
            self.recording.record_copy(src, dst, size)

    def recorded(self, dispatches: int) -> None:
        """Count work a caller recorded into the adapter directly (a replayed program): it
        leaves with the next submit, at once when it fills a batch. Blocks freed meanwhile
        are held, as for the engine's own dispatches."""
        self._dirty = True
        self.allocator.hold = True
        self.dispatches += dispatches
        self._pending += dispatches
        if self._pending >= self.submit_every:
            self.flush()

    def flush(self) -> None:
        """Submit everything recorded so far (nothing when nothing was)."""
        if self._dirty:
            self.submit()

    def submit(self) -> None:
        """Submit the open command buffer."""
        if self._meta:
            self.adapter.write_buffer(self._arena, 0, bytes(self._meta))
        self.adapter.submit()
        self._meta.clear()
        self._pending = 0
        self._dirty = False
        self.submits += 1
        self.allocator.release_held()

    def write(self, block, data: bytes) -> None:
        """Upload into a fresh block (ordered before the next submitted batch).

        Beyond :attr:`chunk` bytes the upload goes in chunks with a submit after each: the
        driver copies every queue write into a staging buffer that lives until its submit has
        run, so one big write would hold a second copy of the whole upload."""
        view = memoryview(data).cast("B")
        n = len(view)
        whole = n // 4 * 4
        for start in range(0, whole, self.chunk):
            if start:
                self.submit()
            self.adapter.write_buffer(block.buffer, start, view[start:min(start + self.chunk,
                                                                          whole)])
        if whole < n:  # queue writes move whole words: pad the tail, not a copy of it all
            self.adapter.write_buffer(block.buffer, whole,
                                      bytes(view[whole:]) + bytes(4 - n % 4))
        if n and self.recording is not None:  # a program replays whole words
            self.recording.record_upload(block, bytes(view) + bytes(-n % 4))

    def capture(self):
        """Record the dispatches, copies and uploads issued until the ``with`` block ends into
        a :class:`~.capture.Program` (they still run now, as usual)::

            with engine.capture() as program:
                y = launch.map_op(rt, [x], x.dtype, "x0 * 2.0")
            program.replay()   # the same work again, in one submit
        """
        if self.recording is not None:
            raise EmberError("wgpu: engine.capture() is already active; captures don't nest "
                             "(finish the outer `with engine.capture()` block first)")
        return Program(self)

    def read(self, block, nbytes: int) -> bytes | bytearray:
        """Wait for the pending work and read the first ``nbytes`` of a block.

        The copy into the staging buffer joins the pending batch, so a read costs one submit.
        Reads beyond :attr:`chunk` come back as a ``bytearray`` filled chunk by chunk
        (:meth:`read_into`), so host memory holds the result and one chunk, not twice the
        result."""
        if nbytes == 0:
            return b""
        if nbytes > self.chunk:
            out = bytearray(nbytes)
            self.read_into(block, memoryview(out))
            return out
        size = -(-nbytes // 4) * 4
        staging = self._staging_for(size)
        self.adapter.copy(block.buffer, 0, staging, 0, size)
        self._dirty = True
        self.flush()
        data = self.adapter.map_read(staging, size)
        return data if size == nbytes else data[:nbytes]

    def read_into(self, block, out: memoryview) -> None:
        """Read a block's first ``len(out)`` bytes into ``out``, :attr:`chunk` bytes at a
        time through two staging buffers: the GPU copies chunk k + 1 into one while the host
        copies chunk k out of the other."""
        chunk, n = self.chunk, len(out)

        def issue(start: int):
            size = -(-min(chunk, n - start) // 4) * 4
            staging = self._staging_for(size, start // chunk % 2)
            self.adapter.copy(block.buffer, start, staging, 0, size)
            self._dirty = True
            self.flush()
            return staging, size

        pending = issue(0)
        for start in range(0, n, chunk):
            staging, size = pending
            if start + chunk < n:
                pending = issue(start + chunk)
            self.adapter.map_read_into(staging, size, out[start:start + chunk])

    @property
    def staging_bytes(self) -> int:
        """Bytes of staging buffers the engine holds (they only grow, up to 2 chunks)."""
        return sum(self._staging_sizes)

    def _staging_for(self, size: int, slot: int = 0):
        """Staging buffer ``slot`` (0 or 1; 1 serves chunked reads only), grown by powers of
        two, up to :attr:`chunk`, to hold ``size`` bytes: reads don't create buffers once the
        buffers have reached the size they need."""
        if size > self._staging_sizes[slot]:
            if self._staging[slot] is not None:
                self.adapter.destroy_buffer(self._staging[slot])
            grown = min(max(256, 1 << (size - 1).bit_length()), self.chunk)
            self._staging[slot] = self.adapter.create_buffer(grown, "staging")
            self._staging_sizes[slot] = grown
        return self._staging[slot]
