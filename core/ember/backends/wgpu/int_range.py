"""Integer value ranges on the wgpu backend: an int64 result that may leave int32 is refused.

WGSL has no 64-bit integers, so int64 lives in ``i32`` words, and an int64 result outside the
int32 range would come back wrapped: a wrong number with no error. So each int64 op that can
leave its inputs' range derives its result's range from theirs (interval arithmetic on exact
Python ints) before it runs, and raises :class:`~ember.errors.DTypeError` when that range
leaves int32:

- a storage's ``bound`` is exact after ``from_data`` (except inside a jit capture, whose
  uploads change at each replay), derived after a checked op, kept by the jit replays for the
  state they update in place (:mod:`.replay_ranges`), None (any value of the storage type)
  otherwise; views share their storage's bound;
- int32, int8 and uint8 results wrap at their width like numpy: only int64 results can be
  refused (int32 results keep a derived bound when it fits, so a later int64 sum is exact);
- when the derived range leaves int32, the op first measures its inputs (a min and a max
  reduction, one read each) and derives again, so a loose bound costs a read, not an error;
- a float -> int64 cast measures its input the same way (NaN and inf, whose conversion is
  unspecified, are left out);
- inside a jit capture nothing is measured (a measured value holds for one call, and a replay
  runs no check): the checks derive from the ranges the capture assumes of its inputs and of
  the state it updates in place, which every replay keeps to (:mod:`.replay_ranges`), and a
  float -> int64 cast is refused.

>>> import ember
>>> x = ember.full((4,), 2_000_000_000, dtype=ember.int32, backend="wgpu")  # doctest: +SKIP
>>> x.sum()                                                                # doctest: +SKIP
Traceback (most recent call last):
...
ember.errors.DTypeError: int_sum: the int64 result may reach 8000000000, ...
"""

from __future__ import annotations

import math
from array import array
from sys import byteorder

from ... import dtype as dt
from ...contract import int_bool, movement, reductions
from ...errors import DTypeError
from .primitive import WgpuTensor

I32 = dt.int32.int_range
_BIG = 1 << 70  # stands for "beyond any 64-bit value": powers and products that explode
_BOUNDED = (dt.int32, dt.int64)  # the dtypes whose storage carries a bound


def fits(r: tuple[int, int]) -> bool:
    return I32[0] <= r[0] and r[1] <= I32[1]


def bound(x: WgpuTensor) -> tuple[int, int]:
    """Bounds every value of ``x`` lies in (its storage's, else its dtype's)."""
    if x.dtype in _BOUNDED:
        return x.storage.bound or I32
    return x.dtype.int_range


def set_bound(x: WgpuTensor, r: tuple[int, int] | None) -> WgpuTensor:
    """Record ``r`` as the range of a fresh result ``x`` (when its dtype keeps bounds)."""
    if x.dtype in _BOUNDED:
        x.storage.bound = r if r is not None and fits(r) else None
    return x


def data_bound(data) -> tuple[int, int] | None:
    """The exact range of an int32/int64 ``TensorData`` (None for other dtypes or no data)."""
    if data.dtype not in _BOUNDED or not data.size:
        return None
    code = "<i8" if data.dtype is dt.int64 else "<i4"
    try:
        import numpy as np
    except ImportError:
        v = array("q" if data.dtype is dt.int64 else "i")
        v.frombytes(data.buffer)
        if byteorder != "little":
            v.byteswap()
        return min(v), max(v)
    v = np.frombuffer(data.buffer, dtype=code)
    return int(v.min()), int(v.max())


# ---------------------------------------------------------------------- interval rules
def _mul(a, b):
    p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(p), max(p)


def _power(m: int, k: int) -> int:
    """``m ** k`` for magnitudes, capped at ``_BIG`` (exponents can be 2**31)."""
    if m <= 1 or k <= 0:
        return min(m, 1) if k > 0 else 1
    return _BIG if k * m.bit_length() > 70 else min(m**k, _BIG)


def _magnitude(r):
    return max(abs(r[0]), abs(r[1]))


def _count(x: WgpuTensor, dims) -> int:
    return math.prod(x.shape[d] for d in dims)


