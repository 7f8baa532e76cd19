"""Weight codes from float weights (numpy, at quantization time): int8 per output channel,
int8/int4 per block, and the int4 nibble packing.

Codes are symmetric (zero point 0), rounded by the contract's ``round_code``: int8 in -127..127, int4 in
-8..7 (stored as ``code + 8`` in a nibble, low nibble first). A block's scale is its
max |w| / top code (int4: codes -7..7), or with ``search`` the candidate that leaves the least
squared rounding error in the block: :data:`SEARCH`'s fractions of max |w| / top (clipping
the largest weight a little buys finer steps for all the others), and for int4 also of
``-w_max / 8``, ``w_max`` the block's weight of largest magnitude, which puts it on code -8
(a negative scale when it is positive): 16 levels, a step 7/8 as large, the spare nibble of
the symmetric codes used (as llama.cpp's Q4_0 does).

>>> import numpy as np
>>> codes, scale = per_channel(np.array([[0.5, -1.0], [2.0, 0.0]]))
>>> codes.tolist(), scale.tolist()
([[64, -127], [127, 0]], [0.007874015718698502, 0.015748031437397003])
>>> unpack_int4(pack_int4(np.array([-8, 0, 7], dtype=np.int8)), 3).tolist()
[-8, 0, 7]
"""

from __future__ import annotations

from ..contract.rounding import round_codes_np


def per_channel(w):
    """``(codes int8 of w's shape, scale float32 (C_out,))``: one scale per output channel
    (dim 0), ``max |w| / 127`` (1 for an all-zero channel)."""
    import numpy as np

    w = np.asarray(w, dtype=np.float64)
    amax = np.abs(w.reshape(len(w), -1)).max(axis=1)
    scale = np.where(amax > 0, amax / 127, 1.0).astype(np.float32)
    view = scale.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
    codes = round_codes_np(w / view, -127, 127).astype(np.int8)
    return codes, scale


#: the fractions of a block's max |w| tried as its largest code's value by the scale search
#: (1.00, 0.99, ..., 0.50: the first of equally good ones, max-abs itself on a tie)
SEARCH = tuple(1 - i / 100 for i in range(51))


def low_code(top: int) -> int:
    """The lowest code: int4 (``top`` 7) has -8, the nibble symmetric codes leave spare;
    int8 stays symmetric (-127, as the integer kernels expect)."""
    return -8 if top == 7 else -top


def _error(blocks, scale, top: int):
    """Squared rounding error of each block (..., block) at its scale (...)."""
    import numpy as np

    s = scale.astype(np.float64)[..., None]
    codes = round_codes_np(blocks / s, low_code(top), top)
    return ((codes * s - blocks) ** 2).sum(axis=-1)


def _candidates(blocks, top: int):
    """The scale search's candidate scales (float32, each the shape of ``blocks``' leading
    axes), in the order a tie is settled: max |w|·f / ``top``, then (int4) -w_max·f / 8."""
    import numpy as np

    amax = np.abs(blocks).max(axis=-1)
    for f in SEARCH:
        yield np.where(amax > 0, amax * f / top, 1.0).astype(np.float32)
    if top == 7:
        at = np.abs(blocks).argmax(axis=-1)[..., None]
        signed = np.take_along_axis(blocks, at, axis=-1)[..., 0]
        for f in SEARCH:
            yield np.where(amax > 0, -signed * f / 8, 1.0).astype(np.float32)


def block_scales(blocks, top: int, search: bool = False):
    """float32 scales of ``blocks`` (..., block), one a block: max |w| / ``top`` (1 for an
    all-zero block), or with ``search`` the candidate (module docstring) whose codes leave
    the least squared error in the block (as the codes will be rounded: at the float32 scale).

    >>> import numpy as np
    >>> b = np.random.default_rng(0).standard_normal((1000, 64))    # 1000 blocks of 64
    >>> plain, searched = block_scales(b, 7), block_scales(b, 7, search=True)
    >>> bool((np.abs(searched) <= plain).all())                     # clipped a little, or not
    True
    >>> round(float(_error(b, searched, 7).sum() / _error(b, plain, 7).sum()), 2)
    0.69
    """
    import numpy as np

    blocks = np.asarray(blocks, dtype=np.float64)
    scales = _candidates(blocks, top)
    best = next(scales)
    if not search:
        return best
    least = _error(blocks, best, top)
    for scale in scales:
        err = _error(blocks, scale, top)
        better = err < least
        best, least = np.where(better, scale, best), np.where(better, err, least)
    return best


def per_block(w, bits: int, block: int, search: bool = False):
    """``(codes int8 (C_out, K), scale float32 (C_out, ceil(K / block)))`` for ``w``
    flattened to (C_out, K): one scale per ``block`` consecutive weights of a channel
    (``search``: each the least-squared-error one, :func:`block_scales`)."""
    import numpy as np

    w = np.asarray(w, dtype=np.float64).reshape(len(w), -1)
    top = 127 if bits == 8 else 7
    n, k = w.shape
    nb = -(-k // block)
    padded = np.zeros((n, nb * block))
    padded[:, :k] = w
    scale = block_scales(padded.reshape(n, nb, block), top, search)
    full = np.repeat(scale.astype(np.float64), block, axis=1)[:, :k]
    codes = round_codes_np(w / full, low_code(top), top).astype(np.int8)
    return codes, scale


def pack_int4(codes):
    """int4 codes (any shape, -8..7) → uint8, two per byte (low nibble first)."""
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
