"""Elementwise ops on the wasm kernels (``wasm/elementwise.c``): every binary op broadcasts
through element strides (an expanded operand is never materialised), unary ops run over
contiguous data, comparisons give bool.
"""

from __future__ import annotations

import struct

from ... import dtype as dt
from .tensor import WasmTensor

# backend method → kernel op name (wasm/elementwise.c BINARY_OPS / UNARY_OPS)
_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow", "maximum": "maximum",
    "minimum": "minimum", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "floor_divide": "floor_divide", "remainder": "remainder", "atan2": "atan2",
    "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor", "shift_left": "shl",
    "shift_right": "shr",
}
_COMPARE = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
_FLOAT_UNARY = (
    "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "atan", "tanh", "erf", "floor", "ceil",
    "round", "isnan", "expm1", "log1p", "log2", "reciprocal", "rsqrt", "tan", "sinh", "cosh",
    "asin", "acos", "sigmoid", "sign", "trunc", "isinf", "log10",
)
_BOOL_RESULT = frozenset({"isnan", "isinf"})


def _broadcast_strides(x: WasmTensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``x``'s element strides read over ``shape`` (right-aligned; 0 where it broadcasts)."""
    lead = len(shape) - len(x.shape)
    return tuple(
        0 if d < lead or x.shape[d - lead] == 1 else x.strides[d - lead] for d in range(len(shape))
    )


class WasmElementwise:
    """The elementwise half of the backend; ``self.rt`` is the :class:`Runtime`."""

    def _binary(self, op: str, a: WasmTensor, b: WasmTensor, out_dtype: dt.DType | None = None):
        shape = a.shape if len(a.shape) >= len(b.shape) else b.shape
        if a.shape != b.shape:
            shape = tuple(max(p, q) for p, q in zip(_pad(a.shape, shape), _pad(b.shape, shape)))
        rt = self.rt
        out = rt.empty(shape, out_dtype or a.dtype, op)
        rt.meta(shape, _broadcast_strides(a, shape), _broadcast_strides(b, shape))
        rt.call("em_binary", rt.binary_codes[op], rt.code(a.dtype), a.ptr, b.ptr, out.ptr,
                len(shape))
        return out

    def _unary(self, op: str, x: WasmTensor, param: float = 0.0, out_dtype=None):
        rt = self.rt
        x = rt.contiguous(x)
        out = rt.empty(x.shape, out_dtype or x.dtype, op)
        rt.call("em_unary", rt.unary_codes[op], rt.code(x.dtype), x.ptr, out.ptr, x.numel,
                float(param))
        return out

    def where(self, cond, a, b):
        shape = tuple(max(s) for s in zip(*(_pad(t.shape, _longest(cond, a, b))
                                            for t in (cond, a, b))))
        rt = self.rt
        out = rt.empty(shape, a.dtype, "where")
        rt.meta(shape, *(_broadcast_strides(t, shape) for t in (cond, a, b)))
        rt.call("em_where", a.dtype.itemsize, cond.ptr, a.ptr, b.ptr, out.ptr, len(shape))
        return out

    def cast(self, x, dtype):
        self.caps.check_dtype(dtype, "cast", self.name)
        if dtype == x.dtype:
            return x
        rt = self.rt
        x = rt.contiguous(x)
        out = rt.empty(x.shape, dtype, "cast")
        rt.call("em_cast", rt.code(x.dtype), rt.code(dtype), x.ptr, out.ptr, x.numel)
        return out

    def full(self, shape, value, dtype):
        from ...tensordata import convert_scalar

        self.caps.check_dtype(dtype, "full", self.name)
        rt = self.rt
        out = rt.empty(shape, dtype, "full")
        rt.meta_bytes(struct.pack("<" + dtype.struct_format, convert_scalar(value, dtype)))
        rt.call("em_fill", out.ptr, 0, dtype.itemsize, out.numel)  # 0: the meta words
        return out

    def int_pow(self, a, b):
        lo, _ = self.rt.int_range(b)
        if lo < 0 and b.numel:
            raise ValueError("pow: integers to negative integer powers are not allowed")
        return self._binary("pow", a, b)

    # activations with kernels of their own (their defaults compose several ops)
    def relu(self, x):
        return self._unary("relu", x)

    def relu6(self, x):
        return self._unary("relu6", x)

    def silu(self, x):
        return self._unary("silu", x)

    def softplus(self, x, beta=1.0, threshold=20.0):
        rt = self.rt
        x = rt.contiguous(x)
        out = rt.empty(x.shape, x.dtype, "softplus")
        rt.call("em_softplus", rt.code(x.dtype), x.ptr, out.ptr, x.numel, float(beta),
                float(threshold))
        return out

    def hard_sigmoid(self, x):
        return self._unary("hard_sigmoid", x)

    def hard_swish(self, x):
        return self._unary("hard_swish", x)

    def mish(self, x):
        return self._unary("mish", x)

    def leaky_relu(self, x, negative_slope=0.01):
        return self._unary("leaky_relu", x, negative_slope)

    def elu(self, x, alpha=1.0):
        return self._unary("elu", x, alpha)

    def gelu(self, x, approximate="none"):
        return self._unary("gelu_tanh" if approximate == "tanh" else "gelu", x)

    def bool_not(self, x):
        return self._unary("not", x)

    def int_bitwise_not(self, x):
        return self._unary("not", x)

    def bool_and(self, a, b):
        return self._binary("and", a, b)

    def bool_or(self, a, b):
        return self._binary("or", a, b)

    def bool_xor(self, a, b):
        return self._binary("xor", a, b)

    def bool_eq(self, a, b):
        return self._binary("eq", a, b)

    def bool_ne(self, a, b):
        return self._binary("ne", a, b)


def _pad(shape, like) -> tuple[int, ...]:
    return (1,) * (len(like) - len(shape)) + tuple(shape)


def _longest(*ts) -> tuple[int, ...]:
    return max((t.shape for t in ts), key=len)


def _install() -> None:
    """``float_<op>``/``int_<op>`` methods for every kernel op the contract declares (and the
    class doesn't define itself, like ``int_pow`` with its exponent check)."""
    from ...contract import registry

    def binary(op, out_dtype):
        def method(self, a, b):
            return self._binary(op, a, b, out_dtype)
        return method

    def unary(op, out_dtype):
        def method(self, x):
            return self._unary(op, x, out_dtype=out_dtype)
        return method

    for kind in ("float", "int"):
        for name, kop in _BINARY.items():
            method = f"{kind}_{name}"
            if method in registry.REGISTRY and method not in vars(WasmElementwise):
                setattr(WasmElementwise, method,
                        binary(kop, dt.bool_ if name in _COMPARE else None))
    for name in _FLOAT_UNARY:
        if f"float_{name}" in registry.REGISTRY:
            setattr(WasmElementwise, f"float_{name}",
                    unary(name, dt.bool_ if name in _BOOL_RESULT else None))
    for name in ("neg", "abs", "sign"):
        setattr(WasmElementwise, f"int_{name}", unary(name, None))


_install()
