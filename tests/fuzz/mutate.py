"""The mutation engine: generic byte-level mutations stacked with a format's structure-aware ones.

:class:`Mutator` draws a seed, applies one to a few mutations (byte and bit flips, truncation,
splices with another seed, interesting integers written where integers seem to live, chunk
deletion/duplication, and the format's own structured edits), then usually repairs the
format's checksum so the mutation reaches the code behind the checksum test. Everything comes
from one ``random.Random``: a run is reproducible from its seed.
"""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Callable, Sequence

Mutation = Callable[[bytes, random.Random], bytes]

#: values that break size arithmetic: zero, signs, powers of two at every width's edge
INTERESTING = [0, 1, -1, 2, 7, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 2**31 - 1, 2**31,
               2**32 - 1, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 1, -(2**31), -(2**63)]
#: the same as text, for JSON and other textual numbers (plus what a JSON parser chokes on)
INTERESTING_TEXT = [str(v) for v in INTERESTING] + [
    "1e400", "-0", "1.5", "NaN", "Infinity", "9" * 5000, "-" + "9" * 400, "0x10", "1_000"]
#: the most bytes a mutated input may grow to
MAX_INPUT = 1 << 20
_DIGITS = re.compile(rb"-?\d+")


def _pack(value: int, width: int, order: str) -> bytes:
    return (value % (1 << (8 * width))).to_bytes(width, order)


def flip_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]


def flip_bit(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def delete_chunk(data: bytes, rng: random.Random) -> bytes:
    if len(data) < 2:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, min(64, len(data) - i)):]


def duplicate_chunk(data: bytes, rng: random.Random) -> bytes:
    """Repeat a slice once or many times (nesting and repeated-record bugs need many)."""
    if not data:
        return data
    i = rng.randrange(len(data))
    chunk = data[i:i + rng.randint(1, 32)]
    times = rng.choice([1, 2, 16, 1000])
    return data[:i] + chunk * times + data[i:]


def insert_random(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.randbytes(rng.randint(1, 16)) + data[i:]


def integer_positions(data: bytes, width: int) -> list[int]:
    """Aligned offsets whose little-endian value looks like a size, count or offset."""
    limit = max(len(data), 64) * 8
    return [i for i in range(0, len(data) - width + 1, width)
            if 0 < int.from_bytes(data[i:i + width], "little") <= limit]


def interesting_binary(data: bytes, rng: random.Random) -> bytes:
    """Write an interesting integer where a binary integer probably is (else anywhere)."""
    width = rng.choice([1, 2, 4, 8])
    if len(data) < width:
        return data
    spots = integer_positions(data, width) if width > 1 else []
    i = rng.choice(spots) if spots and rng.random() < 0.7 else rng.randrange(len(data) - width + 1)
    order = "little" if rng.random() < 0.9 else "big"
    return data[:i] + _pack(rng.choice(INTERESTING), width, order) + data[i + width:]


def interesting_text(data: bytes, rng: random.Random) -> bytes:
    """Replace a decimal number written as text with an interesting one."""
    spans = [m.span() for m in _DIGITS.finditer(data[:1 << 16])]
    if not spans:
        return data
    a, b = rng.choice(spans)
    return data[:a] + rng.choice(INTERESTING_TEXT).encode() + data[b:]


def splicer(seeds: Sequence[bytes]) -> Mutation:
    """Head of the input, tail of another seed: mixes valid structures of one format."""

    def splice(data: bytes, rng: random.Random) -> bytes:
        other = rng.choice(seeds)
        return data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1):]

    return splice


GENERIC: list[Mutation] = [flip_byte, flip_bit, truncate, delete_chunk, duplicate_chunk,
                           insert_random, interesting_binary, interesting_text]


class Mutator:
    """Draws mutated inputs for one format.

    ``structured`` are the format's structure-aware mutations (chosen ``structured_rate`` of
    the time); ``fixup`` repairs the format's checksum/length fields and runs on ``fixup_rate``
    of the inputs (the rest test the checksum check itself).

    >>> m = Mutator({"a": b"hello 123"}, random.Random(1))
    >>> isinstance(m(), bytes)
    True
    """

    def __init__(self, seeds: dict[str, bytes], rng: random.Random,
                 structured: Sequence[Mutation] = (), fixup: Callable[[bytes], bytes] | None = None,
                 fixup_rate: float = 0.9, structured_rate: float = 0.5):
        if not seeds:
            raise ValueError("Mutator needs at least one seed")
        self.seeds = [seeds[k] for k in sorted(seeds)]
        self.rng, self.fixup, self.fixup_rate = rng, fixup, fixup_rate
        self.structured_rate = structured_rate
        self.generic = [*GENERIC, splicer(self.seeds)]
        self.structured = list(structured)

    def pick(self) -> Mutation:
        if self.structured and self.rng.random() < self.structured_rate:
            return self.rng.choice(self.structured)
        return self.rng.choice(self.generic)

    def __call__(self) -> bytes:
        rng = self.rng
        data = rng.choice(self.seeds)
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
            data = _guarded(self.pick(), data, rng)[:MAX_INPUT]
        if self.fixup is not None and rng.random() < self.fixup_rate:
            data = _guarded(lambda d, _rng: self.fixup(d), data, rng)
        return data[:MAX_INPUT]


def _guarded(mutation: Mutation, data: bytes, rng: random.Random) -> bytes:
    """A structured mutation meets inputs earlier mutations broke (deep JSON, bad pickles):
    when it can't parse them it leaves them as they are."""
    try:
        return mutation(data, rng)
    except Exception:  # noqa: BLE001 - any parse failure means "not this format any more"
        return data


def pack_int(fmt: str, value: int) -> bytes:
    """``struct.pack`` of ``value`` wrapped into the field's range (a hostile writer's view)."""
    size = struct.calcsize(fmt)
    signed = fmt[-1].islower()
    value %= 1 << (8 * size)
    if signed and value >= 1 << (8 * size - 1):
        value -= 1 << (8 * size)
    return struct.pack(fmt, value)
