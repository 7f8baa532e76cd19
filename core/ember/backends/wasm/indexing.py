"""Indexing on the wasm kernels (``wasm/index.c``): cat, slice_assign, gather, scatter and
index_select.

Inputs may be views: the kernels read them through element strides, so an expanded index or
a permuted source is never copied. Index values are checked in the module (their min and max
come back, not the tensor) before a kernel trusts them.

>>> import ember
>>> t = ember.tensor([[1, 2], [3, 4]], backend="wasm")
>>> index = ember.tensor([[1], [0]], backend="wasm")
>>> ember.cat([t, t], dim=1).tolist(), t.gather(1, index).tolist()
([[1, 2, 1, 2], [3, 4, 3, 4]], [[2], [3]])
"""

from __future__ import annotations

from ...errors import TensorIndexError
from ...shape import contiguous_strides, numel
from .tensor import WasmTensor, coalesce


class WasmIndexing:
    """The indexing half of the backend; ``self.rt`` is the :class:`Runtime`."""

    def _check_index(self, op: str, index: WasmTensor, size: int) -> None:
        lo, hi = self.rt.int_range(index)
        if lo <= hi and (lo < 0 or hi >= size):
            bad = lo if lo < 0 else hi
            raise TensorIndexError(
                f"{op}: index {bad} is out of range for a dim of size {size} "
                f"(valid: 0 to {size - 1})"
            )

    def _copy_view(self, dst: WasmTensor, src: WasmTensor) -> None:
        """Write the view ``src`` into the view ``dst`` (same shape) in place."""
        rt = self.rt
        shape, (dst_strides, src_strides) = coalesce(dst.shape, dst.strides, src.strides)
        rt.meta(shape, dst_strides, src_strides)
        rt.call("em_copy_view", dst.ptr, src.ptr, dst.dtype.itemsize, len(shape))

    def _copy(self, x: WasmTensor, op: str) -> WasmTensor:
        """A fresh contiguous copy of ``x`` (functional ops write into it)."""
        out = self.rt.empty(x.shape, x.dtype, op)
        self._copy_view(out, x)
        return out

    def cat(self, xs, dim: int):
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        out = self.rt.empty(tuple(shape), xs[0].dtype, "cat")
        start = 0
        for x in xs:
            size = x.shape[dim]
            if size and x.numel:
                ranges = tuple((start, start + size, 1) if d == dim else (0, s, 1)
                               for d, s in enumerate(shape))
                self._copy_view(self.slice(out, ranges), x)
            start += size
        return out

    def slice_assign(self, x, ranges, value):
        out = self._copy(x, "slice_assign")
        if value.numel:
            self._copy_view(self.slice(out, ranges), value)
        return out

    def gather(self, x, dim: int, index):
        self._check_index("gather", index, x.shape[dim])
        rt = self.rt
        out = rt.empty(index.shape, x.dtype, "gather")
        if not out.numel:
            return out
        x_strides = tuple(0 if d == dim else s for d, s in enumerate(x.strides))
        rt.meta(index.shape, x_strides, index.strides)
        rt.call("em_gather", x.dtype.itemsize, x.ptr, index.ptr, out.ptr, len(index.shape),
                x.strides[dim])
        return out

    def scatter(self, x, dim: int, index, src, reduce="none"):
        if reduce not in ("none", "add"):
            raise ValueError(f"scatter: reduce must be 'none' or 'add', got {reduce!r}")
        self._check_index("scatter", index, x.shape[dim])
        rt = self.rt
        out = self._copy(x, "scatter")
        if not index.numel:
            return out
        strides = contiguous_strides(x.shape)
        out_strides = tuple(0 if d == dim else s for d, s in enumerate(strides))
        # torch allows a larger src: its leading corner is read, through its own strides
        rt.meta(index.shape, out_strides, index.strides, src.strides)
        rt.call("em_scatter", int(reduce == "add"), rt.code(x.dtype), out.ptr, index.ptr,
                src.ptr, len(index.shape), strides[dim])
        return out

    def index_select(self, x, dim: int, index):
        size = x.shape[dim]
        self._check_index("index_select", index, size)
        rt = self.rt
        x, index = rt.contiguous(x), rt.contiguous(index)
        k = index.shape[0]
        out = rt.empty(x.shape[:dim] + (k,) + x.shape[dim + 1 :], x.dtype, "index_select")
        if out.numel:
            rt.call("em_index_select", x.dtype.itemsize, x.ptr, index.ptr, out.ptr,
                    numel(x.shape[:dim]), size, numel(x.shape[dim + 1 :]), k)
        return out
