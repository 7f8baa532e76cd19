"""``WgpuBackend``: Ember's Backend contract on WGSL compute shaders.

>>> import ember
>>> x = ember.tensor([1.0, 2.0, 3.0], backend="wgpu")   # doctest: +SKIP
>>> (x * 2).sum().item()                                # doctest: +SKIP
12.0
"""

from __future__ import annotations

import sys
from array import array

from ... import dtype as dt
from ...contract import Caps
from ...tensordata import TensorData
from ...errors import DTypeError
from . import compute, int_range
from .launch import Runtime, cast, contiguous, copy_region, map_op, narrow, widen
from .nn import WgpuNNOps
from .ops import WgpuOps
from .quant import WgpuQuant
from .primitive import PACK, WIDE, WgpuTensor, contiguous_strides

_I32 = (-(1 << 31), (1 << 31) - 1)


class WgpuBackend(WgpuQuant, WgpuNNOps, WgpuOps):
    """GPU backend over wgpu-py (Vulkan/Metal/DX12; Mesa lavapipe without a GPU).

    ``adapter``: an adapter name substring (default ``$EMBER_WGPU_ADAPTER``) or a
    :class:`~ember.backends.wgpu.adapter.GpuAdapter`; ``power_preference``: ``"high-performance"``
    or ``"low-power"``. Caps: float32, int32, int64 (stored as int32: values must fit in
    int32, and an op whose int64 result may leave that range raises ``DTypeError`` before it
    runs, see :mod:`.int_range`), bool, int8, uint8, and float16 where the adapter has
    ``shader-f16``. No float64 (WGSL has none).

    Data, layout (strided views), indexing and creation are here; the math is inherited from
    :class:`~ember.backends.wgpu.ops.WgpuOps`, the module ops from
    :class:`~ember.backends.wgpu.nn.WgpuNNOps`.
    """

    name = "wgpu"

    def __init__(self, adapter=None, power_preference: str | None = "high-performance"):
        from .adapter import GpuAdapter

        if not isinstance(adapter, GpuAdapter):
            from .device import open_adapter

            adapter = open_adapter(adapter, power_preference)
        self.rt = Runtime(adapter)
        self.device = f"gpu:{adapter.info.name}"
        f16 = "shader-f16" in adapter.info.features
        dtypes = {dt.bool_, dt.uint8, dt.int8, dt.int32, dt.int64, dt.float32}
        self.caps = Caps(dtypes=frozenset(dtypes | ({dt.float16} if f16 else set())),
                         narrow=frozenset({dt.int64}))

    # ------------------------------------------------------------------ data
    def from_data(self, data: TensorData):
        self.caps.check_dtype(data.dtype, "from_data", self.name)
        out = self.rt.empty(data.shape, data.dtype, "from_data", upload=True)
        self.rt.engine.write(out.block, self.upload_bytes(data))
        if self.rt.engine.recording is None:  # a jit capture's uploads change at each replay
            out.storage.bound = int_range.data_bound(data)
        return out

    def upload_bytes(self, data: TensorData) -> bytes:
        """The bytes ``from_data`` uploads for ``data`` (int64 stored as int32)."""
        if data.dtype == dt.int64:
            return _int64_to_int32(data.buffer, data.size)
        return data.buffer

    def compile_tape(self, tape):
        """An ``ember.jit`` tape as a captured program: one submit per call, pre-built bind
        groups, no Python per op (:mod:`.replay`)."""
        from .replay import compile_tape

        return compile_tape(self, tape)

    def to_data(self, x: WgpuTensor) -> TensorData:
        x = contiguous(self.rt, x)
        n = x.size
        item = 4 // PACK[x.dtype]
        raw = self.rt.engine.read(x.block, n * item)
        if x.dtype == dt.int64:
            raw = _int32_to_int64(raw)
        return TensorData(raw, x.shape, x.dtype)

    def copy_into(self, dst: WgpuTensor, src: WgpuTensor) -> None:
        """Write ``src``'s values into ``dst``'s buffer, in place (``ember.jit``'s state
        updates: primitives are otherwise never written)."""
        if PACK[dst.dtype] > 1:  # packed words: copy them as int32 words of whole buffers
            if not (dst.is_contiguous() and dst.offset == 0):
                raise DTypeError(f"copy_into: a strided {dst.dtype.name} target can't be "
                                 "written in place (only 32-bit dtypes can)")
            src = contiguous(self.rt, src)
            words = -(-dst.size // PACK[dst.dtype])
            src, dst = (t.view((words,), (1,), 0, dt.int32) for t in (src, dst))
        copy_region(self.rt, src, dst, dst.offset, dst.strides)
        dst.storage.bound = None  # written in place (and again by each jit replay)

    def shape(self, x):
        return x.shape

    def dtype(self, x):
        return x.dtype

    def cast(self, x, dtype):
        self.caps.check_dtype(dtype, "cast", self.name)
        if dtype == x.dtype:
            return x
        if {dtype, x.dtype} == {dt.int32, dt.int64}:  # one storage: relabel
            return x.view(x.shape, x.strides, dtype=dtype)
        r = int_range.cast_bound(self, x, dtype)
        return int_range.set_bound(cast(self.rt, x, dtype), r)

    def sync(self) -> None:
        """Submit pending work (reads do this themselves)."""
        self.rt.engine.flush()

    def fusion_compiler(self):
        """What :class:`~ember.fusion.Fusion` compiles fused elementwise kernels with."""
        from .fused import WgpuFusion

        return WgpuFusion(self)

    def memory_stats(self) -> dict[str, int]:
        """Allocator byte counters: current, peak, cached, reserved; buffers created."""
        return self.rt.allocator.stats()

    # ------------------------------------------------------------------ layout (views)
    def reshape(self, x, shape):
        shape = tuple(shape)
        if not x.is_contiguous():
            x = contiguous(self.rt, x)
        return x.view(shape, contiguous_strides(shape))

    def permute(self, x, axes):
        return x.view(tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes))

    def expand(self, x, shape):
        strides = tuple(st if s == t else 0 for s, t, st in zip(x.shape, shape, x.strides))
        return x.view(tuple(shape), strides)

    def slice(self, x, ranges):
        offset = x.offset + sum(r[0] * st for r, st in zip(ranges, x.strides)
                                if len(range(*r)))
        shape = tuple(len(range(*r)) for r in ranges)
        strides = tuple(st * r[2] for r, st in zip(ranges, x.strides))
        return x.view(shape, strides, offset)

    def slice_assign(self, x, ranges, value):
        wide = WIDE[x.dtype]
        base = map_op(self.rt, [x], wide, "x0" if wide == x.dtype else _conv(x.dtype, wide))
        strides = contiguous_strides(base.shape)
        offset = sum(r[0] * st for r, st in zip(ranges, strides) if len(range(*r)))
        copy_region(self.rt, widen(self.rt, value), base, offset,
                    tuple(st * r[2] for r, st in zip(ranges, strides)))
        return narrow(self.rt, base, x.dtype)

    def cat(self, xs, dim):
        dtype = xs[0].dtype
        wide = WIDE[dtype]
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        out = self.rt.empty(shape, wide, "cat")
        strides = contiguous_strides(tuple(shape))
        at = 0
        for x in xs:
            copy_region(self.rt, widen(self.rt, x), out, at * strides[dim], strides)
            at += x.shape[dim]
        return narrow(self.rt, out, dtype)

    def gather(self, x, dim, index):
        strides = list(x.strides)
        step = strides[dim]
        strides[dim] = 0
        xv = x.view(index.shape, tuple(strides))
        return map_op(self.rt, [xv, index], x.dtype, body="gather", shape=index.shape,
                      params=[step])

    def scatter(self, x, dim, index, src, reduce="none"):
        if reduce not in ("none", "add"):
            raise ValueError(f"scatter: reduce must be 'none' or 'add', got {reduce!r}")
        acc = "acc = load_in2(u32(off_s + i32(j) * ss));"
        if reduce == "add":
            acc = "acc = acc + load_in2(u32(off_s + i32(j) * ss));"
            if x.dtype == dt.bool_:
                acc = "acc = acc || load_in2(u32(off_s + i32(j) * ss));"
        params = [dim, index.shape[dim], index.strides[dim], src.strides[dim], *index.shape]
        return map_op(self.rt, [x, index, src], x.dtype, body="scatter", params=params,
                      accumulate=acc)

    def where(self, cond, a, b):
        return map_op(self.rt, [cond, a, b], a.dtype, "select(x2, x1, x0)")

    def random_uniform(self, shape, dtype, seed, offset):
        self.caps.check_dtype(dtype, "random_uniform", self.name)
        out = compute.philox_uniform(self.rt, tuple(shape), seed, offset)
        return out if dtype == dt.float32 else cast(self.rt, out, dtype)


