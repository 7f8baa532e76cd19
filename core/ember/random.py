"""Reproducible random numbers: a counter-based Philox4x32-10 stream.

A generator is a ``(seed, offset)`` pair. Each draw of ``n`` numbers uses the counters
``offset .. offset + ceil(n / 4) - 1`` and advances the offset, so the same seed gives the same
tensors on every backend (backends may compute the stream natively, e.g. in numpy or WGSL, but
must produce these exact bits).

Number ``i`` of a draw is word ``i % 4`` of ``philox(counter=offset + i // 4, key=seed)``;
its top 24 bits scaled by 2**-24 give a float in [0, 1).

>>> import ember
>>> g = ember.Generator(seed=0)
>>> a = ember.rand(3, generator=g); b = ember.rand(3, generator=ember.Generator(seed=0))
>>> a.tolist() == b.tolist()
True
"""

from __future__ import annotations

import threading

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


def philox4x32(counter: int, seed: int) -> tuple[int, int, int, int]:
    """Philox4x32-10 of a 64-bit counter (high words zero) and a 64-bit key.

    The known-answer vector of Random123 (counter 0, key 0):

    >>> [hex(w) for w in philox4x32(0, 0)]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    c0, c1, c2, c3 = counter & _MASK, (counter >> 32) & _MASK, 0, 0
    k0, k1 = seed & _MASK, (seed >> 32) & _MASK
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c0, c1, c2, c3


def philox_uniform(n: int, seed: int, offset: int) -> list[float]:
    """``n`` floats in [0, 1) from the stream ``(seed, offset)``.

    The top 24 bits of each word, scaled: ``0x6627e8d5 >> 8`` is 6694888, / 2**24:

    >>> philox_uniform(2, seed=0, offset=0)[0] == 6694888 / 2**24
    True
    """
    out: list[float] = []
    scale = 1.0 / (1 << 24)
    for block in range((n + 3) // 4):
        for word in philox4x32(offset + block, seed):
            out.append((word >> 8) * scale)
    return out[:n]


class Generator:
    """A seedable random stream; pass ``generator=`` to any random function.

    >>> import ember
    >>> g = Generator(seed=42)
    >>> g.seed, g.take(5), g.get_state()
    (42, (42, 0), (42, 2))
    >>> first = ember.rand(2, generator=g).tolist()
    >>> g.set_state((42, 2)); ember.rand(2, generator=g).tolist() == first
    True
    >>> g.manual_seed(7).get_state()
    (7, 0)
    """

    def __init__(self, seed: int = 0):
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream at ``seed`` (offset 0); returns the generator."""
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"Generator: seed must be a non-negative int, got {seed!r}")
        self.seed = seed & ((1 << 64) - 1)
        self.offset = 0
        self._lock = threading.Lock()
        return self

    def take(self, n: int) -> tuple[int, int]:
        """Reserve the counters for ``n`` numbers; returns ``(seed, offset)`` to draw them."""
        with self._lock:
            offset = self.offset
            self.offset += (n + 3) // 4
        return self.seed, offset

    def get_state(self) -> tuple[int, int]:
        """``(seed, offset)``: where the next draw starts."""
        return self.seed, self.offset

    def set_state(self, state: tuple[int, int]) -> None:
        """Resume the stream at a ``(seed, offset)`` from :meth:`get_state`."""
        self.seed, self.offset = int(state[0]), int(state[1])


default_generator = Generator(0)


def seed(n: int) -> None:
    """Reseed the default generator (``ember.seed(0)`` makes a script reproducible).

    >>> import ember
    >>> ember.seed(0); a = ember.rand(2).tolist()
    >>> ember.seed(0); ember.rand(2).tolist() == a
    True
    """
    default_generator.manual_seed(n)