def _sum_of(n: int, r):
    return (min(r[0], n * r[0]), max(r[1], n * r[1])) if n else (0, 0)


def _prod_of(n: int, r):
    p = _power(_magnitude(r), n)
    return (0 if r[0] >= 0 else -p, max(p, 1))


# op -> rule(b, *args) -> the result's range; ``b(x)`` gives an input's range
RULES = {
    int_bool.int_add: lambda b, x, y: (b(x)[0] + b(y)[0], b(x)[1] + b(y)[1]),
    int_bool.int_sub: lambda b, x, y: (b(x)[0] - b(y)[1], b(x)[1] - b(y)[0]),
    int_bool.int_mul: lambda b, x, y: _mul(b(x), b(y)),
    int_bool.int_neg: lambda b, x: (-b(x)[1], -b(x)[0]),
    int_bool.int_abs: lambda b, x: (max(b(x)[0], 0, -b(x)[1]), _magnitude(b(x))),
    # |x // y| <= |x| (x // 0 is 0); |x % y| < |y|
    int_bool.int_floor_divide: lambda b, x, y: (-_magnitude(b(x)), _magnitude(b(x))),
    int_bool.int_remainder: lambda b, x, y: (1 - max(_magnitude(b(y)), 1),
                                             max(_magnitude(b(y)), 1) - 1),
    int_bool.int_pow: lambda b, x, y: (-_power(_magnitude(b(x)), b(y)[1]),
                                       max(_power(_magnitude(b(x)), b(y)[1]), 1)),
    reductions.int_sum: lambda b, x, dims: _sum_of(_count(x, dims), b(x)),
    reductions.int_prod: lambda b, x, dims: _prod_of(_count(x, dims), b(x)),
    reductions.int_cumsum: lambda b, x, dim: _sum_of(x.shape[dim], b(x)),
    reductions.int_cumprod: lambda b, x, dim: _prod_of(x.shape[dim], b(x)),
    reductions.int_matmul: lambda b, x, y: _sum_of(x.shape[-1], _mul(b(x), b(y))),
}


def _shift_left(b, x, y):
    """``x * 2**k`` for the counts ``k`` in range; counts outside [0, 64) give 0."""
    lo, hi = max(b(y)[0], 0), min(b(y)[1], 63)
    if lo > hi:
        return (0, 0)
    r = _mul(b(x), (1 << lo, 1 << hi))
    return min(r[0], 0), max(r[1], 0)


def _scatter(b, x, dim, index, src, reduce="none"):
    """Each target keeps its value or gains at most ``index.shape[dim]`` of ``src``'s."""
    s = b(src)
    if reduce != "add":
        return min(b(x)[0], s[0]), max(b(x)[1], s[1])
    n = index.shape[dim] if index.shape else 1
    return b(x)[0] + n * min(s[0], 0), b(x)[1] + n * max(s[1], 0)


def _hull(r, q):
    return min(r[0], q[0]), max(r[1], q[1])


RULES[movement.scatter] = _scatter
RULES[int_bool.int_shift_left] = _shift_left
# ops that pick among their inputs' values: only to keep ranges known for later checks
RULES[int_bool.where] = lambda b, cond, x, y: _hull(b(x), b(y))
RULES[movement.gather] = lambda b, x, dim, index: b(x)
_VALUE_ARG = {"where": 1}  # the argument whose dtype is the result's (else the first)


# ---------------------------------------------------------------------- checking
def measure(backend, x: WgpuTensor) -> tuple:
    """The exact (min, max) of ``x``'s values, read back (floats: NaN and inf left out)."""
    if not x.size:
        return (0, 0)
    if x.dtype.is_float:
        x = backend._ew("select(x0, 0.0, is_nan_f(x0) || is_inf_f(x0))", x)
    dims = tuple(range(len(x.shape)))
    lo, hi = (backend._reduce(x, dims, op) for op in ("min", "max"))
    return backend.to_data(lo).values()[0], backend.to_data(hi).values()[0]


