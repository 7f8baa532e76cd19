"""The execution engine: records many dispatches per command buffer and submits only at sync
points (reads) or when a batch is full.

Each dispatch's parameters (``meta`` words) go into one arena buffer, written with a single
queue write right before the batch is submitted; queue ordering makes it safe to reuse the
arena for the next batch. Staging buffers for reads are recycled by size.
"""

from __future__ import annotations

from array import array
from sys import byteorder

from .allocator import Allocator, size_class

_BIG_ENDIAN = byteorder != "little"


class Engine:
    def __init__(self, adapter, allocator: Allocator, arena_size: int = 1 << 18,
                 max_batch: int = 512):
        self.adapter = adapter
        self.allocator = allocator
        self.arena_size = arena_size
        self.max_batch = max_batch
        self.align = max(4, adapter.info.offset_alignment)
        self._arena = adapter.create_buffer(arena_size, "storage")
        self._meta = bytearray()
        self._pending = 0
        self._dirty = False
        self._staging: dict[int, list] = {}
        self.dispatches = 0  # totals, for tests and benchmarks
        self.submits = 0

    def dispatch(self, pipeline, meta: list[int], buffers: list, groups: tuple[int, int, int]):
        """Record one dispatch; ``buffers`` are allocator blocks bound after the meta words."""
        try:
            words = array("i", meta or (0,))
        except OverflowError:  # words above 2**31 (seeds, bit patterns): wrap them
            words = array("I", [w & 0xFFFFFFFF for w in meta])
        if _BIG_ENDIAN:
            words.byteswap()
        arena = self._meta
        offset = -(-len(arena) // self.align) * self.align
        size = len(words) * 4
        if offset + size > self.arena_size or self._pending >= self.max_batch:
            self.flush()
            offset = 0
        elif offset > len(arena):
            arena.extend(bytes(offset - len(arena)))
        arena.extend(words)
        bindings = [(self._arena, offset, size)]
        bindings += [(b.buffer, 0, b.size) for b in buffers]
        self.adapter.dispatch(pipeline, bindings, groups)
        self._pending += 1
        self._dirty = True
        self.allocator.hold = True
        self.dispatches += 1

    def flush(self) -> None:
        """Submit everything recorded so far."""
        if not self._dirty:
            return
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
