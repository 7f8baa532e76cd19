"""Philox4x32-10 vectorised with numpy: the same bits as ``ember.random.philox_uniform``."""

from __future__ import annotations

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def philox_uniform(shape: tuple[int, ...], seed: int, offset: int) -> np.ndarray:
    """float64 array of ``shape`` with numbers in [0, 1) from the stream ``(seed, offset)``."""
    n = int(np.prod(shape, dtype=np.int64))
    blocks = (n + 3) // 4
    counter = np.arange(offset, offset + blocks, dtype=np.uint64)
    c0, c1 = counter & _MASK, counter >> _SHIFT
    c2 = np.zeros(blocks, np.uint64)
    c3 = np.zeros(blocks, np.uint64)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> _SHIFT) ^ c1 ^ np.uint64(k0), p1 & _MASK,
                          (p0 >> _SHIFT) ^ c3 ^ np.uint64(k1), p0 & _MASK)
        k0 = (k0 + _W0) & 0xFFFFFFFF
        k1 = (k1 + _W1) & 0xFFFFFFFF
    words = np.stack([c0, c1, c2, c3], axis=1).reshape(-1)[:n]
    return ((words >> np.uint64(8)).astype(np.float64) * (1.0 / (1 << 24))).reshape(shape)
