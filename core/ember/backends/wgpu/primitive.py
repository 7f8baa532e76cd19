"""The wgpu backend's primitive: a strided view of a GPU buffer, and its dtype layout.

A primitive is ``storage + shape + strides + offset + dtype`` (strides and offset in
elements), so permute / expand / slice / reshape-of-contiguous are free: kernels take strides.

Storage per dtype (WGSL has no 64-bit integers and no f64):

- float32 → ``f32``; int32 → ``i32``;
- int64 → ``i32``: values must fit in int32. Uploads outside that range raise, and an int64
  op whose result may leave it is refused before it runs (:mod:`.int_range`; the storage's
  ``bound`` holds what is known of its values). Indices, arg-reductions and sort indices are
  int64 in the contract and stay well inside that range on a GPU;
- float16 → two per u32 word; int8 / uint8 / bool → four per u32 word (the same bytes as
  TensorData). Elementwise kernels read and write them packed; the rarer kernels (reductions,
  scans, sort, matmul, region copies) widen to 32 bits first and narrow afterwards.
"""

from __future__ import annotations

from ... import dtype as dt
from ...shape import numel

STORE = {dt.float32: "f32", dt.int32: "i32", dt.int64: "i32", dt.float16: "u32",
         dt.int8: "u32", dt.uint8: "u32", dt.bool_: "u32"}
COMPUTE = {dt.float32: "f32", dt.float16: "f32", dt.int32: "i32", dt.int64: "i32",
           dt.int8: "i32", dt.uint8: "i32", dt.bool_: "bool"}
PACK = {dt.float32: 1, dt.int32: 1, dt.int64: 1, dt.float16: 2, dt.int8: 4, dt.uint8: 4,
        dt.bool_: 4}
LOADER = {dt.float32: "load_f32", dt.int32: "load_i32", dt.int64: "load_i32",
          dt.float16: "load_f16", dt.int8: "load_i8", dt.uint8: "load_u8",
          dt.bool_: "load_bool"}
STORER = {dt.float32: "store_f32", dt.int32: "store_i32", dt.int64: "store_i32",
          dt.float16: "store_f16", dt.int8: "store_8", dt.uint8: "store_8",
          dt.bool_: "store_bool"}
# the 32-bit dtype the non-elementwise kernels work in
WIDE = {dt.float32: dt.float32, dt.float16: dt.float32, dt.int32: dt.int32,
        dt.int64: dt.int64, dt.int8: dt.int32, dt.uint8: dt.int32, dt.bool_: dt.int32}


def nbytes(n: int, dtype: dt.DType) -> int:
    """Bytes of storage for ``n`` elements (whole u32 words)."""
    return -(-n // PACK[dtype]) * 4


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


class Storage:
    """One allocator block; returned to the allocator when the last view dies.

    ``bound``: ``(lo, hi)`` holding every int32/int64 value in the block, or None (any value
    of the storage type); see :mod:`.int_range`."""

    __slots__ = ("__weakref__", "allocator", "block", "bound")

    def __init__(self, block, allocator):
        self.block = block
        self.allocator = allocator
        self.bound = None

    def __del__(self):
        try:
            self.allocator.release(self.block)
        except Exception:  # noqa: BLE001, S110 - at interpreter shutdown the device may be gone
            pass


class WgpuTensor:
    __slots__ = ("dtype", "offset", "shape", "storage", "strides")

    def __init__(self, storage: Storage, shape, strides, offset: int, dtype: dt.DType):
        self.storage = storage
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = dtype

    @property
    def size(self) -> int:
        return numel(self.shape)

    @property
    def block(self):
        return self.storage.block

    def is_contiguous(self) -> bool:
        """Row-major dense (strides of size-1 dims don't matter)."""
        expected = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s != 1 and st != expected:
                return False
            expected *= s
        return True

    def view(self, shape, strides, offset: int | None = None, dtype=None) -> WgpuTensor:
        return WgpuTensor(self.storage, shape, strides,
                          self.offset if offset is None else offset, dtype or self.dtype)

    def __repr__(self) -> str:
        return (f"WgpuTensor(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype.name})")


def collapse(shape: tuple[int, ...], *strides: tuple[int, ...]):
    """Merge adjacent dims that are contiguous in every operand (fewer index steps).

    Returns ``(shape, [strides...])`` with size-1 dims dropped.
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    new_shape: list[int] = []
    new_strides: list[list[int]] = [[] for _ in strides]
    for d in dims:
        if new_shape and all(st[-1] == s[d] * shape[d] for st, s in zip(new_strides, strides)):
            new_shape[-1] *= shape[d]
            for st, s in zip(new_strides, strides):
                st[-1] = s[d]
        else:
            new_shape.append(shape[d])
            for st, s in zip(new_strides, strides):
                st.append(s[d])
    return tuple(new_shape), [tuple(st) for st in new_strides]