def _refuse(op: str, r, args, why: str = ""):
    shapes = ", ".join(f"{a.shape} {a.dtype.name}" + (f" in {list(bound(a))}" if a.dtype.is_int
                                                      else "")
                       for a in args if isinstance(a, WgpuTensor))
    worst = r[0] if r[0] < I32[0] else r[1]
    worst = "beyond 2**63" if abs(worst) >= _BIG else str(worst)
    raise DTypeError(
        f"{op}: the int64 result may reach {worst}, outside the int32 range the wgpu backend "
        f"stores int64 in ({I32[0]} to {I32[1]}; WGSL has no 64-bit integers); inputs "
        f"{shapes}{why}. Compute it on the numpy backend (.to('numpy')), or in float32"
    )


def _capturing(backend) -> bool:
    return backend.rt.engine.recording is not None


_CAPTURE = " inside a jit capture, where a float's range can change at each replay"
_CAPTURE_RANGES = (" inside a jit capture, whose replays run unchecked (the ranges are those "
                   "of the inputs and in-place state that every replay keeps to)")


def check(backend, op: str, rule, args) -> tuple[int, int]:
    """The result range of int64 op ``op`` on ``args``: derived, else measured (not inside a
    jit capture); raises when it may leave int32."""
    r = rule(bound, *args)
    if fits(r):
        return r
    if _capturing(backend):
        _refuse(op, r, args, _CAPTURE_RANGES)
    seen = {id(a): measure(backend, a) for a in args if isinstance(a, WgpuTensor)}
    r = rule(lambda x: seen.get(id(x)) or bound(x), *args)
    if not fits(r):
        _refuse(op, r, args)
    return r


def checked(name: str, fn, rule):
    """``fn`` (a backend method) with its int64 results' range checked before it runs."""

    at = _VALUE_ARG.get(name, 0)

    def run(self, *args, **kwargs):
        first = args[at]
        if first.dtype is dt.int64:
            r = check(self, name, lambda b, *a: rule(b, *a, **kwargs), args)
        elif first.dtype is dt.int32:
            r = rule(bound, *args, **kwargs)
        else:
            return fn(self, *args, **kwargs)
        return set_bound(fn(self, *args, **kwargs), r)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = fn.__doc__
    return run


def cast_bound(backend, x: WgpuTensor, dtype: dt.DType) -> tuple[int, int] | None:
    """The range of ``x`` cast to ``dtype`` (None: nothing to record); a float -> int64 cast
    whose values leave int32 raises."""
    if dtype not in _BOUNDED:
        return None
    if not x.dtype.is_float:
        r = bound(x)
        return r if fits(r) else None
    if dtype is dt.int32:
        return None  # float -> int32 outside its range is unspecified (as numpy)
    if _capturing(backend):
        _refuse("cast", (I32[0], I32[1] + 1), (x,), _CAPTURE)
    lo, hi = measure(backend, x)
    r = (math.trunc(lo), math.trunc(hi))
    if not fits(r):
        _refuse("cast", r, (x,))
    return r


def unfusable(op: str, dtypes) -> bool:
    """Whether a fused kernel would skip the check: int64 ops with a rule, casts to int64."""
    if op == "cast":
        return dtypes[1] is dt.int64 and dtypes[0] is not dt.int32
    return dt.int64 in dtypes and op in _RULE_NAMES


_RULE_NAMES = {op.name for op in RULES}


def _indexing(fn):
    """``fn`` (an arg-reduction or sort along ``dim``) with its int64 indices' range kept."""

    def run(self, x, dim, *rest):
        out = fn(self, x, dim, *rest)
        r = (0, max(x.shape[dim] - 1, 0))
        if isinstance(out, tuple):  # sort: (values, indices)
            set_bound(out[0], bound(x) if x.dtype in _BOUNDED else None)
            return out[0], set_bound(out[1], r)
        return set_bound(out, r)

    run.__name__ = run.__qualname__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


_INDEXING = (reductions.float_argmax, reductions.float_argmin, reductions.int_argmax,
             reductions.int_argmin, reductions.float_sort, reductions.int_sort)


def guard(cls) -> None:
    """Wrap ``cls``'s implementations of the ops in :data:`RULES` with :func:`checked`, and of
    the arg-reductions and sorts with the range of their indices."""
    for op, rule in RULES.items():
        cls.implement(op, checked(op.name, getattr(cls, op.name), rule))
    for op in _INDEXING:
        cls.implement(op, _indexing(getattr(cls, op.name)))
