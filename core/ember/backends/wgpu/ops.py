"""The wgpu backend's math: elementwise ops, reductions, scans, sort and matmul.

:class:`WgpuOps` holds the ``float_*``, ``int_*`` and ``bool_*`` ops: elementwise ops are WGSL
expressions over the inputs ``x0``, ``x1`` (tables keyed by the registry's ops, registered with
:meth:`Backend.implement <ember.contract.Backend.implement>`) that :func:`~.launch.map_op`
turns into one kernel; reductions, scans, sort and matmul run the kernels of :mod:`.compute`.
Narrow dtypes are widened to their compute type and the result narrowed.
:class:`~ember.backends.wgpu.backend.WgpuBackend` adds the data and layout primitives.
"""

from __future__ import annotations

from ... import dtype as dt
from ...contract import Backend, float_math, int_bool, reductions
from . import compute
from .launch import Runtime, map_op, narrow, widen


class WgpuOps(Backend):
    """The math ops on :class:`~ember.backends.wgpu.primitive.WgpuTensor`s."""

    rt: Runtime

    # ------------------------------------------------------------------ shared helpers
    def _ew(self, expr: str, *xs, out=None):
        return map_op(self.rt, list(xs), out or xs[0].dtype, expr)

    def _reduce(self, x, dims, op, arg=False):
        w = widen(self.rt, x)
        r = compute.reduce(self.rt, w, tuple(dims), op, arg)
        return r if arg else narrow(self.rt, r, x.dtype)

    def _scan(self, x, dim, op):
        return narrow(self.rt, compute.scan(self.rt, widen(self.rt, x), dim, op), x.dtype)

    def _sort(self, x, dim, descending):
        v, i = compute.sort(self.rt, widen(self.rt, x), dim, descending)
        return narrow(self.rt, v, x.dtype), i

    def _matmul(self, a, b):
        if a.dtype is dt.float16:  # the kernel reads and writes packed float16 itself
            return compute.matmul(self.rt, a, b)
        r = compute.matmul(self.rt, widen(self.rt, a), widen(self.rt, b))
        return narrow(self.rt, r, a.dtype)

    # ------------------------------------------------------------------ float / int
    def float_sort(self, x, dim, descending):
        return self._sort(x, dim, descending)

    def int_sort(self, x, dim, descending):
        return self._sort(x, dim, descending)

    def float_matmul(self, a, b):
        return self._matmul(a, b)

    def int_matmul(self, a, b):
        return self._matmul(a, b)

    def int_pow(self, a, b):
        if b.size:
            lowest = self.to_data(self._reduce(b, tuple(range(len(b.shape))), "min"))
            if lowest.values()[0] < 0:
                raise ValueError("pow: integers to negative integer powers are not allowed")
        return self._ew("i_pow(x0, x1)", a, b)


def _elementwise(expr: str, out: dt.DType | None = None):
    def op(self, *xs):
        return self._ew(expr, *xs, out=out)

    return op


def _reduction(op: str, arg: bool = False):
    if arg:
        def fn(self, x, dim):
            return self._reduce(x, (dim,), op, True)
    else:
        def fn(self, x, dims):
            return self._reduce(x, dims, op)
    return fn


def _scanner(op: str):
    def fn(self, x, dim):
        return self._scan(x, dim, op)

    return fn


