"""numpy standing in for ``ulab.numpy`` so the ulab tier runs on CPython.

Honest label: real ulab is in no package registry this project can reach, so the ulab tier is
exercised against numpy with ulab's names. Where numpy and ulab differ in a way the tier relies
on, the stand-in follows ulab (checked against ulab's C source, ``code/numpy/transform.c``):

- ``dot`` reads any dtype element by element and returns float (``transform_dot`` builds an
  ``NDARRAY_FLOAT`` result); numpy would keep int8 and wrap;
- ``float`` is float32 as on single-precision firmware, or float64 (``double=True``) as on
  double-precision boards (PYBD_SF6, several STM32F7/NUCLEO builds);
- ``reverse=False`` models firmware built with ``MICROPY_PY_REVERSE_SPECIAL_METHODS=0``:
  ``1.0 - a`` raises TypeError, ``a - 1.0`` works;
- ``out_keyword=False``: ``tanh(a, out=b)`` raises TypeError, as on builds without
  ``ULAB_MATH_FUNCTIONS_OUT_KEYWORD``;
- ``allocations`` counts the bytes of every array the tier makes (ulab allocates one per
  operation; views cost a header only), for the garbage estimate; a slice assignment counts a
  copy of its right-hand side, as ulab's ``ndarray_assign_view`` makes one
  (``ndarray_copy_view_convert_type``, converted to the target's dtype; ulab 2022, e.g. as
  vendored in numworks/epsilon ``python/port/mod/ndarray.c``) and never frees it.

This checks the tier's logic and its use of the API, not ulab's own arithmetic.
"""

from __future__ import annotations

import sys
import types

import numpy

# ulab's ndarray_obj_t on a 32-bit port with ULAB_MAX_DIMS = 2, rounded up to heap blocks
HEADER_BYTES = 48


class Counter:
    def __init__(self) -> None:
        self.bytes = self.arrays = self.largest = 0

    def reset(self) -> None:
        self.bytes = self.arrays = self.largest = 0


allocations = Counter()


def _count(size: int) -> None:
    allocations.bytes += size
    allocations.largest = max(allocations.largest, size)


class _NoReverse(numpy.ndarray):
    """An ndarray whose scalar-on-the-left operators fail, like ulab without
    MICROPY_PY_REVERSE_SPECIAL_METHODS."""

    def _refuse(self, other):
        raise TypeError(f"unsupported types for reverse operator: {type(other).__name__} "
                        "and ndarray (MICROPY_PY_REVERSE_SPECIAL_METHODS=0)")

    __radd__ = __rsub__ = __rmul__ = __rtruediv__ = __rpow__ = _refuse


class _Tracked(numpy.ndarray):
    def __setitem__(self, key, value) -> None:
        # ulab converts the right-hand side (a scalar becomes a 1-element array) into a new
        # array of the target's dtype before copying it in
        n = value.size if isinstance(value, numpy.ndarray) else 1
        _count(HEADER_BYTES + n * self.itemsize)
        super().__setitem__(key, value)

    def __array_finalize__(self, obj) -> None:
        allocations.arrays += 1
        # data is new when this array owns it, or views a fresh plain result (the stand-in's
        # wrappers); views of tracked arrays and of the runtime's buffers cost a header only
        base = self.base
        owns = base is None or (type(base) is numpy.ndarray and base.base is None)
        _count(HEADER_BYTES + (self.nbytes if owns else 0))


def install(*, double: bool = False, reverse: bool = True,
            out_keyword: bool = True) -> types.ModuleType:
    """Register ``ulab`` and ``ulab.numpy`` in sys.modules; returns the ``ulab`` module.
    ``out_keyword=False``: ``tanh`` refuses ``out=`` like builds without
    ULAB_MATH_FUNCTIONS_OUT_KEYWORD."""
    base = _Tracked if reverse else type("_TrackedNoReverse", (_NoReverse, _Tracked), {})
    fl = numpy.float64 if double else numpy.float32

    def wrap(fn):
        def call(*args, **kw):
            out = fn(*args, **kw)
            return out.view(base) if isinstance(out, numpy.ndarray) else out
        return call

    def dot(a, b):
        # row by row, widening one row at a time: ulab converts element by element and has
        # no temporary of the operands' size (the tracemalloc peak must not see one here)
        a, b = numpy.asarray(a), numpy.asarray(b, dtype=fl)
        if a.ndim == 1:
            return float(numpy.dot(a.astype(fl), b))
        out = numpy.empty((a.shape[0],) + b.shape[1:], dtype=fl)
        for i in range(a.shape[0]):
            out[i] = numpy.dot(a[i].astype(fl), b)
        return out.view(base)

    shim = types.ModuleType("ulab.numpy")
    for name in ("frombuffer", "array", "zeros", "maximum", "clip", "tanh", "floor", "where",
                 "mean"):
        setattr(shim, name, wrap(getattr(numpy, name)))
    shim.dot = dot
    if not out_keyword:
        tanh = shim.tanh

        def no_out(a, **kw):
            if kw:
                raise TypeError("function doesn't take keyword arguments")
            return tanh(a)

        shim.tanh = no_out
    shim.int8, shim.uint8, shim.float = numpy.int8, numpy.uint8, fl
    ulab = types.ModuleType("ulab")
    ulab.numpy = shim
    sys.modules["ulab"], sys.modules["ulab.numpy"] = ulab, shim
    return ulab


def uninstall() -> None:
    sys.modules.pop("ulab", None)
    sys.modules.pop("ulab.numpy", None)
