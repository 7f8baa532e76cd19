"""The wasm backend's primitive: a handle on bytes in the module's linear memory.

A :class:`Block` owns an allocation (freed in the module when the last tensor using it goes);
a :class:`WasmTensor` is a view of a block: shape, dtype, element strides and an element
offset. Permute, expand, slice, flip and reshape make views without copying; kernels that
need contiguous data get it from :meth:`Runtime.contiguous`.
"""

from __future__ import annotations

from ... import dtype as dt
from ...shape import contiguous_strides, numel

#: the C kernels' dtype codes (wasm/ember.h)
DTYPE_CODES = {dt.bool_: 0, dt.uint8: 1, dt.int8: 2, dt.int32: 3, dt.int64: 4,
               dt.float32: 5, dt.float64: 6}


class Block:
    """``nbytes`` at ``ptr`` in the module's memory, freed when garbage-collected."""

    __slots__ = ("ptr", "nbytes", "_free")

    def __init__(self, ptr: int, nbytes: int, free):
        self.ptr, self.nbytes, self._free = ptr, nbytes, free

    def __del__(self):
        try:
            self._free(self.ptr)
        except Exception:  # noqa: BLE001 - the module may be gone at interpreter exit
            pass


class WasmTensor:
    """A view of a :class:`Block`: ``shape``, ``dtype``, element ``strides`` and ``offset``."""

    __slots__ = ("block", "shape", "dtype", "strides", "offset")

    def __init__(self, block: Block, shape: tuple[int, ...], dtype: dt.DType,
                 strides: tuple[int, ...] | None = None, offset: int = 0):
        self.block, self.shape, self.dtype = block, shape, dtype
        self.strides = contiguous_strides(shape) if strides is None else strides
        self.offset = offset

    @property
    def ptr(self) -> int:
        """The address of the view's first element."""
        return self.block.ptr + self.offset * self.dtype.itemsize

    @property
    def numel(self) -> int:
        return numel(self.shape)

    @property
    def is_contiguous(self) -> bool:
        want = contiguous_strides(self.shape)
        return all(s == w for s, w, n in zip(self.strides, want, self.shape) if n > 1)

    def __repr__(self) -> str:
        return f"WasmTensor({self.shape}, {self.dtype.name}, @{self.ptr})"


def coalesce(shape, *strides):
    """``shape`` and ``strides`` with the size-1 dims dropped and adjacent dims that every
    stride pattern walks as one merged: a copy of contiguous rows becomes one long row (one
    memcpy) instead of many short ones."""
    if 0 in shape:
        return tuple(shape), strides
    dims: list[tuple[int, list[int]]] = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        steps = [st[d] for st in strides]
        if dims and all(prev == step * n for prev, step in zip(dims[-1][1], steps)):
            dims[-1] = (dims[-1][0] * n, steps)
        else:
            dims.append((n, steps))
    return tuple(n for n, _ in dims), tuple(tuple(st[i] for _, st in dims)
                                            for i in range(len(strides)))