_B = dt.bool_
_FLOAT = {
    float_math.float_add: "x0 + x1",
    float_math.float_sub: "x0 - x1",
    float_math.float_mul: "x0 * x1",
    float_math.float_div: "x0 / x1",
    float_math.float_pow: "f_pow(x0, x1)",
    float_math.float_maximum: "f_max(x0, x1)",
    float_math.float_minimum: "f_min(x0, x1)",
    float_math.float_neg: "-x0",
    float_math.float_abs: "abs(x0)",
    float_math.float_exp: "f_exp(x0)",
    float_math.float_log: "f_log(x0)",
    float_math.float_sqrt: "f_sqrt(x0)",
    float_math.float_sin: "f_sin(x0)",
    float_math.float_cos: "f_cos(x0)",
    float_math.float_atan: "f_atan(x0)",
    float_math.float_tanh: "f_tanh(x0)",
    float_math.float_erf: "f_erf(x0)",
    float_math.float_floor: "f_floor(x0)",
    float_math.float_ceil: "f_ceil(x0)",
    float_math.float_round: "f_round(x0)",
    float_math.float_sigmoid: "1.0 / (1.0 + f_exp(-x0))",
}
_FLOAT_BOOL = {
    float_math.float_eq: "x0 == x1",
    float_math.float_lt: "x0 < x1",
    float_math.float_le: "x0 <= x1",
    float_math.float_ne: "!(x0 == x1)",
    float_math.float_gt: "x0 > x1",
    float_math.float_ge: "x0 >= x1",
    float_math.float_isnan: "is_nan_f(x0)",
    float_math.float_isinf: "is_inf_f(x0)",
}
_INT = {
    int_bool.int_add: "x0 + x1",
    int_bool.int_sub: "x0 - x1",
    int_bool.int_mul: "x0 * x1",
    int_bool.int_floor_divide: "i_floordiv(x0, x1)",
    int_bool.int_remainder: "i_rem(x0, x1)",
    int_bool.int_maximum: "max(x0, x1)",
    int_bool.int_minimum: "min(x0, x1)",
    int_bool.int_neg: "0 - x0",
    int_bool.int_abs: "abs(x0)",
    # int8/uint8 compute in i32 (sign-/zero-extended) and are stored truncated: the same bits
    int_bool.int_bitwise_and: "x0 & x1",
    int_bool.int_bitwise_or: "x0 | x1",
    int_bool.int_bitwise_xor: "x0 ^ x1",
    int_bool.int_bitwise_not: "~x0",
    # WGSL takes a runtime shift count modulo 32: counts outside [0, 32) are handled here
    int_bool.int_shift_left: "select(0, x0 << u32(x1), u32(x1) < 32u)",
    int_bool.int_shift_right: "x0 >> min(u32(x1), 31u)",
}
_INT_BOOL = {
    int_bool.int_eq: "x0 == x1",
    int_bool.int_lt: "x0 < x1",
    int_bool.int_le: "x0 <= x1",
    int_bool.int_ne: "x0 != x1",
    int_bool.int_gt: "x0 > x1",
    int_bool.int_ge: "x0 >= x1",
}
_BOOL = {
    int_bool.bool_and: "x0 && x1",
    int_bool.bool_or: "x0 || x1",
    int_bool.bool_not: "!x0",
    int_bool.bool_xor: "x0 != x1",
    int_bool.bool_eq: "x0 == x1",
    int_bool.bool_ne: "x0 != x1",
}
# reductions and scans: the compute kernels' combining op
_REDUCTIONS = {
    reductions.float_sum: "sum", reductions.int_sum: "sum",
    reductions.float_prod: "prod", reductions.int_prod: "prod",
    reductions.float_max: "max", reductions.int_max: "max",
    reductions.float_min: "min", reductions.int_min: "min",
}
_ARG_REDUCTIONS = {
    reductions.float_argmax: "max", reductions.int_argmax: "max",
    reductions.float_argmin: "min", reductions.int_argmin: "min",
}
_SCANS = {
    reductions.float_cumsum: "sum", reductions.int_cumsum: "sum",
    reductions.float_cumprod: "prod", reductions.int_cumprod: "prod",
}

_TABLES = ((_FLOAT, None), (_FLOAT_BOOL, _B), (_INT, None), (_INT_BOOL, _B), (_BOOL, None))
#: op name → (WGSL expression over x0, x1, result dtype or None for the input's): what the
#: fused-kernel compiler (:mod:`.fused`) builds kernels from
EXPRESSIONS = {op.name: (expr, out) for table, out in _TABLES for op, expr in table.items()}
for _table, _out in _TABLES:
    for _op, _expr in _table.items():
        WgpuOps.implement(_op, _elementwise(_expr, _out))
for _op, _name in _REDUCTIONS.items():
    WgpuOps.implement(_op, _reduction(_name))
for _op, _name in _ARG_REDUCTIONS.items():
    WgpuOps.implement(_op, _reduction(_name, arg=True))
for _op, _name in _SCANS.items():
    WgpuOps.implement(_op, _scanner(_name))
