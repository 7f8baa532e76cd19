"""The one rounding rule of quantization: a value to its integer code, on every target.

::

    code(v) = 0                                  if v is NaN
            = clamp(t + s, lo, hi)               t = trunc(v), s = sign(v) if |v - t| >= 0.5

that is ``v`` rounded half away from zero (C's ``round``), clamped to the integer bounds
``[lo, hi]`` (infinities and values beyond saturate). Rounding is monotone and the bounds are
integers, so clamping first gives the same code. ``v - trunc(v)`` is exact in every binary
float format, so the rule gives the same code in float32 as in float64 under any rounding
mode; the common shortcut ``floor(|v| + 0.5)`` does not: float32 rounds 0.49999997 + 0.5
(the float below 0.5) up to 1.0.

One definition per language, each held to this one bit for bit by
``tests/unit/test_rounding.py``: :func:`round_code` (Python scalars, the reference),
:func:`round_codes` (a backend's primitives: the contract's default bodies),
:func:`round_codes_np` (numpy arrays, in place: the CPU hot paths); ``qt_round4`` in
``wasm/quant.h`` (C), ``round_code`` in ``shaders/lib_quant.wgsl`` (WGSL), and
``round_code`` in ``embedded/ember_micro/_chain.py`` (MicroPython, which can't import ember).

>>> [round_code(v, -127, 127) for v in (0.5, -1.5, 0.49999997, 1e30, float("nan"))]
[1, -2, 0, 127, 0]
"""

from __future__ import annotations


def round_code(v: float, lo: int, hi: int) -> int:
    """The code of ``v`` (the module doc's rule) as an int in ``[lo, hi]``.

    >>> round_code(2.5, -127, 127), round_code(-2.5, -127, 127), round_code(-3.0, 0, 255)
    (3, -3, 0)
    """
    if v != v:
        return 0
    if v <= lo:
        return lo
    if v >= hi:
        return hi
    t = int(v)  # truncates; v - t is exact
    f = v - t
    return t + 1 if f >= 0.5 else t - 1 if f <= -0.5 else t


def round_codes(b, v, lo: int, hi: int):
    """The codes of the float primitive ``v`` on backend ``b``, as integer-valued floats of
    ``v``'s dtype (primitives only: the contract's default bodies).

    >>> import ember
    >>> b = ember.get_backend("python")
    >>> x = b.from_data(ember.tensor([0.5, -1.5, 300.0]).to_data())
    >>> b.to_data(round_codes(b, x, -127, 127)).tolist()
    [1.0, -2.0, 127.0]
    """
    shape, dtype = tuple(b.shape(v)), b.dtype(v)

    def full(c: float):
        return b.full(shape, c, dtype)

    v = b.where(b.float_isnan(v), full(0.0), v)
    v = b.float_maximum(b.float_minimum(v, full(float(hi))), full(float(lo)))
    t = b.float_trunc(v)
    f = b.float_sub(v, t)
    t = b.where(b.float_ge(f, full(0.5)), b.float_add(t, full(1.0)), t)
    return b.where(b.float_le(f, full(-0.5)), b.float_sub(t, full(1.0)), t)


def round_codes_np(v, lo: int, hi: int, work=None):
    """The codes of the numpy float array ``v``, written into ``v`` (returned) as
    integer-valued floats; ``work``: scratch of ``v``'s shape and dtype, else made.

    numpy's float arithmetic rounds to nearest even, under which ``trunc(v + ±h)``, ``h`` the
    float below 0.5 with ``v``'s sign, is the rule (a tie reaches the next integer: ``n + 0.5
    + h`` rounds up to ``n + 1``; anything below a tie stays under it): fewer passes than
    ``trunc`` and two compares. ``±h`` is ``v``'s sign bit or'ed into ``h``'s bits (numpy's
    ``copysign`` is a slow loop). Clamped, the values have a finite maximum unless one is
    NaN, so a read finds NaNs before a pass writes them.

    >>> import numpy as np
    >>> round_codes_np(np.array([0.5, -0.5, 0.49999997, np.nan], np.float32), 0, 255).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    import numpy as np

    bits, sign, h, h_bits = _halves(v.dtype)
    v.clip(lo, hi, out=v)  # the method: np.clip adds a layer of dispatch
    if lo >= 0:  # v is never negative
        v += h
    else:
        work = np.empty_like(v) if work is None else work
        signed = np.bitwise_and(v.view(bits), sign, out=work.view(bits))
        signed |= h_bits
        v += work
    np.trunc(v, out=v)
    if np.isnan(v.max(initial=lo)):
        np.copyto(v, 0, where=np.isnan(v))
    return v


_HALVES: dict = {}


def _halves(dtype) -> tuple:
    """``(the same-size int dtype, its sign bit, h, h's bits)`` for a numpy float dtype."""
    found = _HALVES.get(dtype)
    if found is None:
        import numpy as np

        bits = np.dtype(f"i{dtype.itemsize}")
        h = np.nextafter(dtype.type(0.5), dtype.type(0))
        found = _HALVES[dtype] = (bits, bits.type(np.iinfo(bits).min), h,
                                  np.array(h).view(bits)[()])
    return found
