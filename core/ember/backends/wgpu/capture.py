"""Dispatch capture: record what the engine issues once, replay it with one submit.

``engine.capture()`` returns a :class:`Program`; inside its ``with`` block every dispatch
(pipeline, meta words, bound blocks, workgroups), block copy and upload still runs as usual and
is also recorded. When the block ends the program is built, once:

- all meta words go into one arena buffer of the program's own, written now;
- all uploaded bytes go into one host buffer of its own, and each upload becomes a copy from
  it at its place in the order (a queue write would land before the whole replay, ahead of
  earlier work that may still use a block the allocator recycled during the trace);
- every bind group is created now (``adapter.bind_group``);
- every block it touches is pinned (:meth:`Allocator.pin`): no one else gets it between
  replays. Blocks the allocator recycled during the trace stay valid because a replay keeps
  the recorded order.

:meth:`Program.replay` copies new input blocks over the traced ones, re-records the commands
(``adapter.compile_commands``: on wgpu-native, three C calls per dispatch and no other Python
per op) and copies the outputs into fresh blocks (results of two replays never alias). It all
goes out in one submit with the eager work around it: at once when the program fills a batch
(``engine.submit_every`` dispatches), else with the next batch or read, so a small program and
the read of its result share one submit. :meth:`Program.feed` turns a recorded upload into a
per-replay host value; :meth:`Program.patch` rewrites some meta words of one dispatch (the
seed and offset of a random kernel).

>>> from ember.backends.wgpu.launch import map_op          # doctest: +SKIP
>>> rt = ember.get_backend("wgpu").rt                      # doctest: +SKIP
>>> with rt.engine.capture() as program:                   # doctest: +SKIP
...     y = map_op(rt, [x], x.dtype, "x0 * 2.0")
...     program.inputs, program.outputs = [x.block], [y.block]
>>> (block,) = program.replay([x2.block])   # 2 * x2, one submit   # doctest: +SKIP
"""

from __future__ import annotations

from array import array
from sys import byteorder

from ...errors import EmberError

_BIG_ENDIAN = byteorder != "little"


def pack_words(meta) -> array:
    """Meta words as the little-endian 32-bit array a kernel reads (words above 2**31, seeds
    and bit patterns, wrap)."""
    try:
        words = array("i", meta or (0,))
    except OverflowError:
        words = array("I", [w & 0xFFFFFFFF for w in meta])
    if _BIG_ENDIAN:
        words.byteswap()
    return words


