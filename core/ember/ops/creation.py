"""Creating tensors: from data, constant fills, ranges and random draws."""

from __future__ import annotations

import math

from .. import dtype as dt
from .. import random as _random
from ..contract import Backend
from ..backends import get_backend
from ..errors import DTypeError, ShapeError
from ..shape import broadcast_shapes, numel
from ..tensor import Tensor
from .conversion import resolve_backend as _backend
from .conversion import tensor




def _shape(size: tuple) -> tuple[int, ...]:
    """Accept ``zeros(2, 3)`` and ``zeros((2, 3))``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def full(size, fill_value, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value).

    >>> import ember
    >>> ember.full((2, 2), 7).tolist()
    [[7, 7], [7, 7]]
    >>> ember.full(2, 0.5).dtype
    ember.float32
    """
    shape = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
    d = dt.as_dtype(dtype) if dtype is not None else dt.infer_scalar_dtype(fill_value)
    b = _backend(backend)
    b.caps.check_dtype(d, "full", b.name)
    return Tensor(b.full(shape, fill_value, d), b)


def zeros(*size, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor of zeros (default float dtype): ``zeros(2, 3)`` or ``zeros((2, 3))``.

    >>> import ember
    >>> ember.zeros(2, 3).shape, ember.zeros((2,)).tolist()
    ((2, 3), [0.0, 0.0])
    """
    return full(_shape(size), 0, dtype or dt.default_float, backend)


def ones(*size, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """A tensor of ones (default float dtype): ``ones(2, 3)`` or ``ones((2, 3))``.

    >>> import ember
    >>> ember.ones(2, dtype=ember.int64).tolist()
    [1, 1]
    """
    return full(_shape(size), 1, dtype or dt.default_float, backend)


def empty(*size, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """An uninitialised tensor; Ember fills it with zeros (backends have no cheap garbage).

    >>> import ember
    >>> ember.empty(2, dtype=ember.int32).tolist()
    [0, 0]
    """
    return full(_shape(size), 0, dtype or dt.default_float, backend)


def _work_float(b: Backend) -> dt.DType:
    """The widest float the backend holds: ranges and random transforms are computed in it."""
    return dt.float64 if dt.float64 in b.caps.dtypes else dt.float32


def _number(value, op: str):
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (int, float)):
        raise DTypeError(f"{op}: expected a Python number, got {type(value).__name__}")
    return value


def arange(start, end=None, step=1, *, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """Values ``start, start + step, ...`` below ``end``; int64 when all arguments are ints,
    else the default float. The length is ``ceil((end - start) / step)`` as in numpy.

    >>> import ember
    >>> ember.arange(4).tolist()
    [0, 1, 2, 3]
    >>> ember.arange(1, 2, 0.25).tolist()
    [1.0, 1.25, 1.5, 1.75]
    """
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v, "arange") for v in (start, end, step))
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    all_int = all(isinstance(v, int) for v in (start, end, step))
    n = -((start - end) // step) if all_int else math.ceil((end - start) / step)
    n = max(int(n), 0)
    d = dt.as_dtype(dtype) if dtype is not None else (dt.int64 if all_int else dt.default_float)
    b = _backend(backend)
    b.caps.check_dtype(d, "arange", b.name)
    work = dt.int64 if all_int and not d.is_float else _work_float(b)
    out = Tensor(b.arange(n, work), b)
    if step != 1:
        out = out * step
    if start != 0:
        out = out + start
    return out.astype(d)


def linspace(start, end, steps: int, *, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (numpy's formula).

    >>> import ember
    >>> ember.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    start, end = _number(start, "linspace"), _number(end, "linspace")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"linspace: steps must be a non-negative int, got {steps!r}")
    d = dt.as_dtype(dtype) if dtype is not None else dt.default_float
    b = _backend(backend)
    b.caps.check_dtype(d, "linspace", b.name)
    idx = Tensor(b.arange(steps, _work_float(b)), b)
    if steps == 1:
        return full((1,), start, d, b)
    delta = (end - start) / (steps - 1) if steps > 1 else 0.0
    vals = idx * delta + start
    from .where import where

    return where(idx == steps - 1, end, vals).astype(d)  # the last value is exactly ``end``


def eye(
    n: int, m: int | None = None, *, dtype=None, backend: str | Backend | None = None
) -> Tensor:
    """An ``n × m`` matrix with ones on the diagonal.

    >>> import ember
    >>> ember.eye(2, 3, dtype=ember.int64).tolist()
    [[1, 0, 0], [0, 1, 0]]
    """
    m = n if m is None else m
    if n < 0 or m < 0:
        raise ShapeError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    d = dt.as_dtype(dtype) if dtype is not None else dt.default_float
    b = _backend(backend)
    b.caps.check_dtype(d, "eye", b.name)
    rows = b.expand(b.reshape(b.arange(n, dt.int64), (n, 1)), (n, m))
    cols = b.expand(b.reshape(b.arange(m, dt.int64), (1, m)), (n, m))
    return Tensor(b.cast(b.int_eq(rows, cols), d), b)


# ---------------------------------------------------------------- *_like and new_*
def _like(input: Tensor, dtype, backend) -> tuple[tuple[int, ...], dt.DType, Backend]:
    b = input.backend if backend is None else get_backend(backend)
    return input.shape, (input.dtype if dtype is None else dt.as_dtype(dtype)), b


def full_like(input: Tensor, fill_value, *, dtype=None, backend=None) -> Tensor:
    """A tensor with ``input``'s shape, dtype and backend, filled with ``fill_value``.

    >>> import ember
    >>> ember.full_like(ember.tensor([1, 2]), 7).tolist()
    [7, 7]
    """
    shape, d, b = _like(input, dtype, backend)
    return full(shape, fill_value, d, b)


def zeros_like(input: Tensor, *, dtype=None, backend=None) -> Tensor:
    """Zeros with ``input``'s shape, dtype and backend (or the given ``dtype``/``backend``).

    >>> import ember
    >>> ember.zeros_like(ember.tensor([[1, 2]])).tolist()
    [[0, 0]]
    """
    return full_like(input, 0, dtype=dtype, backend=backend)


def ones_like(input: Tensor, *, dtype=None, backend=None) -> Tensor:
    """Ones with ``input``'s shape, dtype and backend (or the given ``dtype``/``backend``).

    >>> import ember
    >>> ember.ones_like(ember.tensor([1, 2]), dtype=ember.float32).tolist()
    [1.0, 1.0]
    """
    return full_like(input, 1, dtype=dtype, backend=backend)


def empty_like(input: Tensor, *, dtype=None, backend=None) -> Tensor:
    """An "uninitialised" tensor like ``input``; Ember fills it with zeros, as ``empty`` does.

    >>> import ember
    >>> ember.empty_like(ember.tensor([3.0, 4.0])).tolist()
    [0.0, 0.0]
    """
    return full_like(input, 0, dtype=dtype, backend=backend)


def rand_like(input: Tensor, *, generator=None, dtype=None, backend=None) -> Tensor:
    """Uniform samples in [0, 1) with ``input``'s shape, dtype and backend.

    >>> import ember
    >>> u = ember.rand_like(ember.zeros(3), generator=ember.Generator(0))
    >>> u.shape, bool(((u >= 0) & (u < 1)).all())
    ((3,), True)
    """
    shape, d, b = _like(input, dtype, backend)
    return rand(shape, generator=generator, dtype=d, backend=b)


def randn_like(input: Tensor, *, generator=None, dtype=None, backend=None) -> Tensor:
    """Standard-normal samples with ``input``'s shape, dtype and backend.

    >>> import ember
    >>> ember.randn_like(ember.zeros(2, 3), generator=ember.Generator(0)).shape
    (2, 3)
    """
    shape, d, b = _like(input, dtype, backend)
    return randn(shape, generator=generator, dtype=d, backend=b)


def new_full(self: Tensor, size, fill_value, *, dtype=None) -> Tensor:
    """Like ``full`` on this tensor's backend, with its dtype unless ``dtype`` is given.

    >>> import ember
    >>> ember.tensor([1, 2]).new_full((2,), 5).tolist()
    [5, 5]
    """
    return full(_shape((size,)), fill_value, dtype or self.dtype, self.backend)


def new_zeros(self: Tensor, *size, dtype=None) -> Tensor:
    """Zeros of ``size`` on this tensor's backend, with its dtype unless ``dtype`` is given.

    >>> import ember
    >>> ember.tensor([1.5]).new_zeros(2, 2).tolist()
    [[0.0, 0.0], [0.0, 0.0]]
    """
    return full(_shape(size), 0, dtype or self.dtype, self.backend)


def new_ones(self: Tensor, *size, dtype=None) -> Tensor:
    """Ones of ``size`` on this tensor's backend, with its dtype unless ``dtype`` is given.

    >>> import ember
    >>> ember.tensor([7]).new_ones(3).tolist()
    [1, 1, 1]
    """
    return full(_shape(size), 1, dtype or self.dtype, self.backend)


def new_empty(self: Tensor, *size, dtype=None) -> Tensor:
    """An "uninitialised" (zero-filled) tensor of ``size`` on this tensor's backend and dtype.

    >>> import ember
    >>> ember.tensor([7]).new_empty(2).tolist()
    [0, 0]
    """
    return full(_shape(size), 0, dtype or self.dtype, self.backend)


def new_tensor(self: Tensor, data, *, dtype=None) -> Tensor:
    """A tensor of ``data`` on this tensor's backend, with its dtype unless ``dtype`` is given.

    >>> import ember
    >>> ember.tensor([1.0]).new_tensor([2, 3]).tolist()
    [2.0, 3.0]
    """
    return tensor(data, dtype=dtype or self.dtype, backend=self.backend)


# ---------------------------------------------------------------- random
def _generator(generator) -> _random.Generator:
    return _random.default_generator if generator is None else generator


def _uniform(b: Backend, shape: tuple[int, ...], work: dt.DType, generator) -> Tensor:
    """Draw ``numel(shape)`` numbers of the Philox stream in ``work`` dtype."""
    seed, offset = _generator(generator).take(numel(shape))
    return Tensor(b.random_uniform(tuple(shape), work, seed, offset), b)


def _float_dtype(dtype, op: str) -> dt.DType:
    d = dt.as_dtype(dtype) if dtype is not None else dt.default_float
    if not d.is_float:
        raise DTypeError(f"{op}: dtype must be a float dtype (float16, float32, float64), got {d}")
    return d


def rand(*size, generator=None, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """Uniform numbers in [0, 1); the same seed gives the same numbers on every backend.

    >>> import ember
    >>> x = ember.rand(2, 3, generator=ember.Generator(seed=1))
    >>> x.shape, bool(((x >= 0) & (x < 1)).all())
    ((2, 3), True)
    """
    shape = _shape(size)
    d = _float_dtype(dtype, "rand")
    b = _backend(backend)
    b.caps.check_dtype(d, "rand", b.name)
    u = _uniform(b, shape, dt.float64 if d == dt.float64 else dt.float32, generator)
    if d != dt.float16:
        return u.astype(d)
    from .where import where

    u = u.astype(d)  # 24 random bits don't fit float16: values near 1 round up to 1.0
    return where(u >= 1.0, 1.0 - 2.0**-11, u)


def randn(*size, generator=None, dtype=None, backend: str | Backend | None = None) -> Tensor:
    """Standard normal numbers (Box-Muller over the Philox stream).

    >>> import ember
    >>> ember.randn(3, generator=ember.Generator(seed=0)).shape
    (3,)
    """
    shape = _shape(size)
    d = _float_dtype(dtype, "randn")
    b = _backend(backend)
    b.caps.check_dtype(d, "randn", b.name)
    n = numel(shape)
    if n == 0:
        return full(shape, 0, d, b)
    m = (n + 1) // 2
    work = _work_float(b)
    u = _uniform(b, (2, m), work, generator)
    u1 = Tensor(b.reshape(b.slice(u._prim, ((0, 1, 1), (0, m, 1))), (m,)), b)
    u2 = Tensor(b.reshape(b.slice(u._prim, ((1, 2, 1), (0, m, 1))), (m,)), b)
    # 1 - u lies in (0, 1], so the log is finite
    r = ((1.0 - u1).log() * -2.0).sqrt()
    theta = u2 * (2.0 * math.pi)
    z = b.cat([(r * theta.cos())._prim, (r * theta.sin())._prim], 0)
    z = b.reshape(b.slice(z, ((0, n, 1),)), shape)
    return Tensor(z, b).astype(d)


def randint(low, high=None, size=None, *, generator=None, dtype=None,
            backend: str | Backend | None = None) -> Tensor:
    """Uniform integers in ``[low, high)``: ``randint(high, size)`` or
    ``randint(low, high, size)`` (PyTorch's forms); int64 unless ``dtype`` says otherwise.

    >>> import ember
    >>> x = ember.randint(3, 7, (100,), generator=ember.Generator(seed=0))
    >>> bool(((x >= 3) & (x < 7)).all())
    True
    """
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = int(_number(low, "randint")), int(_number(high, "randint"))
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    shape = _shape((size,)) if size is not None else ()
    d = dt.as_dtype(dtype) if dtype is not None else dt.int64
    b = _backend(backend)
    b.caps.check_dtype(d, "randint", b.name)
    span = high - low
    n = numel(shape)
    # integer arithmetic on the 24-bit words keeps every backend bit-identical
    if span <= 1 << 24:
        k = (_uniform(b, shape, dt.float32, generator) * float(1 << 24)).astype(dt.int64)
        # floor(k * span / 2**24) from 12-bit halves of k and span: every partial product
        # stays below 2**26, so backends storing int64 as int32 (wgpu) give the same result
        kh, kl = k // 4096, k % 4096
        sh, sl = divmod(span, 4096)
        mid = kh * sl + kl * sh + (kl * sl) // 4096
        out = kh * sh + mid // 4096
    else:
        if span > 1 << 48:
            raise ValueError(f"randint: range {span} is too large (at most 2**48)")
        words = (_uniform(b, (2, n), dt.float32, generator) * float(1 << 24)).astype(dt.int64)
        hi = Tensor(b.reshape(b.slice(words._prim, ((0, 1, 1), (0, n, 1))), shape), b)
        lo = Tensor(b.reshape(b.slice(words._prim, ((1, 2, 1), (0, n, 1))), shape), b)
        out = (hi * (1 << 24) + lo) % span
    if low != 0:
        out = out + low
    return out.astype(d)


def bernoulli(input, p: float | None = None, *, size=None, generator=None, dtype=None,
              backend: str | Backend | None = None) -> Tensor:
    """1 with probability ``p`` else 0. ``input`` is a tensor of probabilities (or a tensor
    giving the shape when ``p`` is set, as ``t.bernoulli(p)``), or a float with ``size``.

    >>> import ember
    >>> ember.bernoulli(ember.tensor([0.0, 1.0])).tolist()
    [0.0, 1.0]
    """
    if isinstance(input, Tensor):
        b = input.backend
        probs = input if p is None else full(input.shape, p, _work_float(b), b)
        d = dt.as_dtype(dtype) if dtype is not None else (
            input.dtype if input.dtype.is_float else dt.default_float
        )
    else:
        b = _backend(backend)
        shape = _shape((size,)) if size is not None else ()
        probs = full(shape, float(_number(input, "bernoulli")), _work_float(b), b)
        d = dt.as_dtype(dtype) if dtype is not None else dt.default_float
    work = dt.float64 if probs.dtype == dt.float64 else dt.float32
    u = _uniform(b, probs.shape, work, generator)
    return (u < probs.astype(work)).astype(d)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None,
           backend: str | Backend | None = None) -> Tensor:
    """Normal numbers with ``mean`` and ``std`` (scalars or tensors, broadcast with ``size``).

    >>> import ember
    >>> ember.normal(2.0, 0.0, (2,)).tolist()
    [2.0, 2.0]
    """
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    b = tensors[0].backend if tensors and backend is None else _backend(backend)
    shapes = [t.shape for t in tensors] + ([_shape((size,))] if size is not None else [])
    shape = broadcast_shapes(*shapes, op="normal") if shapes else ()
    if dtype is None and tensors:
        dtype = tensors[0].dtype if tensors[0].dtype.is_float else None
    z = randn(shape, generator=generator, dtype=dtype, backend=b)
    return z * std + mean


def uniform(low=0.0, high=1.0, size=None, *, generator=None, dtype=None,
            backend: str | Backend | None = None) -> Tensor:
    """Uniform numbers in ``[low, high)`` (numpy's ``random.uniform``).

    >>> import ember
    >>> x = ember.uniform(-1.0, 1.0, (100,))
    >>> bool(((x >= -1) & (x < 1)).all())
    True
    """
    shape = _shape((size,)) if size is not None else ()
    u = rand(shape, generator=generator, dtype=dtype, backend=backend)
    return u * (high - low) + low
