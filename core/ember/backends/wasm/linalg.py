"""Matrix products on the wasm kernels (``wasm/matmul.c``): a packed, register-blocked SIMD
GEMM for float32/float64 and wrapping integer matmul (int8 through an int32-accumulating
SIMD kernel). Operands are read at their element strides, so a transposed weight (``W.T``,
a permuted view) or an expanded batch dim is never copied.

>>> import ember
>>> a = ember.tensor([[1.0, 2.0], [3.0, 4.0]], backend="wasm")
>>> (a @ a.T).tolist()
[[5.0, 11.0], [11.0, 25.0]]
"""

from __future__ import annotations

from .tensor import WasmTensor


class WasmLinalg:
    """``float_matmul`` and ``int_matmul``; ``self.rt`` is the :class:`Runtime`."""

    def _matmul(self, a: WasmTensor, b: WasmTensor) -> WasmTensor:
        # batch dims are the contract's (equal; the ops layer expands): a stride-0 view reads
        # the one copy it has
        *batch, m, k = a.shape
        n = b.shape[-1]
        rt = self.rt
        out = rt.empty((*batch, m, n), a.dtype, "matmul")
        nb = len(batch)
        if nb:
            rt.meta(batch, a.strides[:nb], b.strides[:nb])
        rt.call("em_matmul", rt.code(a.dtype), a.ptr, b.ptr, out.ptr, m, k, n, *a.strides[nb:],
                *b.strides[nb:], nb)
        return out

    def float_matmul(self, a, b):
        return self._matmul(a, b)

    def int_matmul(self, a, b):
        return self._matmul(a, b)
