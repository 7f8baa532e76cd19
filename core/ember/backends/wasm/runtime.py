"""The module's kernels seen from Python: allocation, the metadata scratch, op codes, and
contiguous copies of views. One :class:`Runtime` per backend instance (one module instance).
"""

from __future__ import annotations

import struct

from ... import dtype as dt
from ...errors import EmberError
from ...shape import numel
from .host import Host
from .tensor import DTYPE_CODES, Block, WasmTensor, coalesce

META_WORDS = 4096  # int32 words in the module's metadata scratch (memory.c)


class Runtime:
    """Calls into one module instance (a :class:`~ember.backends.wasm.host.Host`)."""

    def __init__(self, host: Host):
        self.host = host
        self._fns: dict[str, object] = {}
        self._alloc = host.fn("em_alloc")
        self._free = host.fn("em_free")
        self.meta_ptr = int(host.fn("em_meta")())
        self._meta = b""  # the words last written to the scratch
        self._meta_fresh = False  # written since the last kernel call (a recorder keeps it)
        #: an ``ember.jit`` capture in progress (:class:`~.capture.Recorder`), else None
        self.recorder = None
        self.binary_codes = self._names("em_binary_names")
        self.unary_codes = self._names("em_unary_names")
        self.reduce_codes = self._names("em_reduce_names")

    def _names(self, export: str) -> dict[str, int]:
        names = self.host.c_string(int(self.host.fn(export)())).strip(",").split(",")
        return {name: i for i, name in enumerate(names)}

    def fn(self, name: str):
        """The export ``name`` as a Python callable (cached)."""
        f = self._fns.get(name)
        if f is None:
            f = self._fns[name] = self.host.fn(name)
        return f

    def call(self, name: str, *args) -> int:
        """Call a kernel that returns a status: 0 is success (Python checked the inputs, so
        anything else is a bug in ember, reported as such)."""
        f = self.fn(name)
        if self.recorder is not None:
            self.recorder.call(f, args, self._meta if self._meta_fresh else None)
        self._meta_fresh = False
        status = f(*args)
        if status:
            raise EmberError(f"wasm: kernel {name} failed (status {status}) for {args}")
        return status

    # ------------------------------------------------------------------ memory
    def block(self, nbytes: int, op: str) -> Block:
        ptr = int(self._alloc(nbytes))
        if ptr == 0:
            raise MemoryError(f"{op}: the wasm module could not allocate {nbytes} bytes")
        block = Block(ptr, nbytes, self._free)
        if self.recorder is not None:
            self.recorder.keep(block)
        return block

    def empty(self, shape, dtype: dt.DType, op: str) -> WasmTensor:
        shape = tuple(shape)
        return WasmTensor(self.block(numel(shape) * dtype.itemsize, op), shape, dtype)

    def meta(self, *groups) -> None:
        """Write int32 words (shapes, strides: sequences, concatenated) to the scratch."""
        words = [w for g in groups for w in g]
        if len(words) > META_WORDS:
            raise EmberError(f"wasm: {len(words)} metadata words exceed the {META_WORDS} scratch")
        self.meta_bytes(struct.pack(f"<{len(words)}i", *words))

    def meta_bytes(self, raw: bytes) -> None:
        """Write raw bytes to the scratch (a kernel's scalar operand, packed)."""
        self._meta, self._meta_fresh = raw, True
        self.host.write(self.meta_ptr, raw)

    def upload(self, raw, shape, dtype: dt.DType, op: str = "from_data") -> WasmTensor:
        out = self.empty(shape, dtype, op)
        if self.recorder is not None:
            self.recorder.data_dependent = True
        self.host.write(out.ptr, raw)
        return out

    def download(self, x: WasmTensor) -> bytes:
        """The bytes of ``x`` (made contiguous first)."""
        x = self.contiguous(x)
        if self.recorder is not None:
            self.recorder.data_dependent = True
        return self.host.read(x.ptr, x.numel * x.dtype.itemsize)

    def contiguous(self, x: WasmTensor) -> WasmTensor:
        """``x`` itself when contiguous, else a contiguous copy of the view."""
        if x.is_contiguous:
            return x
        out = self.empty(x.shape, x.dtype, "contiguous")
        shape, (strides, _) = coalesce(x.shape, x.strides, out.strides)
        self.meta(shape, strides)
        self.call("em_copy_strided", out.ptr, x.ptr, x.dtype.itemsize, len(shape))
        return out

    def int_range(self, x: WasmTensor) -> tuple[int, int]:
        """The min and max of the integer view ``x``, computed in the module (two numbers come
        back, not the tensor); ``lo > hi`` when ``x`` is empty. A jit capture re-runs the step
        that checks (the values may differ at the next call)."""
        if self.recorder is not None:
            self.recorder.data_dependent = True
        self.meta(x.shape, x.strides)
        self.call("em_int_range", self.code(x.dtype), x.ptr, len(x.shape), self.meta_ptr)
        return struct.unpack("<2q", self.host.read(self.meta_ptr, 16))

    def code(self, dtype: dt.DType) -> int:
        return DTYPE_CODES[dtype]
