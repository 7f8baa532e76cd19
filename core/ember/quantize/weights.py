"""Weight codes from float weights (numpy, at quantization time): int8 per output channel,
int8/int4 per block, and the int4 nibble packing.

Codes are symmetric (zero point 0), rounded half away from zero: int8 in -127..127, int4 in
-7..7 (stored as ``code + 8`` in a nibble, low nibble first).

>>> import numpy as np
>>> codes, scale = per_channel(np.array([[0.5, -1.0], [2.0, 0.0]]))
>>> codes.tolist(), scale.tolist()
([[64, -127], [127, 0]], [0.007874015718698502, 0.015748031437397003])
>>> unpack_int4(pack_int4(np.array([-7, 0, 7], dtype=np.int8)), 3).tolist()
[-7, 0, 7]
"""

from __future__ import annotations


def _round(v):
    import numpy as np

    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def per_channel(w):
    """``(codes int8 of w's shape, scale float32 (C_out,))``: one scale per output channel
    (dim 0), ``max |w| / 127`` (1 for an all-zero channel)."""
    import numpy as np

    w = np.asarray(w, dtype=np.float64)
    amax = np.abs(w.reshape(len(w), -1)).max(axis=1)
    scale = np.where(amax > 0, amax / 127, 1.0).astype(np.float32)
    view = scale.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
    codes = np.clip(_round(w / view), -127, 127).astype(np.int8)
    return codes, scale


def per_block(w, bits: int, block: int):
    """``(codes int8 (C_out, K), scale float32 (C_out, ceil(K / block)))`` for ``w``
    flattened to (C_out, K): one scale per ``block`` consecutive weights of a channel."""
    import numpy as np

    w = np.asarray(w, dtype=np.float64).reshape(len(w), -1)
    top = 127 if bits == 8 else 7
    n, k = w.shape
    nb = -(-k // block)
    padded = np.zeros((n, nb * block))
    padded[:, :k] = w
    amax = np.abs(padded.reshape(n, nb, block)).max(axis=2)
    scale = np.where(amax > 0, amax / top, 1.0).astype(np.float32)
    full = np.repeat(scale.astype(np.float64), block, axis=1)[:, :k]
    codes = np.clip(_round(w / full), -top, top).astype(np.int8)
    return codes, scale


def pack_int4(codes):
    """int4 codes (any shape, -7..7) → uint8, two per byte (low nibble first)."""
    import numpy as np

    flat = (np.asarray(codes, dtype=np.int16).ravel() + 8).astype(np.uint8)
    if flat.size % 2:
        flat = np.append(flat, np.uint8(8))
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


def unpack_int4(packed, n: int):
    """The first ``n`` int4 codes of ``packed`` as int8 (numpy; the layers unpack with
    tensor ops, on their backend)."""
    import numpy as np

    p = np.asarray(packed, dtype=np.uint8)
    both = np.stack([p & 15, p >> 4], axis=1).ravel()[:n]
    return (both.astype(np.int16) - 8).astype(np.int8)
