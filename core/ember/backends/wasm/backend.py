"""``WasmBackend``: Ember's Backend contract on C kernels compiled to WebAssembly.

The browser's CPU path: tensors live in the module's linear memory, Python holds handles
(:class:`~ember.backends.wasm.tensor.WasmTensor`), and data crosses only in ``from_data`` and
``to_data``. In a web page the module runs in the browser's WebAssembly engine; in CPython it
runs under wasmtime (``pip install 'ember[wasm]'``), which is how the tests check it.

>>> import ember
>>> x = ember.tensor([1.0, 2.0, 3.0], backend="wasm")
>>> (x * 2).sum().item(), x.backend.name
(12.0, 'wasm')
"""

from __future__ import annotations

import struct

from ... import dtype as dt
from ...contract import Backend, Caps
from ...tensordata import TensorData
from .elementwise import WasmElementwise
from .indexing import WasmIndexing
from .linalg import WasmLinalg
from .nn import WasmNN
from .quant import WasmQuant
from .reductions import WasmReductions
from .runtime import Runtime
from .tensor import DTYPE_CODES, WasmTensor


_U64 = (1 << 64) - 1


class WasmBackend(WasmElementwise, WasmLinalg, WasmNN, WasmQuant, WasmReductions, WasmIndexing,
                  Backend):
    """CPU backend on WebAssembly kernels (SIMD128). ``host``: a
    :class:`~ember.backends.wasm.host.Host` (default: wasmtime over the packaged module).
    Caps: bool, uint8, int8, int32, int64, float32, float64."""

    name = "wasm"

    def __init__(self, host=None):
        if host is None:
            from .host import WasmtimeHost

            host = WasmtimeHost()
        self.rt = Runtime(host)
        self.caps = Caps(dtypes=frozenset(DTYPE_CODES))

    # ------------------------------------------------------------------ data
    def from_data(self, data: TensorData) -> WasmTensor:
        self.caps.check_dtype(data.dtype, "from_data", self.name)
        return self.rt.upload(data.buffer, data.shape, data.dtype)

    def to_data(self, x: WasmTensor) -> TensorData:
        return TensorData(self.rt.download(x), x.shape, x.dtype)

    def copy_into(self, dst: WasmTensor, src: WasmTensor) -> None:
        """Write ``src``'s values into ``dst``'s memory, in place (``ember.jit``'s state
        updates: primitives are otherwise never written)."""
        src = self.rt.contiguous(src)
        if dst.is_contiguous:
            self.rt.call("em_memcpy", dst.ptr, src.ptr, src.numel * src.dtype.itemsize)
        else:
            self.rt.meta(dst.shape, dst.strides)
            self.rt.call("em_scatter_strided", dst.ptr, src.ptr, dst.dtype.itemsize,
                         len(dst.shape))

    def compile_tape(self, tape):
        """An ``ember.jit`` tape as a recorded list of kernel calls (:mod:`.capture`)."""
        from .capture import compile_tape

        return compile_tape(self, tape)

    def shape(self, x: WasmTensor) -> tuple[int, ...]:
        return x.shape

    def dtype(self, x: WasmTensor) -> dt.DType:
        return x.dtype

    def arange(self, n: int, dtype: dt.DType) -> WasmTensor:
        out = self.rt.empty((n,), dtype, "arange")
        self.rt.call("em_arange", self.rt.code(dtype), out.ptr, n)
        return out

    def random_uniform(self, shape, dtype: dt.DType, seed: int, offset: int) -> WasmTensor:
        """The Philox stream of ``ember.random`` computed in the module (``wasm/random.c``)."""
        if not dtype.is_float:
            return Backend.random_uniform(self, shape, dtype, seed, offset)
        out = self.rt.empty(shape, dtype, "random_uniform")
        self.rt.meta_bytes(struct.pack("<2Q", seed & _U64, offset & _U64))
        self.rt.call("em_random_uniform", self.rt.code(dtype), out.ptr, out.numel)
        return out

    # ------------------------------------------------------------------ views
    def reshape(self, x: WasmTensor, shape) -> WasmTensor:
        x = self.rt.contiguous(x)
        return WasmTensor(x.block, tuple(shape), x.dtype, None, x.offset)

    def permute(self, x: WasmTensor, axes) -> WasmTensor:
        axes = tuple(axes)
        return WasmTensor(x.block, tuple(x.shape[a] for a in axes), x.dtype,
                          tuple(x.strides[a] for a in axes), x.offset)

    def expand(self, x: WasmTensor, shape) -> WasmTensor:
        shape = tuple(shape)
        lead = len(shape) - len(x.shape)
        strides = tuple(
            0 if d < lead or (x.shape[d - lead] == 1 and shape[d] != 1) else x.strides[d - lead]
            for d in range(len(shape))
        )
        return WasmTensor(x.block, shape, x.dtype, strides, x.offset)

    def slice(self, x: WasmTensor, ranges) -> WasmTensor:
        shape = tuple(len(range(*r)) for r in ranges)
        offset = x.offset + sum(r[0] * s for r, s, n in zip(ranges, x.strides, shape) if n)
        strides = tuple(r[2] * s for r, s in zip(ranges, x.strides))
        return WasmTensor(x.block, shape, x.dtype, strides, offset)

    def flip(self, x: WasmTensor, dims) -> WasmTensor:
        ranges = tuple((s - 1, -1, -1) if d in dims else (0, s, 1) for d, s in enumerate(x.shape))
        return self.slice(x, ranges)