int_range.guard(WgpuBackend)


def _conv(src: dt.DType, dst: dt.DType) -> str:
    from .launch import _CONVERT
    from .primitive import COMPUTE

    return _CONVERT[COMPUTE[src], COMPUTE[dst]]


# ---------------------------------------------------------------------- int64 ↔ int32
def _int64_to_int32(raw: bytes, n: int) -> bytes:
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        v = np.frombuffer(raw, dtype="<i8")
        if v.size and (v.min() < _I32[0] or v.max() > _I32[1]):
            _range_error(int(v.min() if v.min() < _I32[0] else v.max()))
        return v.astype("<i4").tobytes()
    v = array("q")
    v.frombytes(raw)
    if sys.byteorder != "little":
        v.byteswap()
    for value in v:
        if not _I32[0] <= value <= _I32[1]:
            _range_error(value)
    out = array("i", v)
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def _int32_to_int64(raw: bytes) -> bytes:
    try:
        import numpy as np

        return np.frombuffer(raw, dtype="<i4").astype("<i8").tobytes()
    except ImportError:
        v = array("i")
        v.frombytes(raw)
        if sys.byteorder != "little":
            v.byteswap()
        out = array("q", v)
        if sys.byteorder != "little":
            out.byteswap()
        return out.tobytes()


def _range_error(value: int):
    raise DTypeError(
        f"from_data: int64 value {value} is outside the range the wgpu backend stores int64 in "
        f"(int32: {_I32[0]} to {_I32[1]}; WGSL has no 64-bit integers). Keep such values on "
        "the numpy backend or cast them to float32"
    )
