"""The execution engine: records dispatches into command buffers and submits them as it goes.

A batch is submitted every ``submit_every`` dispatches (and at reads), so the GPU runs batch
n while Python records batch n+1; small enough batches keep the GPU busy early, large enough
ones keep the per-submit cost (an encoder, a queue write, a submit) out of the per-op cost.
Each dispatch's parameters (``meta`` words) go into one arena buffer, written with a single
queue write right before the batch is submitted; queue ordering makes it safe to reuse the
arena for the next batch. Staging buffers for reads are recycled by size.

:meth:`Engine.capture` records everything issued while it is active into a replayable
:class:`~.capture.Program` (see :mod:`.capture`).
"""

from __future__ import annotations

from ...errors import EmberError
from .allocator import Allocator, size_class
from .capture import Program, pack_words


class Engine:
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
        self._staging: dict[int, list] = {}
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
        """Upload into a fresh block (ordered before the next submitted batch)."""
        if len(data) % 4:
            data = data + bytes(4 - len(data) % 4)
        if data:
            self.adapter.write_buffer(block.buffer, 0, data)
            if self.recording is not None:
                self.recording.record_upload(block, data)

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

    def read(self, block, nbytes: int) -> bytes:
        """Wait for the pending work and read the first ``nbytes`` of a block."""
        if nbytes == 0:
            return b""
        size = -(-nbytes // 4) * 4
        cls = size_class(size)
        bucket = self._staging.setdefault(cls, [])
        staging = bucket.pop() if bucket else self.adapter.create_buffer(cls, "staging")
        try:
            self.adapter.copy(block.buffer, 0, staging, 0, size)
            self._dirty = True
            self.flush()
            return self.adapter.map_read(staging, size)[:nbytes]
        finally:
            bucket.append(staging)
