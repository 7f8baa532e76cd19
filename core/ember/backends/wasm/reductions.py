"""Reductions, scans and sort on the wasm kernels (``wasm/reduce.c``,
``wasm/sort.c``).

A kernel sees its input as a contiguous ``(outer, r, inner)``: ``r`` the reduced extent. Dims
that sit together in the tensor are reduced in place (``inner`` walks the trailing dims);
scattered dims are first moved to the end (one copy), so ``inner`` is 1.

>>> import ember
>>> x = ember.tensor([[3.0, 1.0, 2.0], [2.0, float("nan"), 0.5]], backend="wasm")
>>> x.sort(dim=1).values.tolist(), x.argmax(dim=1).tolist(), x.sum(dim=1).tolist()
([[1.0, 2.0, 3.0], [0.5, 2.0, nan]], [0, 1], [6.0, nan])
"""

from __future__ import annotations

from ... import dtype as dt
from ...errors import ShapeError
from ...shape import numel
from .tensor import WasmTensor


def _split(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    """``(outer, r, inner)`` of ``shape`` around ``dim``."""
    return numel(shape[:dim]), shape[dim], numel(shape[dim + 1 :])


def _kept(shape: tuple[int, ...], dims) -> tuple[int, ...]:
    return tuple(1 if d in dims else s for d, s in enumerate(shape))


class WasmReductions:
    """The reduction half of the backend; ``self.rt`` is the :class:`Runtime`."""

    def _grouped(self, x: WasmTensor, dims) -> tuple[WasmTensor, int, int, int]:
        """``x`` contiguous as ``(outer, r, inner)`` with ``dims`` making up ``r``."""
        dims = tuple(sorted(dims))
        shape = x.shape
        if not dims:
            return self.rt.contiguous(x), numel(shape), 1, 1
        if dims == tuple(range(dims[0], dims[-1] + 1)):
            return (self.rt.contiguous(x), numel(shape[: dims[0]]),
                    numel(shape[d] for d in dims), numel(shape[dims[-1] + 1 :]))
        keep = tuple(d for d in range(len(shape)) if d not in dims)
        moved = self.rt.contiguous(self.permute(x, keep + dims))
        return moved, numel(shape[d] for d in keep), numel(shape[d] for d in dims), 1

    def _reduce(self, op: str, x: WasmTensor, dims):
        rt = self.rt
        src, outer, r, inner = self._grouped(x, dims)
        out = rt.empty(_kept(x.shape, dims), x.dtype, op)
        rt.call("em_reduce", rt.reduce_codes[op], rt.code(x.dtype), src.ptr, out.ptr, outer, r,
                inner)
        return out

    def _extreme(self, op: str, x: WasmTensor, dims):
        if any(x.shape[d] == 0 for d in dims):
            raise ShapeError(
                f"{op}: can't reduce over dims {tuple(dims)} of shape {x.shape}: the reduction "
                "is empty and has no identity (reduce over non-empty dims)"
            )
        return self._reduce(op, x, dims)

    def _arg(self, op: str, x: WasmTensor, dim: int):
        if x.shape[dim] == 0:
            raise ShapeError(
                f"{op}: dim {dim} of shape {x.shape} is empty; there is no {op[3:]} "
                "(reduce over a non-empty dim)"
            )
        rt = self.rt
        x = rt.contiguous(x)
        out = rt.empty(_kept(x.shape, (dim,)), dt.int64, op)
        rt.call("em_argreduce", int(op == "argmin"), rt.code(x.dtype), x.ptr, out.ptr,
                *_split(x.shape, dim))
        return out

    def _scan(self, x: WasmTensor, dim: int, is_prod: bool):
        rt = self.rt
        x = rt.contiguous(x)
        out = rt.empty(x.shape, x.dtype, "cumprod" if is_prod else "cumsum")
        rt.call("em_scan", int(is_prod), rt.code(x.dtype), x.ptr, out.ptr, *_split(x.shape, dim))
        return out

    def _sort(self, x: WasmTensor, dim: int, descending: bool):
        rt = self.rt
        x = rt.contiguous(x)
        values = rt.empty(x.shape, x.dtype, "sort")
        indices = rt.empty(x.shape, dt.int64, "sort")
        rt.call("em_sort", int(bool(descending)), rt.code(x.dtype), x.ptr, values.ptr,
                indices.ptr, *_split(x.shape, dim))
        return values, indices

    # ------------------------------------------------------------------ float
    def float_sum(self, x, dims):
        return self._reduce("sum", x, dims)

    def float_prod(self, x, dims):
        return self._reduce("prod", x, dims)

    def float_mean(self, x, dims):
        return self._reduce("mean", x, dims)

    def float_logsumexp(self, x, dims):
        return self._reduce("logsumexp", x, dims)

    def float_var(self, x, dims, correction):
        rt = self.rt
        src, outer, r, inner = self._grouped(x, dims)
        out = rt.empty(_kept(x.shape, dims), x.dtype, "var")
        rt.call("em_var", rt.code(x.dtype), src.ptr, out.ptr, outer, r, inner,
                float(max(r - correction, 0)))
        return out

    def float_max(self, x, dims):
        return self._extreme("max", x, dims)

    def float_min(self, x, dims):
        return self._extreme("min", x, dims)

    def float_argmax(self, x, dim):
        return self._arg("argmax", x, dim)

    def float_argmin(self, x, dim):
        return self._arg("argmin", x, dim)

    def float_cumsum(self, x, dim):
        return self._scan(x, dim, False)

    def float_cumprod(self, x, dim):
        return self._scan(x, dim, True)

    def float_sort(self, x, dim, descending):
        return self._sort(x, dim, descending)

    # ------------------------------------------------------------------ int, bool
    def int_sum(self, x, dims):
        return self._reduce("sum", x, dims)

    def int_prod(self, x, dims):
        return self._reduce("prod", x, dims)

    def int_max(self, x, dims):
        return self._extreme("max", x, dims)

    def int_min(self, x, dims):
        return self._extreme("min", x, dims)

    def int_argmax(self, x, dim):
        return self._arg("argmax", x, dim)

    def int_argmin(self, x, dim):
        return self._arg("argmin", x, dim)

    def int_cumsum(self, x, dim):
        return self._scan(x, dim, False)

    def int_cumprod(self, x, dim):
        return self._scan(x, dim, True)

    def int_sort(self, x, dim, descending):
        return self._sort(x, dim, descending)

    def bool_any(self, x, dims):
        return self._reduce("any", x, dims)

    def bool_all(self, x, dims):
        return self._reduce("all", x, dims)
