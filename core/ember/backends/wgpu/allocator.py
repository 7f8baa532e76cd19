"""A caching buffer allocator: buffers are recycled through size-class buckets.

Size classes are multiples of 256 bytes in eighths of a power of two, so a freed buffer
serves any later request of the same class and waste stays under 12.5%. ``current`` counts
bytes handed out, ``cached`` bytes waiting in buckets, ``peak`` the highest ``current``.

While the engine has recorded but unsubmitted work, freed buffers are *held*: the pending
commands may still read them, and a queue write (an upload) into a recycled buffer would land
before them. Held buffers still serve kernel outputs of the same batch (dispatches in one
pass are ordered with barriers), just not uploads.
"""

from __future__ import annotations

from ...errors import UnsupportedOpError


class Block:
    __slots__ = ("buffer", "size")

    def __init__(self, buffer, size: int):
        self.buffer = buffer
        self.size = size


def size_class(nbytes: int) -> int:
    n = max(256, nbytes)
    top = 1 << (n - 1).bit_length()
    step = max(256, top // 8)
    return -(-n // step) * step


class Allocator:
    def __init__(self, adapter, max_cached: int = 2 << 30):
        self.adapter = adapter
        self.max_cached = max_cached
        self.current = 0
        self.peak = 0
        self.cached = 0
        self.created = 0  # buffers ever created (reuse shows as a flat count)
        self.hold = False
        self._held: dict[int, list[Block]] = {}
        self._free: dict[int, list[Block]] = {}
        # Every block stays reachable from here: a tensor dying in a garbage cycle (say, in an
        # exception's traceback) must not take its GPU buffer down with it while
        # Storage.__del__ hands the block back to a bucket.
        self._blocks: dict[int, Block] = {}
        self._pins: dict[int, int] = {}  # id(block) -> how many programs pin it
        self._parked: dict[int, Block] = {}  # pinned blocks no tensor owns

    def alloc(self, nbytes: int, op: str = "alloc", upload: bool = False) -> Block:
        """A block of at least ``nbytes``; ``upload`` blocks must not be reused from the
        pending batch (their queue write would land before the pending commands)."""
        limit = self.adapter.info.max_binding_size
        if nbytes > limit:
            raise UnsupportedOpError(
                f"{op}: a tensor of {nbytes} bytes exceeds this GPU's largest storage binding "
                f"({limit} bytes, {self.adapter.info.name}); split it into smaller tensors"
            )
        size = min(size_class(nbytes), max(limit // 4 * 4, 4))
        bucket = self._free.get(size)
        held = None if upload else self._held.get(size)
        if bucket:
            block = bucket.pop()
            self.cached -= size
        elif held:
            block = held.pop()
        else:
            block = Block(self.adapter.create_buffer(size, "storage"), size)
            self._blocks[id(block)] = block
            self.created += 1
        self.current += size
        self.peak = max(self.peak, self.current)
        return block

    def release(self, block: Block) -> None:
        self.current -= block.size
        if id(block) in self._pins:
            self._parked[id(block)] = block
            return
        self._recycle(block)

    def _recycle(self, block: Block) -> None:
        if self.hold:
            self._held.setdefault(block.size, []).append(block)
            return
        self._free.setdefault(block.size, []).append(block)
        self.cached += block.size
        if self.cached > self.max_cached:
            self.empty_cache()

    def release_held(self) -> None:
        """Called after a submit: held buffers become reusable."""
        self.hold = False
        held, self._held = self._held, {}
        for size, blocks in held.items():
            self._free.setdefault(size, []).extend(blocks)
            self.cached += size * len(blocks)

    def pin(self, blocks) -> None:
        """Keep ``blocks`` out of circulation until as many :meth:`unpin` calls."""
        for block in blocks:
            key = id(block)
            self._pins[key] = self._pins.get(key, 0) + 1
            if self._pins[key] > 1:
                continue
            for pool in (self._free, self._held):
                bucket = pool.get(block.size, [])
                if any(b is block for b in bucket):
                    bucket[:] = [b for b in bucket if b is not block]
                    self.cached -= block.size if pool is self._free else 0
                    self._parked[key] = block

    def unpin(self, blocks) -> None:
        """Undo one :meth:`pin`; a block no tensor owns any more goes back to the pool."""
        for block in blocks:
            key = id(block)
            self._pins[key] -= 1
            if self._pins[key] == 0:
                del self._pins[key]
                if key in self._parked:
                    self._recycle(self._parked.pop(key))

    def empty_cache(self) -> None:
        """Destroy every cached buffer (not the live ones)."""
        for bucket in self._free.values():
            for block in bucket:
                self._blocks.pop(id(block), None)
                self.adapter.destroy_buffer(block.buffer)
        self._free.clear()
        self.cached = 0

    def stats(self) -> dict[str, int]:
        return {"current": self.current, "peak": self.peak, "cached": self.cached,
                "reserved": self.current + self.cached
                + sum(size * len(b) for size, b in self._held.items())
                + sum(b.size for b in self._parked.values()),
                "pinned": sum(b.size for b in self._parked.values()),
                "created": self.created}