class Program:
    """A recorded sequence of engine work; built when its ``with engine.capture()`` ends.

    ``inputs`` and ``outputs`` (allocator blocks) may be set inside the ``with`` block: a
    replay copies its new input blocks over ``inputs`` first and returns fresh copies of
    ``outputs``. ``dispatches`` counts the recorded dispatches.
    """

    def __init__(self, engine):
        self.engine = engine
        self.inputs: list = []
        self.outputs: list = []
        self.dispatches = 0
        self._ops: list[tuple] = []  # ("d", pipeline, words, blocks, groups) | ("c", ...) | ("u", ...)
        self._feeds: list[int] = []  # index in _ops of each fed upload
        self._built = False
        self._pinned: list = []
        self._arena = self._host = self._record = None
        self._replayed_at = -1  # engine.submits right after the latest replay

    # ------------------------------------------------------------------ recording
    def __enter__(self) -> Program:
        self.engine.recording = self
        return self

    def __exit__(self, kind, value, tb) -> bool:
        self.engine.recording = None
        if kind is None:
            self._build()
        return False

    def record_dispatch(self, pipeline, words, blocks, groups) -> None:
        self._ops.append(("d", pipeline, words.tobytes(), list(blocks), tuple(groups)))
        self.dispatches += 1

    def record_copy(self, src, dst, size: int) -> None:
        self._ops.append(("c", src, dst, size))

    def record_upload(self, block, data: bytes) -> None:
        self._ops.append(("u", block, bytes(data)))

    def feed(self, block) -> int:
        """Make the latest recorded upload into ``block`` a feed: :meth:`write_feed` replaces
        its bytes before a replay. Returns the feed's number."""
        self._check_recording("feed")
        for i in range(len(self._ops) - 1, -1, -1):
            op = self._ops[i]
            if op[0] == "u" and op[1] is block:
                self._feeds.append(i)
                return len(self._feeds) - 1
        raise EmberError("wgpu capture: feed(block): nothing was uploaded into this block "
                         "during the capture; upload the host value inside the `with` block")

    def words(self, dispatch: int) -> list[int]:
        """The meta words recorded for dispatch number ``dispatch`` (unsigned)."""
        raw = [op for op in self._ops if op[0] == "d"][dispatch][2]
        return [int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4)]

    def _check_recording(self, what: str) -> None:
        if self._built or self.engine.recording is not self:
            raise EmberError(f"wgpu capture: {what}() must be called inside the "
                             "`with engine.capture()` block")

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        engine, adapter = self.engine, self.engine.adapter
        align = engine.align
        meta, host = bytearray(), bytearray()
        self._dispatch_at: list[int] = []  # arena offset of each dispatch's words
        self._feed_at: list[tuple[int, int]] = []
        placed = []
        for op in self._ops:
            if op[0] == "d":
                offset = -(-len(meta) // align) * align
                meta.extend(bytes(offset - len(meta)))
                meta.extend(op[2])
                self._dispatch_at.append(offset)
                placed.append(offset)
            elif op[0] == "u":
                placed.append(len(host))
                host.extend(op[2])
            else:
                placed.append(0)
        self._arena = adapter.create_buffer(max(4, len(meta)), "storage") if meta else None
        if meta:
            adapter.write_buffer(self._arena, 0, bytes(meta))
        self._host = adapter.create_buffer(len(host), "storage") if host else None
        if host:
            adapter.write_buffer(self._host, 0, bytes(host))
        self._feed_at = [(placed[i], len(self._ops[i][2])) for i in self._feeds]

        commands, blocks = [], {}
        for op, at in zip(self._ops, placed):
            if op[0] == "d":
                _, pipeline, words, used, groups = op
                bindings = [(self._arena, at, len(words))]
                bindings += [(b.buffer, 0, b.size) for b in used]
                commands.append(("dispatch", pipeline, adapter.bind_group(pipeline, bindings),
                                 groups))
                blocks.update((id(b), b) for b in used)
            elif op[0] == "c":
                _, src, dst, size = op
                commands.append(("copy", src.buffer, 0, dst.buffer, 0, size))
                blocks.update({id(src): src, id(dst): dst})
            else:
                _, dst, data = op
                commands.append(("copy", self._host, at, dst.buffer, 0, len(data)))
                blocks[id(dst)] = dst
        blocks.update((id(b), b) for b in [*self.inputs, *self.outputs])
        self._record = adapter.compile_commands(commands)
        self._pinned = list(blocks.values())
        engine.allocator.pin(self._pinned)
        self._ops = [op for op in self._ops if op[0] == "d"]  # words() still reads them
        self._built = True

    # ------------------------------------------------------------------ replaying
    def write_feed(self, feed: int, data: bytes) -> None:
        """Replace feed ``feed``'s bytes (same length as traced) for the following replays."""
        offset, size = self._feed_at[feed]
        self._submit_replay()
        if len(data) % 4:
            data = bytes(data) + bytes(4 - len(data) % 4)
        if len(data) != size:
            raise EmberError(f"wgpu capture: feed {feed} holds {size} bytes, got {len(data)}; "
                             "a feed keeps the shape and dtype it was traced with")
        self.engine.adapter.write_buffer(self._host, offset, bytes(data))

    def patch(self, dispatch: int, start: int, words: list[int]) -> None:
        """Rewrite meta words ``start...`` of dispatch number ``dispatch`` for the following
        replays (queue writes land before the next submit, after the previous replays)."""
        packed = pack_words(words).tobytes()
        self._submit_replay()
        self.engine.adapter.write_buffer(self._arena, self._dispatch_at[dispatch] + 4 * start,
                                         packed)

    def replay(self, inputs=()) -> list:
        """Run the program again: ``inputs`` (blocks, one per ``self.inputs``, or none to keep
        the traced contents) are copied in first; returns fresh blocks holding ``outputs``
        (the caller owns them: wrap them in a Storage)."""
        if not self._built:
            raise EmberError("wgpu capture: replay() needs the `with engine.capture()` block "
                             "to have ended")
        if inputs and len(inputs) != len(self.inputs):
            raise EmberError(f"wgpu capture: replay() takes {len(self.inputs)} input blocks, "
                             f"got {len(inputs)}")
        engine = self.engine
        adapter = engine.adapter
        for src, dst in zip(inputs, self.inputs):
            if src.buffer is not dst.buffer:
                adapter.copy(src.buffer, 0, dst.buffer, 0, min(src.size, dst.size))
        self._record()
        fresh: dict[int, object] = {}
        outs = []
        for block in self.outputs:
            out = fresh.get(id(block))
            if out is None:
                out = fresh[id(block)] = engine.allocator.alloc(block.size, "replay")
                adapter.copy(block.buffer, 0, out.buffer, 0, block.size)
            outs.append(out)
        engine.recorded(self.dispatches)
        self._replayed_at = engine.submits
        return outs

    def _submit_replay(self) -> None:
        """Submit a replay still in the open command buffer: a queue write (a feed, a patch)
        or a destroyed buffer must not reach it."""
        if self._replayed_at == self.engine.submits:
            self.engine.flush()

    def close(self) -> None:
        """Unpin the blocks and destroy the program's buffers now."""
        self._submit_replay()
        arena, host = self._arena, self._host
        self._release()
        for buffer in (arena, host):
            if buffer is not None:
                self.engine.adapter.destroy_buffer(buffer)

    def _release(self) -> None:
        if self._pinned:
            self.engine.allocator.unpin(self._pinned)
            self._pinned = []
        self._arena = self._host = self._record = None

    def __del__(self):
        # no submit and no destroy here (a collection can happen anywhere, even inside the
        # engine): dropped handles are freed once no recorded command uses them
        try:
            self._release()
        except Exception:  # noqa: BLE001, S110 - at interpreter shutdown the device may be gone
            pass
