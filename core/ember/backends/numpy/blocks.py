"""Running a many-pass elementwise numpy function block by block.

A function like GELU's erf rational fit makes ~25 passes over its input; on a large array
each pass streams from main memory (or L3). Cut into blocks of 32 K elements (128 KB in
float32), one block's temporaries stay in L2 across all the passes: GELU over a
(1, 128, 1536) float32 array measured 2.07 -> 0.89 ms on the dev box. The result is the
same, element for element.
"""

from __future__ import annotations

import numpy as np

BLOCK = 1 << 15


def blocked(fn, x):
    """``fn(x)`` for an elementwise ``fn`` whose result has ``x``'s shape and dtype,
    computed block by block when ``x`` is large and contiguous. An ``fn`` that returns its
    argument (works in place) leaves the result in ``x``.

    >>> import numpy as np
    >>> blocked(np.sqrt, np.full(100_000, 4.0, dtype=np.float32))[-3:].tolist()
    [2.0, 2.0, 2.0]
    """
    if type(x) is not np.ndarray or x.size <= 2 * BLOCK or not x.flags.c_contiguous:
        return fn(x)
    flat = x.reshape(-1)
    out = None
    for i in range(0, flat.size, BLOCK):
        block = flat[i:i + BLOCK]
        r = fn(block)
        if r is not block:  # fn may work in place on its block: then nothing to copy
            if out is None:
                out = np.empty_like(flat)
            out[i:i + BLOCK] = r
    return (flat if out is None else out).reshape(x.shape)


def blocked_into(fn, x):
    """A new array holding ``fn(x_block, out_block)``'s writes, one cache-sized block at a
    time (``fn`` computes an elementwise result of ``x``'s dtype into ``out_block``; no
    per-block temporaries or copies).

    >>> import numpy as np
    >>> y = blocked_into(lambda b, out: np.multiply(b, 2, out=out), np.ones(70_000, "f4"))
    >>> float(y.sum())
    140000.0
    """
    y = np.empty_like(x, order="C")
    if not x.flags.c_contiguous:
        fn(x, y)
        return y
    flat, out = x.reshape(-1), y.reshape(-1)
    for i in range(0, flat.size, BLOCK):
        fn(flat[i:i + BLOCK], out[i:i + BLOCK])
    return y
